package functions_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBootstrapsLinkOnlyTheirAssembly: each function links its own
// assembly and not what another function needs. The tile origin (internet
// facing, CloudFront's failover origin) links no seed engine, no
// administration interface nor the administration's state (accounts and
// their bcrypt hashes, API tokens, the audit trail, the schedules with
// their cron parser and time zone database), no embedded database, no SQLite
// (the mbtiles sources' driver: the workers read MBTiles) and no
// console or web assets; the log function no administration interface nor
// its state, seed engine or image code; the worker (the engine's
// assembly) and the cleaner (the maintenance's, on the engine's) no
// administration interface, console or embedded database, nor accounts and
// their bcrypt hashes, API tokens, audit trail, nor the authentication
// that reads them; of the administration's state the cleaner links only
// the schedules (it fires them), and the worker not even those: no
// maintenance assembly, schedules' store, cron parser or time zone
// database. A package that comes back is named with the import chain that
// brings it, from the function's main package.
func TestBootstrapsLinkOnlyTheirAssembly(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH: this test lists the bootstraps' packages with it")
	}
	t.Parallel()
	for _, c := range []struct {
		function string
		refused  []string
	}{
		{"tile", []string{"tilecache/internal/seed", "tilecache/internal/rest", "go.etcd.io/bbolt",
			"tilecache/internal/console", "tilecache/internal/web", "tilecache/internal/state/bolt", "modernc.org/sqlite",
			"tilecache/internal/app/backends/admin", "tilecache/internal/state/dynamo/adminstore",
			"tilecache/internal/account", "tilecache/internal/auth", "golang.org/x/crypto/bcrypt", "tilecache/internal/apitoken",
			"tilecache/internal/audit", "tilecache/internal/schedule", "github.com/robfig/cron/v3", "time/tzdata"}},
		{"logs", []string{"tilecache/internal/rest", "tilecache/internal/seed", "tilecache/internal/imaging",
			"tilecache/internal/onmiss", "tilecache/internal/source", "image/png", "image/jpeg", "golang.org/x/image/webp", "golang.org/x/image/tiff",
			"tilecache/internal/app/backends/admin", "tilecache/internal/state/dynamo/adminstore",
			"tilecache/internal/account", "tilecache/internal/auth", "golang.org/x/crypto/bcrypt", "tilecache/internal/apitoken",
			"tilecache/internal/audit", "tilecache/internal/schedule", "github.com/robfig/cron/v3", "time/tzdata"}},
		{"worker", append([]string{"tilecache/internal/app/maintenance", "tilecache/internal/app/backends/scheduling",
			"tilecache/internal/state/dynamo/schedulestore", "tilecache/internal/schedule", "github.com/robfig/cron/v3", "time/tzdata"}, engineRefuses...)},
		{"cleaner", engineRefuses},
	} {
		t.Run(c.function, func(t *testing.T) {
			t.Parallel()
			imports := bootstrapImports(t, "./"+c.function)
			for _, p := range c.refused {
				if chain := importChain(imports, "tilecache/functions/"+c.function, p); chain != nil {
					t.Errorf("the %s function links %s: %s", c.function, p, strings.Join(chain, " -> "))
				}
			}
		})
	}
}

// engineRefuses is what neither the worker nor the cleaner may link.
var engineRefuses = []string{"tilecache/internal/rest", "tilecache/internal/console", "go.etcd.io/bbolt", "tilecache/internal/state/bolt",
	"tilecache/internal/app/backends/admin", "tilecache/internal/state/dynamo/adminstore",
	"tilecache/internal/account", "tilecache/internal/auth", "golang.org/x/crypto/bcrypt", "tilecache/internal/apitoken",
	"tilecache/internal/audit"}

// bootstrapImports returns the imports of every package pkg (a
// function's main package, relative to this directory) links when built
// for Lambda (GOOS=linux), by import path.
func bootstrapImports(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		imports[p.ImportPath] = p.Imports
	}
	return imports
}

// importChain returns the shortest chain of imports from root to target,
// nil when root does not link target.
func importChain(imports map[string][]string, root, target string) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == target {
			var chain []string
			for ; n != ""; n = prev[n] {
				chain = append([]string{n}, chain...)
			}
			return chain
		}
		for _, m := range imports[n] {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
}
