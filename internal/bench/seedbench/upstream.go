package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// upstreamRate measures the WMS alone: 1024² GetMaps of the job's own
// metatiles (levels 2 and up, spread evenly, at most 160 requests or 30 s)
// at the seed's upstream concurrency, bodies read in full and dropped.
func (b bench) upstreamRate() (float64, error) {
	const half = 20037508.34
	var urls []string
	for z := 2; z <= max(b.zoom, 2); z++ {
		metas := int64(1) << (z - 2) // per axis
		span := 2 * half / float64(metas)
		for my := range metas {
			for mx := range metas {
				bbox := []float64{-half + float64(mx)*span, -half + float64(my)*span, -half + float64(mx+1)*span, -half + float64(my+1)*span}
				var parts []string
				for _, c := range bbox {
					parts = append(parts, strconv.FormatFloat(c, 'f', -1, 64))
				}
				urls = append(urls, b.wms+"?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetMap&LAYERS=hillshade,polygons,lines,points&STYLES="+
					"&SRS=EPSG:900913&FORMAT="+url.QueryEscape(b.upstreamFormat)+"&TRANSPARENT=FALSE&WIDTH=1024&HEIGHT=1024&BBOX="+strings.Join(parts, ","))
			}
		}
	}
	const most = 160
	if len(urls) > most {
		step := float64(len(urls)) / most
		picked := make([]string, 0, most)
		for i := range most {
			picked = append(picked, urls[int(math.Floor(float64(i)*step))])
		}
		urls = picked
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.upstream, DisableCompression: true}, Timeout: time.Minute}
	deadline := time.Now().Add(30 * time.Second)
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		first      error
	)
	start := time.Now()
	for range b.upstream {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(urls)) || time.Now().After(deadline) {
					return
				}
				res, err := client.Get(urls[i])
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if err == nil && (res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "image/")) {
						err = fmt.Errorf("GetMap %s: HTTP %d %s", urls[i], res.StatusCode, res.Header.Get("Content-Type"))
					}
				}
				if err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}
