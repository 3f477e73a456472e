// Command probebench runs the hostile-upstream probes of the hardening
// round against a `tilecache serve` binary (embedded backends), each in a
// process of its own, and prints per probe the answer, the time it took,
// the server's peak RSS (VmHWM) and its RSS after, and what it wrote:
//
//   - mvt-miss: one anonymous GET of a missing tile of a render-on-miss
//     Mapbox Vector Tile layer (4×4 metatiles) whose XYZ upstream answers
//     every tile with a 16.66 MB MVT of 1,190,000 tiny layers (under the
//     16 MiB size limit);
//   - mvt-seed: a seed of level 0 of the same upstream (1×1), then the
//     size of the TileJSON documents published for it;
//   - geojson-miss: the GeoJSON tile of the same kind: 16 MiB of features,
//     each with property keys of its own.
//
// The upstream runs in this process on 127.0.0.1 (the server is started
// with TILECACHE_UPSTREAM_ALLOW=127.0.0.0/8). Every probe is bounded in
// time (-timeout) and the server is killed after it.
//
//	go run ./internal/bench/probebench -bin bin/tilecache [-bin old/tilecache ...] [-probes mvt-miss,mvt-seed,geojson-miss]
//
// Several -bin flags run the probes of each binary one after the other,
// for a before → after table in one sitting.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type binFlags []string

func (b *binFlags) String() string     { return strings.Join(*b, ",") }
func (b *binFlags) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	var bins binFlags
	flag.Var(&bins, "bin", "a tilecache binary to probe (repeatable)")
	probes := flag.String("probes", "mvt-miss,mvt-seed,geojson-miss", "the probes to run, comma-separated")
	timeout := flag.Duration("timeout", 90*time.Second, "bound of one probe's request or seed")
	flag.Parse()
	if len(bins) == 0 {
		fmt.Fprintln(os.Stderr, "probebench: -bin is required")
		os.Exit(2)
	}
	up, err := startUpstream()
	if err != nil {
		fmt.Fprintln(os.Stderr, "probebench:", err)
		os.Exit(1)
	}
	fmt.Printf("%-14s %-30s %-8s %9s %11s %11s  %s\n", "probe", "binary", "answer", "time s", "peak RSS MB", "RSS after MB", "notes")
	for _, name := range strings.Split(*probes, ",") {
		for _, bin := range bins {
			r, err := runProbe(name, bin, up, *timeout)
			if err != nil {
				fmt.Printf("%-14s %-30s error: %v\n", name, short(bin), err)
				continue
			}
			fmt.Printf("%-14s %-30s %-8s %9.1f %11.0f %11.0f  %s\n", name, short(bin), r.answer, r.seconds, r.peakMB, r.afterMB, r.notes)
		}
	}
}

func short(bin string) string {
	if len(bin) > 30 {
		return "…" + bin[len(bin)-29:]
	}
	return bin
}

// result is what one probe saw.
type result struct {
	answer          string
	seconds         float64
	peakMB, afterMB float64
	notes           string
}

// hostileMVT is a Mapbox Vector Tile of n layers, each a name of five
// characters of its own, version 2 and an extent: 14 bytes a layer.
func hostileMVT(n int) []byte {
	const digits = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, 0, n*14)
	name := make([]byte, 5)
	for i := range n {
		v := i
		for j := range name {
			name[j] = digits[v%36]
			v /= 36
		}
		// field 3 (layer), 12 bytes: field 1 (name), field 15 (version 2), field 5 (extent 4096)
		out = append(out, 0x1a, 12, 0x0a, 5)
		out = append(out, name...)
		out = append(out, 0x78, 2, 0x28, 0x80, 0x20)
	}
	return out
}

