package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"tilecache/internal/app"
	"tilecache/internal/bench/benchenv"
	"tilecache/internal/tilestore"
)

// exportFollowUp measures, over the seeded tiles, a plain listing and
// GET of every stored object of the layer (16 at a time, the reads an
// export cannot do without), then an export of the seeded levels to
// PMTiles (POST /rest/export), and prints both rates and their ratio.
func (b bench) exportFollowUp(base, layerName string, l *app.Program, keyPrefix string) (float64, string, error) {
	ctx := context.Background()
	start := time.Now()
	var read atomic.Int64
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(16)
	err := l.Tiles.List(ectx, tilestore.LayerPrefix(keyPrefix, layerName), func(o tilestore.Object) error {
		if !strings.HasSuffix(o.Key, ".png") && !strings.HasSuffix(o.Key, ".jpeg") {
			return nil
		}
		eg.Go(func() error {
			_, _, _, err := l.Tiles.Get(ectx, o.Key)
			read.Add(1)
			return err
		})
		return nil
	})
	if werr := eg.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return 0, "", fmt.Errorf("list and GET: %w", err)
	}
	readWall := time.Since(start)
	readRate := float64(read.Load()) / readWall.Seconds()

	format := "image/png"
	if b.wms != "" {
		format = b.format
	}
	body := fmt.Sprintf(`{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":%d,"format":%q,"archive":"pmtiles"}}`, b.zoom, format)
	resetPeakRSS()
	stopProfile := peakHeapProfile(b.memprofile)
	defer stopProfile()
	start = time.Now()
	req, err := http.NewRequest(http.MethodPost, base+"/rest/export/"+layerName+".json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.SetBasicAuth("bench", "bench")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var ans struct {
		Task   int64    `json:"task"`
		Key    string   `json:"key"`
		Status [5]int64 `json:"status"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(data, &ans) != nil {
		return 0, "", fmt.Errorf("POST export: %d %s", res.StatusCode, data)
	}
	for {
		rows, err := call(base+"/rest/seed.json", "")
		if err != nil {
			return 0, "", err
		}
		active := false
		for _, r := range rows {
			if r[3] == ans.Task {
				active = r[4] == 0 || r[4] == 1
				if r[4] == -1 {
					return 0, "", fmt.Errorf("export task %d aborted", ans.Task)
				}
			}
		}
		if !active {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	wall := time.Since(start)
	if err := stopProfile(); err != nil {
		return 0, "", err
	}
	obj, found, err := l.Tiles.Stat(ctx, ans.Key)
	if err != nil || !found {
		return 0, "", fmt.Errorf("the export's archive %s: found %v, %v", ans.Key, found, err)
	}
	total := ans.Status[1]
	rate := float64(total) / wall.Seconds()
	fmt.Printf("then export: %d tiles to a PMTiles of %d bytes in %v (%.0f tiles/s), peak RSS %.0f MiB; list and GET of the same %d objects in %v (%.0f/s): %.2fx\n",
		total, obj.Size, wall.Round(time.Millisecond), rate, benchenv.StatusMiB("VmHWM"), read.Load(), readWall.Round(time.Millisecond), readRate, rate/readRate)
	return rate, fmt.Sprintf(", %.2fx the list and GET rate", rate/readRate), nil
}

// resetPeakRSS returns what the heap holds no more to the system and
// makes the process's peak RSS (VmHWM) its current RSS (Linux: clear_refs
// 5), so that a later reading is the peak of what ran since: the
// export's, not the seed's before it.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakHeapProfile, when path is not "", watches the heap until the
// returned stop is called and then writes to path the heap profile taken
// when the heap held most (as of the garbage collection before: what
// pprof's inuse_space shows); stop may be called again, which does
// nothing.
func peakHeapProfile(path string) (stop func() error) {
	if path == "" {
		return func() error { return nil }
	}
	done := make(chan struct{})
	var best bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak+peak/20 {
				peak = v
				best.Reset()
				_ = pprof.Lookup("heap").WriteTo(&best, 0)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() (err error) {
		once.Do(func() {
			close(done)
			wg.Wait()
			err = os.WriteFile(path, best.Bytes(), 0o644)
		})
		return err
	}
}
