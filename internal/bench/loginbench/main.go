// Command loginbench measures what a flood of wrong passwords costs a
// running `tilecache serve` (embedded backends, the demo layer): the
// latency of cached tiles beside it, the server's CPU seconds spent on it,
// and whether the administrator still gets in.
//
//	go run ./internal/bench/loginbench -bin bin/tilecache [-flood 16] [-for 30s] [-quiet 10s] [-tiles 4] [-cost 10]
//
// It makes an accounts file (admin, bcrypt at -cost, the cost `tilecache
// useradd` uses), starts -bin serve on a free port of 127.0.0.1 with a data
// directory of its own, seeds demo:world levels 0–3 (EPSG:900913, PNG) and
// then runs two phases of a paced cached-tile load (-tiles clients, one
// request each 20 ms):
//
//   - quiet (-quiet): the tiles alone;
//   - flood (-for): the tiles beside -flood connections sending GET
//     /rest/seed.json as admin with a new wrong password each time, from
//     127.0.0.1, while the administrator, who logged in once from
//     127.0.0.2 before, reads /rest/seed.json from there every 500 ms.
//
// Each phase prints the tiles' p50/p99/max latency and the server's CPU
// seconds (utime+stime from /proc/<pid>/stat); the flood's own CPU is the
// flood phase's minus the quiet phase's at the same tile rate. Give the
// binary of another revision with -bin to compare (a worktree of it built
// with `go build -o /tmp/old ./cmd/tilecache`). Linux only (/proc).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tilecache/internal/auth"
)

func main() {
	bin := flag.String("bin", "bin/tilecache", "the tilecache binary to measure")
	flood := flag.Int("flood", 16, "connections sending wrong passwords")
	floodFor := flag.Duration("for", 30*time.Second, "length of the flood phase (at most 5m)")
	quiet := flag.Duration("quiet", 10*time.Second, "length of the tiles-only phase (at most 5m)")
	tiles := flag.Int("tiles", 4, "cached-tile clients, one request each 20 ms")
	cost := flag.Int("cost", 10, "bcrypt cost of the admin account")
	flag.Parse()
	if *floodFor > 5*time.Minute || *quiet > 5*time.Minute || *flood > 256 || *tiles > 64 {
		fmt.Fprintln(os.Stderr, "loginbench: -for and -quiet at most 5m, -flood at most 256, -tiles at most 64")
		os.Exit(2)
	}
	if err := run(*bin, *flood, *tiles, *cost, *floodFor, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "loginbench:", err)
		os.Exit(1)
	}
}

// from returns a client whose connections come from the loopback address
// ip, so that the administrator's address differs from the flood's.
func from(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

func run(bin string, flood, tileClients, cost int, floodFor, quiet time.Duration) error {
	dir, err := os.MkdirTemp("", "loginbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	password := rand.Text()
	if err := auth.AddAccount(filepath.Join(dir, "users"), "admin", password, cost); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	base := "http://" + addr
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "TILECACHE_ADDR="+addr, "TILECACHE_DATA="+dir, "TILECACHE_USERS="+filepath.Join(dir, "users"), "TILECACHE_LOG_LEVEL=error")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	admin := from("127.0.0.2", 2)
	if err := waitUp(admin, base); err != nil {
		return err
	}
	tileURLs, err := seed(admin, base, password)
	if err != nil {
		return err
	}
	fmt.Printf("%s: pid %d, %d cached tiles (demo:world z0-3), admin bcrypt cost %d\n", bin, cmd.Process.Pid, len(tileURLs), cost)

	tileClient := from("127.0.0.1", tileClients)
	for _, u := range tileURLs { // warm
		if st, _, err := get(tileClient, u, "", ""); err != nil || st != 200 {
			return fmt.Errorf("warm %s: %d %v", u, st, err)
		}
	}
	pid := cmd.Process.Pid

	// Quiet: tiles alone.
	c0, err := cpuSeconds(pid)
	if err != nil {
		return err
	}
	q := tileLoad(tileClient, tileURLs, tileClients, quiet)
	c1, _ := cpuSeconds(pid)
	quietCPU := c1 - c0
	fmt.Printf("quiet  %5.0fs  tiles %6d  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  errors %d  server CPU %6.2f s\n",
		quiet.Seconds(), len(q.lat), q.pct(50), q.pct(99), q.pct(100), q.errs, quietCPU)

	// Flood: tiles beside wrong passwords, and the administrator.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var fl floodCount
	floodClient := from("127.0.0.1", flood)
	var n atomic.Int64
	for range flood {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, _, err := get(floodClient, base+"/rest/seed.json", "admin", fmt.Sprint("guess-", n.Add(1)))
				fl.add(st, err)
			}
		})
	}
	var adminLat []time.Duration
	adminStatus := map[int]int{}
	wg.Go(func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			start := time.Now()
			st, _, _ := get(admin, base+"/rest/seed.json", "admin", password)
			adminLat = append(adminLat, time.Since(start))
			adminStatus[st]++
		}
	})
	c2, _ := cpuSeconds(pid)
	f := tileLoad(tileClient, tileURLs, tileClients, floodFor)
	c3, _ := cpuSeconds(pid)
	close(stop)
	wg.Wait()
	floodCPU := c3 - c2
	own := floodCPU - quietCPU*floodFor.Seconds()/quiet.Seconds()
	fmt.Printf("flood  %5.0fs  tiles %6d  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  errors %d  server CPU %6.2f s (the flood's own about %.2f s)\n",
		floodFor.Seconds(), len(f.lat), f.pct(50), f.pct(99), f.pct(100), f.errs, floodCPU, own)
	fmt.Printf("flood  %d connections: %s\n", flood, fl.String())
	slices.Sort(adminLat)
	fmt.Printf("admin  from 127.0.0.2 every 500 ms: statuses %v, p50 %.2f ms, max %.2f ms\n", adminStatus, ms(pctOf(adminLat, 50)), ms(pctOf(adminLat, 100)))
	return nil
}

