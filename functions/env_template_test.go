package functions_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/app/logingest"
	"tilecache/internal/app/maintenance"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/app/worker"
	"tilecache/internal/config"
)

// TestTemplateGivesEachFunctionOnlyItsOwnVariables: every TILECACHE_
// variable template.yaml gives a function (Globals merged with its own)
// is one that function's configuration reads, as its bootstrap loads it
// (functions/*/main.go): no function carries another's settings.
func TestTemplateGivesEachFunctionOnlyItsOwnVariables(t *testing.T) {
	tp := loadTemplate(t)
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	loads := map[string]func(config.Lookup) error{
		"ApiFunction":     func(l config.Lookup) error { _, err := config.Load(l); return err },
		"WorkerFunction":  func(l config.Lookup) error { _, err := worker.Load(l); return err },
		"CleanerFunction": func(l config.Lookup) error { _, err := maintenance.Load(l); return err },
		"TileFunction":    func(l config.Lookup) error { _, err := tileorigin.Load(l); return err },
		"LogsFunction":    func(l config.Lookup) error { _, err := logingest.Load(l); return err },
	}
	for fn, load := range loads {
		vals := map[string]string{}
		for name, n := range tp.env(fn) {
			v, err := w.eval(n)
			if err != nil {
				t.Fatalf("%s %s: %v", fn, name, err)
			}
			vals[name] = fmt.Sprint(v)
		}
		read := map[string]bool{}
		lookup := func(k string) (string, bool) { read[k] = true; v, ok := vals[k]; return v, ok }
		// lambdamain.Run reads the log level for every function, then the
		// function's own configuration.
		_, lerr := config.Read[config.Log](lookup)
		err := errors.Join(lerr, load(lookup))
		if err != nil {
			t.Errorf("%s: its environment does not load: %v", fn, err)
		}
		var extra []string
		for name := range vals {
			if strings.HasPrefix(name, "TILECACHE_") && !read[name] {
				extra = append(extra, name)
			}
		}
		slices.Sort(extra)
		if len(extra) > 0 {
			t.Errorf("%s is given %s, which it never reads", fn, strings.Join(extra, ", "))
		}
	}
}

// TestWorkerReadsNoMaintenanceVariables: the worker's configuration
// (worker.Load, WorkerFunction's) reads none of the variables only the
// maintenance uses (maintenance.Load, CleanerFunction's): the edge's
// key-value store and the tile token keys written into it. The cleaner's
// reads all of the worker's, on whose program it builds.
func TestWorkerReadsNoMaintenanceVariables(t *testing.T) {
	reads := func(load func(config.Lookup) error) map[string]bool {
		read := map[string]bool{}
		if err := load(func(k string) (string, bool) { read[k] = true; return "", false }); err != nil {
			t.Fatal(err)
		}
		return read
	}
	workerReads := reads(func(l config.Lookup) error { _, err := worker.Load(l); return err })
	cleanerReads := reads(func(l config.Lookup) error { _, err := maintenance.Load(l); return err })
	for _, name := range []string{"TILECACHE_EDGE_KVS_ARN", "TILECACHE_TILE_TOKEN_KEYS", "TILECACHE_TILE_TOKEN_KEYS_SECRET"} {
		if workerReads[name] {
			t.Errorf("the worker's configuration reads %s, the maintenance's", name)
		}
		if !cleanerReads[name] {
			t.Errorf("the maintenance's configuration does not read %s", name)
		}
	}
	for name := range workerReads {
		if !cleanerReads[name] {
			t.Errorf("the maintenance's configuration does not read %s, which the worker's program it builds on reads", name)
		}
	}
}
