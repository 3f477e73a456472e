// Command missbench measures render on miss and tile hits of the local
// program (embedded backend) against references taken in the same run:
//
//   - miss latency (GET /tiles/… of a tile whose metatile is not stored)
//     against the upstream's own GetMap latency for the same metatile, timed
//     by a proxy in front of the WMS: p50 and p99 of each and of the
//     difference (decoding, cutting, encoding, storing 16 tiles);
//
//   - hit latency and requests/s of /tiles against Go's http.FileServer on
//     the same tile files, each driven by the same client at the same
//     concurrency for the same time, alternated, medians of the runs.
//
//     go run ./internal/bench/missbench -wms URL [-misses 60] [-runs 3] [-concurrency 4] [-for 3s]
//
// make bench-miss starts the project's test WMS and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app"
	"tilecache/internal/auth"
	"tilecache/internal/config"
)

var hitProfile string

func main() {
	wms := flag.String("wms", "", "the WMS the layer renders from (required)")
	misses := flag.Int("misses", 60, "cold metatiles to request, one tile each")
	runs := flag.Int("runs", 3, "hit-rate runs of each server, alternated; medians are printed")
	conc := flag.Int("concurrency", 4, "clients in flight in the hit runs")
	each := flag.Duration("for", 3*time.Second, "length of one hit run")
	flag.StringVar(&hitProfile, "cpuprofile", "", "write a CPU profile of the /tiles hit runs to this file")
	flag.Parse()
	if *wms == "" {
		fmt.Fprintln(os.Stderr, "missbench: -wms is required")
		os.Exit(2)
	}
	if err := run(*wms, *misses, *runs, *conc, *each); err != nil {
		fmt.Fprintln(os.Stderr, "missbench:", err)
		os.Exit(1)
	}
}

// timingProxy forwards to the WMS and records each GetMap's duration.
type timingProxy struct {
	target *url.URL
	mu     sync.Mutex
	took   []time.Duration
}

func (p *timingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	res, err := http.Get(p.target.Scheme + "://" + p.target.Host + r.RequestURI)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	took := time.Since(start)
	p.mu.Lock()
	p.took = append(p.took, took)
	p.mu.Unlock()
	w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
	w.WriteHeader(res.StatusCode)
	w.Write(body)
}