func waitUp(c *http.Client, base string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, _, err := get(c, base+"/rest/seed.json", "", ""); err == nil && st == 401 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the server did not answer within 30 s")
}

// seed stores demo:world EPSG:900913 PNG levels 0–3 and returns their
// tile URLs.
func seed(c *http.Client, base, password string) ([]string, error) {
	body := `{"seedRequest":{"name":"demo:world","gridSetId":"EPSG:900913","format":"image/png","zoomStart":0,"zoomStop":3,"type":"seed","threadCount":2}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/rest/seed/demo:world.json", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("admin", password)
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("seed: %d %s", res.StatusCode, b)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, b, err := get(c, base+"/rest/seed/demo:world.json", "admin", password)
		if err != nil || st != 200 {
			return nil, fmt.Errorf("seed status: %d %v", st, err)
		}
		if bytes.Contains(b, []byte(`"long-array-array":[]`)) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("seed not done after 2 minutes: %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var urls []string
	for z := range 4 {
		for x := range 1 << z {
			for y := range 1 << z {
				urls = append(urls, fmt.Sprintf("%s/demo:world/EPSG:900913/png/default/%d/%d/%d.png", base, z, x, y))
			}
		}
	}
	return urls, nil
}

func get(c *http.Client, url, user, password string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

type latencies struct {
	lat  []time.Duration
	errs int
}

func (l latencies) pct(p int) float64 { return ms(pctOf(l.lat, p)) }

func pctOf(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := min(len(sorted)-1, (len(sorted)*p+99)/100-1)
	return sorted[max(0, i)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// tileLoad has clients request the tiles in turn, each at most one request
// per 20 ms, for d; it returns the sorted latencies.
func tileLoad(c *http.Client, urls []string, clients int, d time.Duration) latencies {
	end := time.Now().Add(d)
	var mu sync.Mutex
	var out latencies
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for k := i; time.Now().Before(end); k += clients {
				start := time.Now()
				st, _, err := get(c, urls[k%len(urls)], "", "")
				lat := time.Since(start)
				mu.Lock()
				if err != nil || st != 200 {
					out.errs++
				} else {
					out.lat = append(out.lat, lat)
				}
				mu.Unlock()
				<-t.C
			}
		})
	}
	wg.Wait()
	slices.Sort(out.lat)
	return out
}

type floodCount struct {
	mu     sync.Mutex
	status map[int]int
	errs   int
}

func (f *floodCount) add(status int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.errs++
		return
	}
	if f.status == nil {
		f.status = map[int]int{}
	}
	f.status[status]++
}

func (f *floodCount) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	total := f.errs
	var parts []string
	for _, st := range slices.Sorted(func(yield func(int) bool) {
		for k := range f.status {
			if !yield(k) {
				return
			}
		}
	}) {
		total += f.status[st]
		parts = append(parts, fmt.Sprintf("%d × %d", f.status[st], st))
	}
	return fmt.Sprintf("%d requests: %s, %d errors", total, strings.Join(parts, ", "), f.errs)
}

// cpuSeconds returns the user and system CPU time of process pid
// (/proc/<pid>/stat fields 14 and 15, in clock ticks of 1/100 s).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc stat format")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unexpected /proc stat fields")
	}
	return (u + s) / 100, nil
}
