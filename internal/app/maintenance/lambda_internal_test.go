package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/app/backends/embedded"
	"tilecache/internal/app/backends/scheduling"
	"tilecache/internal/config"
	"tilecache/internal/layer"
	"tilecache/internal/schedule"
)

func TestRecountRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		detail string
		layers []string
		ok     bool
	}{
		{``, nil, false},
		{`{}`, nil, false},
		{`{"recount":false}`, nil, false},
		{`{"recount":true}`, nil, true},
		{`{"recount":["a","b:c"]}`, []string{"a", "b:c"}, true},
		{`{"recount":[]}`, nil, false},
		{`{"recount":"yes"}`, nil, false},
		{`not json`, nil, false},
	}
	for _, tt := range tests {
		layers, ok := recountRequest(json.RawMessage(tt.detail))
		if ok != tt.ok || !slices.Equal(layers, tt.layers) {
			t.Errorf("recountRequest(%s): got %v, %v; want %v, %v", tt.detail, layers, ok, tt.layers, tt.ok)
		}
	}
}

// memKV is the edge path function's key-value store in memory: no
// emulator here serves CloudFront's KeyValueStore API (the adapter is
// tested against a fake of its wire protocol in internal/cdn/cloudfront).
type memKV struct {
	values  map[string]string
	version int
}

func (m *memKV) Read(context.Context) (map[string]string, string, error) {
	return maps.Clone(m.values), strconv.Itoa(m.version), nil
}

func (m *memKV) Write(_ context.Context, version string, put map[string]string, del []string) error {
	if version != strconv.Itoa(m.version) {
		return fmt.Errorf("version %s, not %d", version, m.version)
	}
	maps.Copy(m.values, put)
	for _, k := range del {
		delete(m.values, k)
	}
	m.version++
	return nil
}

// TestScheduleSyncsEdgeAfterALayerChange: the cleaner's invocation writes
// the edge function's grid sets after a cold start, and again when it sees
// a new layer configuration (a grid set added through the REST interface
// in another process is mapped at the edge within a minute).
func TestScheduleSyncsEdgeAfterALayerChange(t *testing.T) {
	t.Parallel()
	// In a bubble: the program keeps its time in process (a directory and
	// bbolt), so the refresh period passes on the bubble's clock.
	synctest.Test(t, func(t *testing.T) {
		p := newTestProgram(t, map[string]string{"TILECACHE_LAYERS_REFRESH": "1ms"})
		kv := &memKV{values: map[string]string{}}
		p.edge = kv
		if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
			t.Fatal(err)
		}
		has := func(part string) bool {
			for k := range kv.values {
				if strings.Contains(k, part) {
					return true
				}
			}
			return false
		}
		if !has("EPSG:4326") || has("Quarter") {
			t.Fatalf("after a cold start the edge holds %v", kv.values)
		}
		// Another registry on the same store (another process) adds a grid set
		// and a layer that uses it.
		other, err := layer.OpenRegistry(t.Context(), nil, "none", p.Config, time.Hour, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
			if _, err := doc.PutGridSet("Quarter", []byte("id: Quarter\nepsg: 4326\nextent: [-180, -90, 180, 90]\ntileWidth: 512\ntileHeight: 512\nresolutions: [0.3515625, 0.17578125]\n")); err != nil {
				return err
			}
			_, err := doc.PutLayer("q", []byte("name: q\ngridSubsets: [{gridSet: Quarter}]\nformats: [image/png]\nsource: {type: testpattern}\n"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		before := kv.version
		time.Sleep(5 * time.Millisecond) // virtual: the refresh period (1 ms) passes
		if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
			t.Fatal(err)
		}
		if !has("Quarter") || kv.version != before+1 {
			t.Errorf("after the change the edge holds %v (written %d times since)", kv.values, kv.version-before)
		}
		// Nothing changed: nothing written.
		if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
			t.Fatal(err)
		}
		if kv.version != before+1 {
			t.Errorf("an invocation without a change wrote the edge")
		}
	})
}

// TestRunJobsIsolatesFailures: a job that fails or panics is named in the
// error and logged, and the jobs after it still run.
func TestRunJobsIsolatesFailures(t *testing.T) {
	t.Parallel()
	var ran []string
	record := func(name string, err error) job {
		return job{name, func(context.Context) error { ran = append(ran, name); return err }}
	}
	err := runJobs(t.Context(), slog.New(slog.DiscardHandler), []job{
		record("first", nil),
		{"panics", func(context.Context) error { ran = append(ran, "panics"); panic("out of bounds") }},
		record("fails", fmt.Errorf("table gone")),
		record("last", nil),
	})
	if !slices.Equal(ran, []string{"first", "panics", "fails", "last"}) {
		t.Errorf("ran %v, want every job", ran)
	}
	if err == nil || !strings.Contains(err.Error(), "panics: panic: out of bounds") || !strings.Contains(err.Error(), "fails: table gone") {
		t.Errorf("error %v, want both failures named", err)
	}
}