// hostileGeoJSON is a FeatureCollection of about size bytes whose every
// feature has a point and properties of keys of its own.
func hostileGeoJSON(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 200)
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; b.Len() < size-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"Feature","geometry":{"type":"Point","coordinates":[0,0]},"properties":{"k%d":1,"l%d":"x"}}`, i, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// startUpstream serves the hostile tiles on 127.0.0.1: /mvt/{z}/{x}/{y}.pbf
// and /geojson/{z}/{x}/{y}.geojson.
func startUpstream() (string, error) {
	mvt := hostileMVT(1_190_000)
	geo := hostileGeoJSON(16<<20 - 1024)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/mvt/"):
			w.Header().Set("Content-Type", "application/vnd.mapbox-vector-tile")
			w.Write(mvt)
		case strings.HasPrefix(r.URL.Path, "/geojson/"):
			w.Header().Set("Content-Type", "application/geo+json")
			w.Write(geo)
		default:
			http.NotFound(w, r)
		}
	}))
	return "http://" + ln.Addr().String(), nil
}

const layersDoc = `layers:
  - name: hostile:mvt
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/vnd.mapbox-vector-tile]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: xyz, url: "%[1]s/mvt/{z}/{x}/{y}.pbf", retries: -1}
  - name: hostile:mvt1
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/vnd.mapbox-vector-tile]
    metatiling: [1, 1]
    source: {type: xyz, url: "%[1]s/mvt/{z}/{x}/{y}.pbf", retries: -1}
  - name: hostile:geojson
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/json;type=geojson]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: xyz, url: "%[1]s/geojson/{z}/{x}/{y}.geojson", format: "application/json;type=geojson", retries: -1}
`

const (
	user     = "admin"
	password = "probe-password"
)

// server is one `tilecache serve` process.
type server struct {
	cmd  *exec.Cmd
	url  string
	data string
}

func start(bin, upstream string) (*server, error) {
	dir, err := os.MkdirTemp("", "probebench-")
	if err != nil {
		return nil, err
	}
	layers := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(layers, fmt.Appendf(nil, layersDoc, upstream), 0o644); err != nil {
		return nil, err
	}
	add := exec.Command(bin, "useradd", "-file", filepath.Join(dir, "users"), "-name", user)
	add.Stdin = strings.NewReader(password + "\n")
	if out, err := add.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("useradd: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "TILECACHE_ADDR="+addr, "TILECACHE_DATA="+filepath.Join(dir, "data"),
		"TILECACHE_USERS="+filepath.Join(dir, "users"), "TILECACHE_LAYERS="+layers, "TILECACHE_UPSTREAM_ALLOW=127.0.0.0/8")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, url: "http://" + addr, data: dir}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(s.url + "/rest/seed.json"); err == nil {
			res.Body.Close()
			return s, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("the server did not answer within 30 s")
}

func (s *server) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.data)
}

// memMB reads a field of /proc/<pid>/status in MB.
func (s *server) memMB(field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return -1
}

func (s *server) do(ctx context.Context, method, path, body, contentType string, auth bool) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth {
		req.SetBasicAuth(user, password)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b), nil
}

func runProbe(name, bin, upstream string, timeout time.Duration) (result, error) {
	s, err := start(bin, upstream)
	if err != nil {
		return result{}, err
	}
	defer s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	began := time.Now()
	var r result
	switch name {
	case "mvt-miss", "geojson-miss":
		path := "/tiles/hostile:mvt/EPSG:900913/mapbox-vectortile/3/1/1.pbf"
		if name == "geojson-miss" {
			path = "/tiles/hostile:geojson/EPSG:900913/geojson/3/1/1.geojson"
		}
		status, body, err := s.do(ctx, "GET", path, "", "", false)
		if err != nil {
			r.answer = "timeout"
			r.notes = err.Error()
		} else {
			r.answer = strconv.Itoa(status)
			r.notes = firstLine(body)
		}
	case "mvt-seed":
		status, body, err := s.do(ctx, "POST", "/rest/seed/hostile:mvt1.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"type":"seed"}}`, "application/json", true)
		if err != nil || status != http.StatusOK {
			return result{}, fmt.Errorf("seed: %d %v %s", status, err, firstLine(body))
		}
		for ctx.Err() == nil {
			_, list, err := s.do(ctx, "GET", "/rest/seed.json", "", "", true)
			if err == nil && strings.Contains(list, `"long-array-array":[]`) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		r.answer = "done"
		if ctx.Err() != nil {
			r.answer = "timeout"
		}
		// Let the publication of the documents run its course.
		time.Sleep(3 * time.Second)
		r.notes = documentSizes(filepath.Join(s.data, "data"))
	default:
		return result{}, fmt.Errorf("unknown probe %q", name)
	}
	r.seconds = time.Since(began).Seconds()
	r.peakMB, r.afterMB = s.memMB("VmHWM"), s.memMB("VmRSS")
	return r, nil
}

// documentSizes lists the TileJSON documents under dir with their sizes.
func documentSizes(dir string) string {
	var parts []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "tilejson") && strings.Contains(p, "hostile") {
			if info, err := d.Info(); err == nil {
				rel, _ := filepath.Rel(dir, p)
				parts = append(parts, fmt.Sprintf("%s %.1f kB", rel, float64(info.Size())/1e3))
			}
		}
		return nil
	})
	if len(parts) == 0 {
		return "no TileJSON of the layer"
	}
	return strings.Join(parts, "; ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
