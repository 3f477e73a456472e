package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
)

// BenchmarkStatusGET answers GET /rest/seed.json (Basic auth, the task
// store's listing, the JSON rows) on the embedded backend, with 8 tasks
// listed, from parallel clients; BenchmarkBareHandler serves the same
// bytes from a handler that does nothing else, through the same kind of
// server and client: the ratio is what the status endpoint costs.
func BenchmarkStatusGET(b *testing.B) {
	a := apptest.Start(b, apptest.Options{SeedThreads: 1, Checkpoint: time.Hour})
	// One slow task running and seven pending: listed rows that stay.
	seedReq(b, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":6,"threadCount":8}}`)
	body := a.Do(b, "GET", "/rest/seed.json", "").Body
	benchGET(b, a.URL+"/rest/seed.json", true, len(body))
}

func BenchmarkBareHandler(b *testing.B) {
	a := apptest.Start(b, apptest.Options{SeedThreads: 1, Checkpoint: time.Hour})
	seedReq(b, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":6,"threadCount":8}}`)
	body := []byte(a.Do(b, "GET", "/rest/seed.json", "").Body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	benchGET(b, srv.URL+"/rest/seed.json", true, len(body))
}

func benchGET(b *testing.B, url string, auth bool, size int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.SetBytes(int64(size))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			if auth {
				req.SetBasicAuth(apptest.User, apptest.Password)
			}
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Errorf("GET: %d", res.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
