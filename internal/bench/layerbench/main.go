// Command layerbench measures the layer catalogue at scale: what a stored
// configuration of many layers (the REST-managed ones; up to
// layer.MaxStoredConfig, 4 MiB of YAML) costs a process that starts, and
// one that refreshes.
//
//	go run ./internal/bench/layerbench [-layers 8000] [-runs 5] [-backend aws]
//
// For each size (one layer, then -layers) it saves the configuration in a
// fresh store and starts the API program (app.New) and the tile function's
// program (tileorigin.New) in fresh child processes, -runs times each; a child
// prints its start time, the heap it holds after a collection and its
// resident set. Then it measures, in this process, a registry's refresh
// that finds no change (the one read every process makes every
// TILECACHE_LAYERS_REFRESH) and one after a single layer changed, counting
// the store reads each makes. Medians; the overhead of the catalogue is
// the difference between the two sizes. Last, in fresh child processes
// over the large configuration, the API program answers one REST change of
// a layer (GET /rest/layers/{name}.xml, then PUT of the document with a
// new title): the time of the PUT, as API Gateway sees it (29 s at most).
//
// With -backend aws it runs against the stack of `eval "$(make -s devstack)"`
// (a fresh table and queue per size).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/app/backends"
	"tilecache/internal/app/backends/embedded"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/auth"
	"tilecache/internal/bench/benchenv"
	"tilecache/internal/config"
	"tilecache/internal/layer"
)

