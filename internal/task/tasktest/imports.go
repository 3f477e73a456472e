package tasktest

import (
	"reflect"
	"testing"

	"tilecache/internal/task"
)

// testImportJobRoundTrips: an import's job (its archive, its tile set and
// levels) and its one task read back as created, the task typed IMPORT
// in Get, List and Promote, and its tile cursor checkpointed like a lane's.
func testImportJobRoundTrips(t *testing.T, h Harness) {
	s := h.NewStore(t)
	ctx := t.Context()
	want := task.NewImport(task.Header{Layer: "topp:states", Tiles: 1365, Metatiles: 1365, SubmittedBy: "ops"},
		task.Range{GridSetID: "EPSG:900913", Format: "image/png", Parameters: map[string]string{"STYLES": "x"}, ParametersID: "abc",
			ZoomStart: 2, ZoomStop: 5, MetaWidth: 1, MetaHeight: 1, LayerVersion: "v3"},
		task.ImportSource{Archive: "s3://archives/world.mbtiles", Kind: "mbtiles", Version: `"9b2c-3"`, EmptyLevels: []int{4, 5}})
	job, tasks, err := s.Create(ctx, want, []task.Lane{{Start: 0, End: 1365, Tiles: 1365}}, t0)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, err := s.Job(ctx, job.ID)
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	want.ID, want.Lanes, want.Created = job.ID, 1, got.Created
	if got.Type != task.Import || !reflect.DeepEqual(got.ImportSource(), want.ImportSource()) || !reflect.DeepEqual(got.Range(), want.Range()) ||
		got.Tiles != 1365 || got.SubmittedBy != "ops" {
		t.Fatalf("Job read back as %+v (archive %+v), want %+v (archive %+v)", got, got.ImportSource(), want, want.ImportSource())
	}
	if len(tasks) != 1 || tasks[0].Type != task.Import {
		t.Fatalf("created %+v, want one IMPORT task", tasks)
	}
	p := mustPromote(t, s, 1)
	if len(p) != 1 || p[0].Type != task.Import {
		t.Fatalf("promoted %+v, want the IMPORT task", p)
	}
	cp, err := s.Checkpoint(ctx, task.Checkpoint{ID: tasks[0].ID, From: 0, To: 700, Tiles: 700}, t0)
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if cp.Cursor != 700 || cp.Done != 700 || cp.Type != task.Import {
		t.Fatalf("checkpointed %+v", cp)
	}
	listed, err := s.List(ctx, t0)
	if err != nil || len(listed) != 1 || listed[0].Type != task.Import || listed[0].Row() != [5]int64{700, 1365, 665, tasks[0].ID, int64(task.Running)} {
		t.Fatalf("List: %+v, %v", listed, err)
	}
}
