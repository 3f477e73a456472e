package task_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"tilecache/internal/task"
)

// Jobs as the stores hold them (bbolt's value, DynamoDB's data
// attribute): the flat JSON document of one struct with every field,
// written before jobs had kinds, one of each kind.
const (
	storedSeed     = `{"id":41,"layer":"topp:states","type":0,"gridSet":"EPSG:4326","format":"image/png","parameters":{"STYLES":"polygon"},"parametersId":"5d41402abc4b2a76b9719d911017c592","bounds":[-124.7,24.5,-66.9,49.4],"zoomStart":0,"zoomStop":6,"metaWidth":4,"metaHeight":4,"metatiles":120,"tiles":1500,"lanes":2,"order":"columns","emptyLevels":[5,6],"area":"areas/0a1b2c.json","retryCount":2,"retryWaitMs":250,"maxFailures":10,"created":"2026-11-30T08:15:00Z","layerVersion":"v7","definition":"name: topp:states\n"}`
	storedReseed   = `{"id":50,"layer":"topp:states","type":1,"gridSet":"EPSG:900913","format":"image/jpeg","parametersId":"default","bounds":[0,0,1000,1000],"zoomStart":2,"zoomStop":3,"metaWidth":4,"metaHeight":4,"metatiles":8,"tiles":80,"lanes":1,"order":"columns","retryCount":-1,"retryWaitMs":100,"maxFailures":1000,"created":"2026-11-30T08:15:00Z"}`
	storedTruncate = `{"id":60,"layer":"topp:states","type":2,"gridSet":"EPSG:4326","format":"image/png","parametersId":"default","bounds":[-180,-90,180,90],"zoomStart":0,"zoomStop":2,"metaWidth":4,"metaHeight":4,"metatiles":6,"tiles":30,"lanes":1,"order":"columns","retryCount":-1,"retryWaitMs":100,"maxFailures":1000,"created":"2026-11-30T08:15:00Z"}`
	storedDeletion = `{"id":70,"layer":"gone:layer","type":2,"gridSet":"","format":"","parametersId":"","bounds":[0,0,0,0],"zoomStart":0,"zoomStop":0,"metaWidth":0,"metaHeight":0,"metatiles":12,"tiles":12,"lanes":1,"retryCount":-1,"retryWaitMs":0,"maxFailures":1,"created":"2026-11-30T08:15:00Z","prefix":"tiles/gone:layer/"}`
)

var created = time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC)

func decode(t *testing.T, doc string) task.Job {
	t.Helper()
	var j task.Job
	if err := json.Unmarshal([]byte(doc), &j); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	return j
}

// TestStoredJobsDecode: a job stored before jobs had kinds decodes to its
// kind, every field of that kind kept; the fields a kind lacks are left.
func TestStoredJobsDecode(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      task.Job
	}{
		{"seed", storedSeed, task.NewSeed(
			task.Header{ID: 41, Layer: "topp:states", Metatiles: 120, Tiles: 1500, Lanes: 2, Created: created},
			task.Range{GridSetID: "EPSG:4326", Format: "image/png", Parameters: map[string]string{"STYLES": "polygon"},
				ParametersID: "5d41402abc4b2a76b9719d911017c592", Bounds: [4]float64{-124.7, 24.5, -66.9, 49.4},
				ZoomStart: 0, ZoomStop: 6, MetaWidth: 4, MetaHeight: 4, Order: "columns", Area: "areas/0a1b2c.json",
				LayerVersion: "v7", Definition: "name: topp:states\n"},
			task.Render{RetryCount: 2, RetryWaitMS: 250, MaxFailures: 10, EmptyLevels: []int{5, 6}})},
		{"reseed", storedReseed, task.NewReseed(
			task.Header{ID: 50, Layer: "topp:states", Metatiles: 8, Tiles: 80, Lanes: 1, Created: created},
			task.Range{GridSetID: "EPSG:900913", Format: "image/jpeg", ParametersID: "default", Bounds: [4]float64{0, 0, 1000, 1000},
				ZoomStart: 2, ZoomStop: 3, MetaWidth: 4, MetaHeight: 4, Order: "columns"},
			task.Render{RetryCount: -1, RetryWaitMS: 100, MaxFailures: 1000})},
		{"truncate", storedTruncate, task.NewTruncate(
			task.Header{ID: 60, Layer: "topp:states", Metatiles: 6, Tiles: 30, Lanes: 1, Created: created},
			task.Range{GridSetID: "EPSG:4326", Format: "image/png", ParametersID: "default", Bounds: [4]float64{-180, -90, 180, 90},
				ZoomStart: 0, ZoomStop: 2, MetaWidth: 4, MetaHeight: 4, Order: "columns"})},
		{"layer deletion", storedDeletion, task.NewLayerDeletion(
			task.Header{ID: 70, Layer: "gone:layer", Metatiles: 12, Tiles: 12, Lanes: 1, Created: created}, "tiles/gone:layer/")},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := decode(t, c.doc)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("decoded\n%+v\nwant\n%+v", got, c.want)
			}
			if got.Type != c.want.Type || got.LayerDeletion() != (c.name == "layer deletion") {
				t.Errorf("type %v, layer deletion %v", got.Type, got.LayerDeletion())
			}
		})
	}
	// The kinds' parts: a truncate renders nothing, a layer deletion has
	// no tile range.
	if r := decode(t, storedTruncate).Render(); !reflect.DeepEqual(r, task.Render{}) {
		t.Errorf("a truncate's render part is %+v, want none", r)
	}
	if d := decode(t, storedDeletion); d.Range().GridSetID != "" || d.Render().MaxFailures != 0 || d.Prefix() != "tiles/gone:layer/" {
		t.Errorf("a layer deletion decoded as %+v", d)
	}
}