func main() {
	layers := flag.Int("layers", 8000, "layers in the large stored configuration")
	runs := flag.Int("runs", 5, "cold starts per program and size, and refreshes measured")
	backend := flag.String("backend", "embedded", "embedded or aws")
	child := flag.String("child", "", "internal: start this program (api or tile) once and print its figures; put: PUT one layer through the API program")
	writes := flag.Bool("writes", false, "measure only the refreshes and the changes (no cold starts)")
	putLayer := flag.Int("put", 0, "internal, with -child put: the layer to change")
	flag.Parse()
	if *child == "put" {
		if err := putOnce(*putLayer); err != nil {
			fmt.Fprintln(os.Stderr, "layerbench:", err)
			os.Exit(1)
		}
		return
	}
	if *child != "" {
		if err := startOnce(*child); err != nil {
			fmt.Fprintln(os.Stderr, "layerbench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*layers, *runs, *backend, *writes); err != nil {
		fmt.Fprintln(os.Stderr, "layerbench:", err)
		os.Exit(1)
	}
}

// start is what a child reports.
type start struct {
	Millis  float64 `json:"ms"`
	CPUms   float64 `json:"cpuMs"` // user and system CPU of the whole start
	HeapMiB float64 `json:"heapMiB"`
	RSSMiB  float64 `json:"rssMiB"`
	Layers  int     `json:"layers"`
}

// startOnce builds one program from the environment, as a function's
// bootstrap does at a cold start, and prints its figures as JSON.
func startOnce(which string) error {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t0 := time.Now()
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		return err
	}
	var p interface {
		Close() error
	}
	var reg *layer.Registry
	switch which {
	case "api":
		var a *app.Program
		if a, err = app.New(ctx, cfg, log); err == nil {
			p, reg = a, a.Registry
		}
	case "tile":
		var o *tileorigin.Origin
		if o, err = newTileOrigin(ctx, cfg, log); err == nil {
			p, reg = o, o.Registry
		}
	default:
		return fmt.Errorf("-child %q: api or tile", which)
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(t0)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return fmt.Errorf("getrusage: %w", err)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	runtime.GC()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	s := start{Millis: float64(elapsed.Microseconds()) / 1000, CPUms: ms(cpu), HeapMiB: float64(mem.HeapInuse) / (1 << 20), RSSMiB: benchenv.StatusMiB("VmRSS"),
		Layers: len(reg.Catalogue().Names())}
	defer p.Close()
	return json.NewEncoder(os.Stdout).Encode(s)
}

// size is one size's resources: the program's settings, and the
// clean-up.
type size struct {
	env   map[string]string
	cfg   config.Config
	close func()
}

func run(layers, runs int, backend string, writesOnly bool) error {
	ctx := context.Background()
	doc, err := document(layers)
	if err != nil {
		return err
	}
	small, err := document(1)
	if err != nil {
		return err
	}
	fmt.Printf("stored configuration: %d layers, %d bytes of YAML (limit %d)\n", layers, len(doc), layer.MaxStoredConfig)
	if writesOnly {
		if err := refreshes(ctx, backend, doc, layers, runs); err != nil {
			return err
		}
		return puts(ctx, backend, doc, runs)
	}
	fmt.Printf("%-7s %-6s %12s %12s %12s %12s\n", "layers", "start", "time ms", "CPU ms", "heap MiB", "RSS MiB")
	var rows [][2]start // per program: small, large
	for _, which := range []string{"api", "tile"} {
		var pair [2]start
		for i, d := range [][]byte{small, doc} {
			sz, err := newSize(ctx, backend, d)
			if err != nil {
				return err
			}
			var got []start
			for range runs {
				s, err := childStart(which, sz.env)
				if err != nil {
					sz.close()
					return err
				}
				got = append(got, s)
			}
			sz.close()
			pair[i] = median(got)
			if want := []int{1, layers}[i]; pair[i].Layers < want {
				return fmt.Errorf("%s started with %d layers: the stored configuration of %d did not load (see the program's log)", which, pair[i].Layers, want)
			}
			fmt.Printf("%-7d %-6s %12.1f %12.1f %12.1f %12.1f\n", pair[i].Layers, which, pair[i].Millis, pair[i].CPUms, pair[i].HeapMiB, pair[i].RSSMiB)
		}
		rows = append(rows, pair)
	}
	for i, which := range []string{"api", "tile"} {
		p := rows[i]
		fmt.Printf("catalogue overhead, %s: %+.1f ms start (%+.1f ms CPU), %+.1f MiB heap, %+.1f MiB RSS\n", which,
			p[1].Millis-p[0].Millis, p[1].CPUms-p[0].CPUms, p[1].HeapMiB-p[0].HeapMiB, p[1].RSSMiB-p[0].RSSMiB)
	}
	if err := refreshes(ctx, backend, doc, layers, runs); err != nil {
		return err
	}
	return puts(ctx, backend, doc, runs)
}

// puts measures one REST change of a layer through the API program over
// doc, in a fresh process each time (a layer of its own each run).
func puts(ctx context.Context, backend string, doc []byte, runs int) error {
	sz, err := newSize(ctx, backend, doc)
	if err != nil {
		return err
	}
	defer sz.close()
	var got []time.Duration
	for i := range runs {
		cmd := exec.Command(os.Args[0], "-child", "put", "-put", fmt.Sprint(1+i))
		cmd.Env = os.Environ()
		for k, v := range sz.env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("child put: %w: %s", err, strings.TrimSpace(errb.String()))
		}
		var d float64
		if _, err := fmt.Sscan(out.String(), &d); err != nil {
			return fmt.Errorf("child put printed %q: %w", out.String(), err)
		}
		got = append(got, time.Duration(d*float64(time.Millisecond)))
	}
	fmt.Printf("one REST PUT of one layer (GET its document, PUT it with a new title; the API program over the large configuration): %.1f ms median of %d (%v)\n",
		ms(medianDur(got)), runs, got)
	return nil
}

// putOnce builds the API program, reads layer i's document through the
// REST interface and puts it back with a new title, and prints the PUT's
// time in milliseconds.
func putOnce(i int) error {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		return err
	}
	p, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer p.Close()
	path := fmt.Sprintf("%s/rest/layers/bench:l%05d.xml", cfg.BasePath, i)
	do := func(method string, body []byte) (*httptest.ResponseRecorder, error) {
		req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
		req.SetBasicAuth("bench", "bench")
		if body != nil {
			req.Header.Set("Content-Type", "application/xml")
		}
		rec := httptest.NewRecorder()
		p.Handler.ServeHTTP(rec, req)
		if rec.Code/100 != 2 {
			return nil, fmt.Errorf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
		}
		return rec, nil
	}
	got, err := do("GET", nil)
	if err != nil {
		return err
	}
	doc := got.Body.Bytes()
	title := fmt.Sprintf("Layer %d", i)
	if !bytes.Contains(doc, []byte("<title>"+title+"</title>")) {
		return fmt.Errorf("GET %s: no title %q in\n%s", path, title, doc)
	}
	doc = bytes.Replace(doc, []byte("<title>"+title+"</title>"), []byte("<title>Changed</title>"), 1)
	t := time.Now()
	if _, err := do("PUT", doc); err != nil {
		return err
	}
	fmt.Println(ms(time.Since(t)))
	return nil
}