func run(wms string, misses, runs, conc int, each time.Duration) error {
	u, err := url.Parse(wms)
	if err != nil {
		return err
	}
	proxy := &timingProxy{target: u}
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	layerURL := ps.URL + u.Path
	if u.RawQuery != "" {
		layerURL += "?" + u.RawQuery
	}
	dir, err := os.MkdirTemp("", "missbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	layers := filepath.Join(dir, "layers.yaml")
	if err := os.WriteFile(layers, []byte(`layers:
  - name: od:world
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: wms, url: "`+layerURL+`", layers: "hillshade,polygons,lines,points", allowPrivateUpstream: true}
`), 0o644); err != nil {
		return err
	}
	users := filepath.Join(dir, "users")
	if err := auth.AddAccount(users, "bench", "bench-password", bcrypt.MinCost); err != nil {
		return err
	}
	cfg, err := config.Load(func(k string) (string, bool) {
		v, ok := map[string]string{"TILECACHE_LAYERS": layers, "TILECACHE_USERS": users, "TILECACHE_DATA": filepath.Join(dir, "data")}[k]
		return v, ok
	})
	if err != nil {
		return err
	}
	p, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer p.Close()
	srv := httptest.NewServer(p.Handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	// Misses: one tile of each of `misses` distinct metatiles of z8
	// (64×64 metatiles), spread over the world, one at a time.
	var missTook, upTook, overhead []time.Duration
	for i := range min(misses, 64*64) {
		mx, my := i%64, (i/64+i*37)%64
		path := fmt.Sprintf("/tiles/od:world/EPSG:900913/png/8/%d/%d.png", mx*4+1, my*4+2)
		proxy.mu.Lock()
		before := len(proxy.took)
		proxy.mu.Unlock()
		start := time.Now()
		status, err := get(client, srv.URL+path)
		took := time.Since(start)
		if err != nil || status != 200 {
			return fmt.Errorf("miss %s: %d %v", path, status, err)
		}
		proxy.mu.Lock()
		if len(proxy.took) != before+1 {
			proxy.mu.Unlock()
			return fmt.Errorf("miss %s (after %v) caused %d GetMaps, want 1", path, took, len(proxy.took)-before)
		}
		up := proxy.took[before]
		proxy.mu.Unlock()
		missTook, upTook, overhead = append(missTook, took), append(upTook, up), append(overhead, took-up)
	}
	fmt.Printf("missbench: %d misses (one 1024² GetMap each, 16 tiles stored): miss p50 %v p99 %v; upstream GetMap p50 %v p99 %v; miss − upstream p50 %v p99 %v\n",
		misses, pct(missTook, 50), pct(missTook, 99), pct(upTook, 50), pct(upTook, 99), pct(overhead, 50), pct(overhead, 99))

	// Hits: the stored tiles, through /tiles and through http.FileServer
	// on the tile directory.
	var paths, files []string
	root := filepath.Join(dir, "data", "tiles")
	filepath.WalkDir(filepath.Join(root, "od:world"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".png") {
			rel, _ := filepath.Rel(root, path)
			f := strings.Split(rel, string(filepath.Separator)) // od:world/EPSG:900913/png/default/z/x/y.png
			paths = append(paths, "/tiles/"+f[0]+"/"+f[1]+"/"+f[2]+"/"+f[4]+"/"+f[5]+"/"+f[6])
			files = append(files, "/"+filepath.ToSlash(rel))
		}
		return nil
	})
	if len(paths) == 0 {
		return fmt.Errorf("no stored tiles found under %s", root)
	}
	fs := httptest.NewServer(http.FileServer(http.Dir(root)))
	defer fs.Close()
	var ours, theirs []float64
	var oursLat, theirsLat []time.Duration
	if hitProfile != "" {
		f, err := os.Create(hitProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		_, _, err = hammer(client, srv.URL, paths, conc, each)
		pprof.StopCPUProfile()
		if err != nil {
			return err
		}
	}
	for r := range runs {
		rate, lat, err := hammer(client, srv.URL, paths, conc, each)
		if err != nil {
			return err
		}
		ours, oursLat = append(ours, rate), append(oursLat, lat)
		rate2, lat2, err := hammer(client, fs.URL, files, conc, each)
		if err != nil {
			return err
		}
		theirs, theirsLat = append(theirs, rate2), append(theirsLat, lat2)
		fmt.Printf("run %d: /tiles %.0f req/s (p50 %v), http.FileServer %.0f req/s (p50 %v)\n", r+1, rate, lat, rate2, lat2)
	}
	fmt.Printf("missbench: hits of %d stored tiles at concurrency %d: /tiles median %.0f req/s (p50 %v), http.FileServer %.0f req/s (p50 %v): ratio %.2f\n",
		len(paths), conc, medianF(ours), pctOf(oursLat), medianF(theirs), pctOf(theirsLat), medianF(ours)/medianF(theirs))
	return nil
}

func get(c *http.Client, u string) (int, error) {
	res, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

// hammer GETs the paths round robin from conc clients for d and returns
// requests per second and the median latency.
func hammer(c *http.Client, base string, paths []string, conc int, d time.Duration) (float64, time.Duration, error) {
	var n atomic.Int64
	var failed atomic.Value
	lats := make([][]time.Duration, conc)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for i := w; time.Now().Before(deadline); i += conc {
				start := time.Now()
				status, err := get(c, base+paths[i%len(paths)])
				if err != nil || status != 200 {
					failed.Store(fmt.Errorf("GET %s: %d %v", paths[i%len(paths)], status, err))
					return
				}
				lats[w] = append(lats[w], time.Since(start))
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return 0, 0, err
	}
	return float64(n.Load()) / d.Seconds(), pct(slices.Concat(lats...), 50), nil
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)].Round(10 * time.Microsecond)
}

func pctOf(ds []time.Duration) time.Duration { return pct(ds, 50) }

func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