// TestJobDocumentUnchanged: a seed or reseed is written as it was before
// jobs had kinds, byte for byte, and every kind reads back as written.
func TestJobDocumentUnchanged(t *testing.T) {
	// A request's submitter (recorded since): kept as the last field.
	submitted := storedReseed[:len(storedReseed)-1] + `,"submittedBy":"alice"}`
	if j := decode(t, submitted); j.SubmittedBy != "alice" {
		t.Errorf("submittedBy read as %q, want alice", j.SubmittedBy)
	}
	for _, doc := range []string{storedSeed, storedReseed, submitted} {
		out, err := json.Marshal(decode(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != doc {
			t.Errorf("wrote\n%s\nwant\n%s", out, doc)
		}
	}
	for _, doc := range []string{storedTruncate, storedDeletion} {
		j := decode(t, doc)
		out, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		if again := decode(t, string(out)); !reflect.DeepEqual(again, j) {
			t.Errorf("%s read back as %+v, want %+v", out, again, j)
		}
	}
}

// TestJobKinds: the constructors give each kind its parts only.
func TestJobKinds(t *testing.T) {
	h := task.Header{Layer: "l", Type: task.Truncate}
	r := task.Range{GridSetID: "EPSG:4326"}
	rd := task.Render{RetryCount: 3, EmptyLevels: []int{1}}
	if j := task.NewSeed(h, r, rd); j.Type != task.Seed || !reflect.DeepEqual(j.Render(), rd) || j.Range().GridSetID != r.GridSetID {
		t.Errorf("seed: %+v", j)
	}
	if j := task.NewReseed(h, r, rd); j.Type != task.Reseed || j.Render().EmptyLevels != nil || j.Render().RetryCount != 3 {
		t.Errorf("reseed: %+v, want no empty levels", j)
	}
	if j := task.NewTruncate(h, r).WithEmptyLevels([]int{2}); j.Type != task.Truncate || j.Render().EmptyLevels != nil || j.LayerDeletion() {
		t.Errorf("truncate: %+v", j)
	}
	if j := task.NewLayerDeletion(task.Header{Layer: "l"}, "p/").WithEmptyLevels([]int{2}); j.Type != task.Truncate || !j.LayerDeletion() ||
		j.Prefix() != "p/" || j.Render().EmptyLevels != nil {
		t.Errorf("layer deletion: %+v", j)
	}
	if j := task.NewSeed(h, r, task.Render{}).WithEmptyLevels([]int{4, 5}); !reflect.DeepEqual(j.Render().EmptyLevels, []int{4, 5}) {
		t.Errorf("seed with empty levels: %+v", j)
	}
}

// storedExport is an export job as the stores hold it: the flat document
// of the other kinds, its archive kind in "archive".
const storedExport = `{"id":80,"layer":"topp:states","type":3,"gridSet":"EPSG:900913","format":"image/png","parametersId":"default","bounds":[-20037508.34,-20037508.34,20037508.34,20037508.34],"zoomStart":0,"zoomStop":4,"metaWidth":4,"metaHeight":4,"metatiles":9,"tiles":341,"lanes":1,"order":"columns","retryCount":0,"retryWaitMs":0,"maxFailures":0,"created":"2026-11-30T08:15:00Z","layerVersion":"v7","submittedBy":"alice","archive":"pmtiles"}`

// TestExportJob: an export decodes to its kind (EXPORT, its archive, its
// range, no render part) and is written back byte for byte.
func TestExportJob(t *testing.T) {
	j := decode(t, storedExport)
	want := task.NewExport(task.Header{ID: 80, Layer: "topp:states", Metatiles: 9, Tiles: 341, Lanes: 1, Created: created, SubmittedBy: "alice"},
		task.Range{GridSetID: "EPSG:900913", Format: "image/png", ParametersID: "default",
			Bounds:    [4]float64{-20037508.34, -20037508.34, 20037508.34, 20037508.34},
			ZoomStart: 0, ZoomStop: 4, MetaWidth: 4, MetaHeight: 4, Order: "columns", LayerVersion: "v7"}, "pmtiles")
	if !reflect.DeepEqual(j, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", j, want)
	}
	if j.Type != task.Export || j.Type.String() != "EXPORT" || j.Archive() != "pmtiles" || j.LayerDeletion() {
		t.Errorf("type %v (%s), archive %q, layer deletion %v", j.Type, j.Type, j.Archive(), j.LayerDeletion())
	}
	if r := j.WithEmptyLevels([]int{1}).Render(); !reflect.DeepEqual(r, task.Render{}) {
		t.Errorf("an export's render part is %+v, want none", r)
	}
	out, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != storedExport {
		t.Errorf("wrote\n%s\nwant\n%s", out, storedExport)
	}
	if a := task.NewSeed(task.Header{}, task.Range{}, task.Render{}).Archive(); a != "" {
		t.Errorf("a seed's archive is %q, want none", a)
	}
	if j.Published() {
		t.Error("an export without publish decoded as published")
	}
	// A published export: the tile set's PMTiles, written back as read.
	published := strings.Replace(storedExport, `"archive":"pmtiles"`, `"archive":"pmtiles","publish":true`, 1)
	p := decode(t, published)
	if !p.Published() || p.Archive() != "pmtiles" || p.Type != task.Export || !reflect.DeepEqual(p.Range(), want.Range()) {
		t.Errorf("a published export decoded as %+v (published %v)", p, p.Published())
	}
	if out, err := json.Marshal(p); err != nil || string(out) != published {
		t.Errorf("wrote\n%s\nwant\n%s (%v)", out, published, err)
	}
}

// TestImportJob: an import keeps its archive and tile set through the
// stored document, typed IMPORT (4: 3 is an export's), and has no render
// part or prefix.
func TestImportJob(t *testing.T) {
	j := task.NewImport(task.Header{ID: 80, Layer: "l", Tiles: 21, Metatiles: 21, Lanes: 1, Created: created, Type: task.Seed},
		task.Range{GridSetID: "EPSG:900913", Format: "image/png", ParametersID: "default", ZoomStart: 0, ZoomStop: 2},
		task.ImportSource{Archive: "s3://b/world.pmtiles", Kind: "pmtiles", Version: `"e7a1"`, EmptyLevels: []int{1, 2}})
	if j.Type != task.Import || int(task.Import) != 4 || task.Import.String() != "IMPORT" || j.LayerDeletion() {
		t.Fatalf("import: %+v (%s)", j, j.Type)
	}
	out, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	again := decode(t, string(out))
	if !reflect.DeepEqual(again, j) {
		t.Errorf("%s read back as %+v, want %+v", out, again, j)
	}
	if _, ok := task.ParseType("import"); ok {
		t.Error("a seed request may not ask for an import")
	}
	if j := task.NewSeed(task.Header{}, task.Range{}, task.Render{}); !reflect.DeepEqual(j.ImportSource(), task.ImportSource{}) {
		t.Errorf("a seed has an import source: %+v", j.ImportSource())
	}
}