// refreshes measures a registry over the large configuration: a refresh
// that finds no change, and one after a single layer changed.
func refreshes(ctx context.Context, backend string, doc []byte, layers, runs int) error {
	sz, err := newSize(ctx, backend, doc)
	if err != nil {
		return err
	}
	defer sz.close()
	return withStore(ctx, sz.cfg, func(store layer.ConfigStore) error { return refreshOf(ctx, store, layers, runs) })
}

func refreshOf(ctx context.Context, store layer.ConfigStore, layers, runs int) error {
	st := &counting{ConfigStore: store}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg, err := layer.OpenRegistry(ctx, nil, "", st, time.Hour, log)
	if err != nil {
		return err
	}
	if n := len(reg.Catalogue().Names()); n != layers {
		return fmt.Errorf("the registry holds %d layers, want %d", n, layers)
	}
	var same []time.Duration
	v0, f0 := st.versions.Load(), st.full.Load()
	for range runs * 10 {
		t := time.Now()
		changed, err := reg.Sync(ctx)
		if err != nil {
			return err
		}
		if changed {
			return fmt.Errorf("a refresh without a change reported one")
		}
		same = append(same, time.Since(t))
	}
	n := int64(runs * 10)
	fmt.Printf("refresh, no change: %.2f ms median; per refresh %.1f version reads, %.1f configuration reads\n",
		ms(medianDur(same)), float64(st.versions.Load()-v0)/float64(n), float64(st.full.Load()-f0)/float64(n))

	var changed []time.Duration
	v0, f0 = st.versions.Load(), st.full.Load()
	for i := range runs {
		cur, err := store.Config(ctx)
		if err != nil {
			return err
		}
		c, err := layer.ParseConfig(cur.Doc)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("bench:l%05d", i)
		if _, err := c.PutLayer(name, entry(i, fmt.Sprintf("changed %d", i))); err != nil {
			return err
		}
		b, err := c.Bytes()
		if err != nil {
			return err
		}
		if _, err := store.SaveConfig(ctx, cur.Version, b); err != nil {
			return err
		}
		t := time.Now()
		ok, err := reg.Sync(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("a refresh after a change found none")
		}
		changed = append(changed, time.Since(t))
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	runtime.KeepAlive(reg) // the heap in use is the registry's
	fmt.Printf("refresh after one layer changed: %.1f ms median; per refresh %.1f version reads, %.1f configuration reads; heap in use after: %.1f MiB\n",
		ms(medianDur(changed)), float64(st.versions.Load()-v0)/float64(runs), float64(st.full.Load()-f0)/float64(runs), float64(m.HeapInuse)/(1<<20))
	// A change of one layer as the REST interface makes it (its checks
	// read the whole configuration).
	var writes []time.Duration
	for i := range runs {
		t := time.Now()
		if _, err := reg.Update(ctx, func(doc *layer.Config, _ *layer.Catalogue) error {
			_, err := doc.PutLayer(fmt.Sprintf("bench:l%05d", i), entry(i, fmt.Sprintf("written %d", i)))
			return err
		}); err != nil {
			return err
		}
		writes = append(writes, time.Since(t))
	}
	fmt.Printf("a change of one layer (Registry.Update, as PUT /rest/layers/{name}): %.1f ms median\n", ms(medianDur(writes)))
	return nil
}

// newSize makes the resources of one size, with doc stored.
func newSize(ctx context.Context, backend string, doc []byte) (size, error) {
	dir, err := os.MkdirTemp("", "layerbench-")
	if err != nil {
		return size{}, err
	}
	sz := size{env: map[string]string{"TILECACHE_DATA": dir, "TILECACHE_USERS": filepath.Join(dir, "users")},
		close: func() { os.RemoveAll(dir) }}
	if err := auth.AddAccount(sz.env["TILECACHE_USERS"], "bench", "bench", bcrypt.MinCost); err != nil {
		sz.close()
		return size{}, err
	}
	if backend == "aws" {
		cleanup, err := benchenv.AWSResources("layerbench", sz.env)
		if err != nil {
			sz.close()
			return size{}, err
		}
		sz.close = func() { cleanup(); os.RemoveAll(dir) }
	}
	sz.cfg, err = config.Load(func(k string) (string, bool) {
		if v, ok := sz.env[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	})
	if err == nil {
		err = withStore(ctx, sz.cfg, func(st layer.ConfigStore) error {
			_, err := st.SaveConfig(ctx, 0, doc)
			return err
		})
	}
	if err != nil {
		sz.close()
		return size{}, fmt.Errorf("store the configuration: %w", err)
	}
	return sz, nil
}

// newTileOrigin builds the tile function's program on cfg's backends: the
// tile bucket and task table, or the embedded ones.
func newTileOrigin(ctx context.Context, cfg config.Config, log *slog.Logger) (*tileorigin.Origin, error) {
	if cfg.Backend == "aws" {
		return tileorigin.New(ctx, tileorigin.Of(cfg), log)
	}
	return tileorigin.NewWith(ctx, tileorigin.Of(cfg), func(context.Context) (backends.Backends, error) { return embedded.Open(cfg.DataDir) }, log)
}

// withStore opens cfg's backends, calls f with its configuration store and
// closes them: the embedded store is one file that one process holds, so
// the children open it only after this one lets go.
func withStore(ctx context.Context, cfg config.Config, f func(layer.ConfigStore) error) error {
	var b backends.Backends
	var err error
	if cfg.Backend == "aws" {
		a, aerr := app.AWSBackends(ctx, cfg)
		b, err = a.Backends.Backends, aerr
	} else {
		b, err = embedded.Open(cfg.DataDir)
	}
	if err != nil {
		return err
	}
	ferr := f(b.Config)
	if b.Close != nil {
		return errors.Join(ferr, b.Close())
	}
	return ferr
}

// childStart runs one cold start of which in a child process.
func childStart(which string, env map[string]string) (start, error) {
	cmd := exec.Command(os.Args[0], "-child", which)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return start{}, fmt.Errorf("child %s: %w: %s", which, err, strings.TrimSpace(errb.String()))
	}
	var s start
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return start{}, fmt.Errorf("child %s printed %q: %w", which, out.String(), err)
	}
	return s, nil
}