// failingRuns is a schedule store whose due times cannot be read.
type failingRuns struct{ schedule.Store }

func (failingRuns) NextRuns(context.Context) ([]schedule.NextRun, []schedule.Unreadable, error) {
	return nil, nil, errors.New("schedule table unreachable")
}

// TestHandleScheduleRunsEveryJobPastAFailure: in a real invocation of the
// cleaner, a job that fails (the schedules', its store unreachable) is
// named in the invocation's error, and the jobs after it (the quota
// clean-up, the documents, the edge's grid sets) still run.
func TestHandleScheduleRunsEveryJobPastAFailure(t *testing.T) {
	t.Parallel()
	p := newTestProgram(t, nil)
	p.Schedules = schedule.NewTicker(failingRuns{p.Backends.Schedules}, p.Tasks, ScheduledRequests{Submitter: p.Engine.Control}, slog.New(slog.DiscardHandler))
	err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{})
	if err == nil || !strings.Contains(err.Error(), "schedules: ") || !strings.Contains(err.Error(), "schedule table unreachable") {
		t.Errorf("HandleSchedule: %v, want the schedules job's failure named", err)
	}
	if !p.published {
		t.Error("the documents were not published after the schedules job failed")
	}
	if p.edgeVersion != p.Registry.Catalogue().Version() {
		t.Error("the edge's grid sets were not synced after the schedules job failed")
	}
}

// TestMaintenanceJobsPublishLast: the cleaner sweeps, fires schedules and
// cleans up before it publishes the tile store's documents (which read
// what upstreams answered), and the publication is bounded in time.
func TestMaintenanceJobsPublishLast(t *testing.T) {
	t.Parallel()
	p := newTestProgram(t, nil)
	var names []string
	for _, j := range p.maintenanceJobs(events.EventBridgeEvent{Detail: json.RawMessage(`{"recount":true}`)}) {
		names = append(names, j.name)
	}
	if want := []string{"sweep", "schedules", "recount", "quota clean-up", "publish", "edge sync"}; !slices.Equal(names, want) {
		t.Errorf("jobs %v, want %v", names, want)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	bounded, stop := boundedBy(ctx, publishBudget)
	defer stop()
	if dl, ok := bounded.Deadline(); !ok || time.Until(dl) > publishBudget {
		t.Errorf("publication deadline %v, want within %v", dl, publishBudget)
	}
	short, cancelShort := context.WithTimeout(t.Context(), 5*time.Second) // less than the flush's budget left
	defer cancelShort()
	if b, stop := boundedBy(short, publishBudget); b.Err() == nil {
		stop()
		t.Error("a publication with no time left after the CDN flush's budget was not cut short")
	} else {
		stop()
	}
	if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if !p.published {
		t.Error("the documents were not published")
	}
}

// TestScheduleSyncsPrivateLayersAndKeysToTheEdge: the cleaner writes the
// private layers' ids and the tile token keys into the edge's store beside
// the grid sets (/private/{id}, /key/{kid}), and a layer made private at
// run time reaches it at the next invocation.
func TestScheduleSyncsPrivateLayersAndKeysToTheEdge(t *testing.T) {
	t.Parallel()
	keys := "k2:" + strings.Repeat("2", 43) + ",k1:" + strings.Repeat("1", 43)
	p := newTestProgram(t, map[string]string{"TILECACHE_LAYERS_REFRESH": "1ms", "TILECACHE_TILE_TOKEN_KEYS": keys})
	kv := &memKV{values: map[string]string{}}
	p.edge = kv
	if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if kv.values["/key/k2"] != strings.Repeat("2", 43) || kv.values["/key/k1"] != strings.Repeat("1", 43) {
		t.Errorf("after a cold start the edge holds %v, want the keys k1 and k2", kv.values)
	}
	for k := range kv.values {
		if strings.HasPrefix(k, "/private/") {
			t.Errorf("no layer is private, the edge holds %s", k)
		}
	}
	other, err := layer.OpenRegistry(t.Context(), nil, "none", p.Config, time.Hour, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("secret", []byte("name: secret\nid: s1\nprivate: true\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Registry.Sync(t.Context()); err != nil { // this process learns of the change
		t.Fatal(err)
	}
	if err := p.HandleSchedule(t.Context(), events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	if kv.values["/private/s1"] != "1" || kv.values["EPSG:4326"] == "" {
		t.Errorf("after the private layer was added the edge holds %v", kv.values)
	}
}

// newTestProgram builds the maintenance's program (what the cleaner
// function runs) on the embedded backends in a directory of the test's own, with
// env besides; it is closed when the test ends.
func newTestProgram(t *testing.T, env map[string]string) *Program {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Load(func(k string) (string, bool) {
		if k == "TILECACHE_DATA" {
			return dir, true
		}
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(t.Context(), Of(cfg), func(context.Context) (scheduling.Backends, error) {
		b, err := embedded.OpenAdmin(cfg.DataDir)
		return b.Backends, err
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