// document is a stored configuration of n layers, each with a WMS source,
// two grid subsets and parameter filters, as REST-managed layers are.
func document(n int) ([]byte, error) {
	c, err := layer.ParseConfig(nil)
	if err != nil {
		return nil, err
	}
	for i := range n {
		if _, err := c.PutLayer(fmt.Sprintf("bench:l%05d", i), entry(i, "")); err != nil {
			return nil, err
		}
	}
	return c.Bytes()
}

// entry is layer i's YAML entry; title distinguishes a changed one.
func entry(i int, title string) []byte {
	if title == "" {
		title = fmt.Sprintf("Layer %d", i)
	}
	x, y := float64(i%360)-180, float64(i%170)-85
	return fmt.Appendf(nil, `name: bench:l%05d
title: %q
gridSubsets:
  - gridSet: EPSG:4326
    extent: [%g, %g, %g, %g]
    zoomStop: %d
  - gridSet: EPSG:900913
formats: [image/png, image/jpeg]
metatiling: [4, 4]
expireCache: %d
parameterFilters:
  - {key: STYLES, default: "", values: ["", style%d]}
source:
  type: wms
  url: https://maps%d.example.org/wms?map=area%d
  layers: roads%d,buildings%d,water
  maxConcurrent: %d
`, i, title, x, y, x+1, y+1, 10+i%8, 3600+i, i, i%16, i, i, i, 4+i%4)
}

// counting counts the reads of a ConfigStore.
type counting struct {
	layer.ConfigStore
	versions, full atomic.Int64
}

func (c *counting) Config(ctx context.Context) (layer.StoredConfig, error) {
	c.full.Add(1)
	return c.ConfigStore.Config(ctx)
}

func (c *counting) ConfigVersion(ctx context.Context) (int64, error) {
	c.versions.Add(1)
	return c.ConfigStore.ConfigVersion(ctx)
}

func median(s []start) start {
	pick := func(f func(start) float64) float64 {
		v := make([]float64, len(s))
		for i := range s {
			v[i] = f(s[i])
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return start{Millis: pick(func(x start) float64 { return x.Millis }), CPUms: pick(func(x start) float64 { return x.CPUms }), HeapMiB: pick(func(x start) float64 { return x.HeapMiB }),
		RSSMiB: pick(func(x start) float64 { return x.RSSMiB }), Layers: s[0].Layers}
}

func medianDur(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
