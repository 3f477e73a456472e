// Package audittest is the conformance suite every audit.Store must pass,
// one test per behaviour: listing newest first with every field kept,
// filters by layer, account and time, paging with a continuation (also
// across days and with filters), the retention, and concurrent writers
// losing no record.
package audittest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"tilecache/internal/audit"
)

// Retention is the retention the stores are made with.
const Retention = 30 * 24 * time.Hour

// NewStore returns a fresh, empty store keeping records for Retention.
type NewStore func(t *testing.T) audit.Store

// Run runs the suite. writers×perWriter records are appended concurrently
// by ConcurrentWritersLoseNothing.
func Run(t *testing.T, newStore NewStore) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, newStore(t)) })
	t.Run("NewestFirstEveryField", func(t *testing.T) { testNewestFirst(t, newStore(t)) })
	t.Run("FilterByLayerAndAccount", func(t *testing.T) { testFilters(t, newStore(t)) })
	t.Run("Since", func(t *testing.T) { testSince(t, newStore(t)) })
	t.Run("PagedWithContinuation", func(t *testing.T) { testPaged(t, newStore(t)) })
	t.Run("PagedWithFilter", func(t *testing.T) { testPagedFiltered(t, newStore(t)) })
	t.Run("AcrossDays", func(t *testing.T) { testAcrossDays(t, newStore(t)) })
	t.Run("OlderThanRetentionNotListed", func(t *testing.T) { testRetention(t, newStore(t)) })
	t.Run("ConcurrentWritersLoseNothing", func(t *testing.T) { testConcurrent(t, newStore(t), 8, 25) })
}

// now is a time near the clock's (a store may expire records by a TTL),
// in whole microseconds.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func record(at time.Time, layer, account string, i int) audit.Record {
	return audit.Record{At: at, Account: account, Role: "admin", Address: "192.0.2.7", Method: "POST",
		Path: fmt.Sprintf("/rest/seed/%s.json", layer), Layer: layer, Tasks: []int64{int64(i), int64(i + 1)},
		Status: 200}
}

func mustAppend(t *testing.T, s audit.Store, r audit.Record) {
	t.Helper()
	if err := s.Append(t.Context(), r); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func mustList(t *testing.T, s audit.Store, q audit.Query) audit.Page {
	t.Helper()
	p, err := s.List(t.Context(), q)
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return p
}

// listAll follows the continuation to the end (at most 1000 pages).
func listAll(t *testing.T, s audit.Store, q audit.Query) []audit.Record {
	t.Helper()
	var out []audit.Record
	for range 1000 {
		p := mustList(t, s, q)
		out = append(out, p.Records...)
		if p.Next == "" {
			return out
		}
		q.After = p.Next
	}
	t.Fatal("listing did not end within 1000 pages")
	return nil
}

func paths(rs []audit.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s %s %d", r.Layer, r.Account, r.Tasks[0])
	}
	return out
}

func checkNewestFirst(t *testing.T, rs []audit.Record) {
	t.Helper()
	for i := 1; i < len(rs); i++ {
		if rs[i].At.After(rs[i-1].At) || rs[i].ID >= rs[i-1].ID {
			t.Fatalf("records %d and %d not newest first: %s %v, %s %v", i-1, i, rs[i-1].ID, rs[i-1].At, rs[i].ID, rs[i].At)
		}
	}
}

func testEmpty(t *testing.T, s audit.Store) {
	p := mustList(t, s, audit.Query{})
	if len(p.Records) != 0 || p.Next != "" {
		t.Fatalf("List of an empty store = %+v; want nothing", p)
	}
}

func testNewestFirst(t *testing.T, s audit.Store) {
	t0 := now()
	full := audit.Record{At: t0.Add(-time.Minute), Account: "alice", Unverified: true, Role: "admin",
		Address: "2001:db8::1", Method: "DELETE", Path: "/rest/layers/topp:states.xml", Layer: "topp:states",
		Tasks: []int64{7, 9}, Status: 401, Message: "Unauthorized: wrong credentials", Count: 12}
	mustAppend(t, s, full)
	mustAppend(t, s, record(t0, "a", "bob", 1))
	mustAppend(t, s, record(t0.Add(-2*time.Minute), "b", "bob", 3))
	got := mustList(t, s, audit.Query{})
	if want := []string{"a bob 1", "topp:states alice 7", "b bob 3"}; !slices.Equal(paths(got.Records), want) || got.Next != "" {
		t.Fatalf("List = %v next %q; want %v, no next", paths(got.Records), got.Next, want)
	}
	checkNewestFirst(t, got.Records)
	r := got.Records[1]
	if _, ok := audit.IDTime(r.ID); !ok {
		t.Errorf("id %q is no record id", r.ID)
	}
	r.ID = ""
	if !r.At.Equal(full.At) {
		t.Errorf("At = %v, want %v", r.At, full.At)
	}
	r.At = full.At
	if fmt.Sprint(r) != fmt.Sprint(full) {
		t.Errorf("record read back = %+v\nwant %+v", r, full)
	}
}

func testFilters(t *testing.T, s audit.Store) {
	t0 := now()
	for i, c := range []struct{ layer, account string }{{"a", "alice"}, {"b", "alice"}, {"a", "bob"}, {"", "bob"}, {"a", ""}} {
		mustAppend(t, s, record(t0.Add(time.Duration(i)*time.Second), c.layer, c.account, i))
	}
	for _, c := range []struct {
		q    audit.Query
		want []string
	}{
		{audit.Query{Layer: "a"}, []string{"a  4", "a bob 2", "a alice 0"}},
		{audit.Query{Account: "alice"}, []string{"b alice 1", "a alice 0"}},
		{audit.Query{Layer: "a", Account: "bob"}, []string{"a bob 2"}},
		{audit.Query{Layer: "c"}, nil},
	} {
		got := mustList(t, s, c.q)
		if !slices.Equal(paths(got.Records), c.want) && !(len(c.want) == 0 && len(got.Records) == 0) {
			t.Errorf("List(%+v) = %v; want %v", c.q, paths(got.Records), c.want)
		}
	}
}

func testSince(t *testing.T, s audit.Store) {
	t0 := now()
	for i := range 4 {
		mustAppend(t, s, record(t0.Add(-time.Duration(i)*time.Hour), "a", "alice", i))
	}
	got := mustList(t, s, audit.Query{Since: t0.Add(-2 * time.Hour)})
	if want := []string{"a alice 0", "a alice 1", "a alice 2"}; !slices.Equal(paths(got.Records), want) {
		t.Fatalf("since 2 h ago: %v; want %v (a record at since is listed)", paths(got.Records), want)
	}
}

func testPaged(t *testing.T, s audit.Store) {
	t0 := now()
	for i := range 25 {
		mustAppend(t, s, record(t0.Add(time.Duration(i)*time.Millisecond), "a", "alice", i))
	}
	// Two records of one time: ids tell them apart.
	mustAppend(t, s, record(t0, "a", "alice", 100))
	q := audit.Query{Limit: 10}
	var sizes []int
	var all []audit.Record
	for range 10 {
		p := mustList(t, s, q)
		sizes = append(sizes, len(p.Records))
		all = append(all, p.Records...)
		if p.Next == "" {
			break
		}
		if p.Next != p.Records[len(p.Records)-1].ID {
			t.Fatalf("next %q is not the page's last id %q", p.Next, p.Records[len(p.Records)-1].ID)
		}
		q.After = p.Next
	}
	if len(all) != 26 || sizes[0] != 10 || sizes[1] != 10 {
		t.Fatalf("pages of %v records, %d in all; want 10, 10, 6 (26)", sizes, len(all))
	}
	checkNewestFirst(t, all)
}

func testPagedFiltered(t *testing.T, s audit.Store) {
	t0 := now()
	for i := range 30 {
		layer := "a"
		if i%3 == 0 {
			layer = "b"
		}
		mustAppend(t, s, record(t0.Add(time.Duration(i)*time.Millisecond), layer, "alice", i))
	}
	got := listAll(t, s, audit.Query{Layer: "b", Limit: 3})
	if len(got) != 10 {
		t.Fatalf("layer b in pages of 3: %d records, want 10", len(got))
	}
	for i, r := range got {
		if r.Layer != "b" || r.Tasks[0] != int64(27-3*i) {
			t.Fatalf("record %d = %s, want layer b of task %d", i, paths(got[i:i+1]), 27-3*i)
		}
	}
}

func testAcrossDays(t *testing.T, s audit.Store) {
	t0 := now()
	for i, ago := range []time.Duration{0, 25 * time.Hour, 49 * time.Hour, 72 * time.Hour, 24 * 10 * time.Hour} {
		mustAppend(t, s, record(t0.Add(-ago), "a", "alice", i))
	}
	got := listAll(t, s, audit.Query{Limit: 2})
	if want := []string{"a alice 0", "a alice 1", "a alice 2", "a alice 3", "a alice 4"}; !slices.Equal(paths(got), want) {
		t.Fatalf("across days in pages of 2: %v; want %v", paths(got), want)
	}
	got = mustList(t, s, audit.Query{Since: t0.Add(-50 * time.Hour)}).Records
	if want := []string{"a alice 0", "a alice 1", "a alice 2"}; !slices.Equal(paths(got), want) {
		t.Fatalf("since 50 h ago: %v; want %v", paths(got), want)
	}
}

func testRetention(t *testing.T, s audit.Store) {
	t0 := now()
	mustAppend(t, s, record(t0.Add(-Retention-time.Hour), "a", "alice", 1))
	mustAppend(t, s, record(t0.Add(-Retention+time.Hour), "a", "alice", 2))
	mustAppend(t, s, record(t0, "a", "alice", 3))
	got := listAll(t, s, audit.Query{})
	if want := []string{"a alice 3", "a alice 2"}; !slices.Equal(paths(got), want) {
		t.Fatalf("List = %v; want %v (the record past the retention not listed)", paths(got), want)
	}
}

func testConcurrent(t *testing.T, s audit.Store, writers, perWriter int) {
	t0 := now()
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				// Every writer appends at the same times: ids must still differ.
				if err := s.Append(t.Context(), record(t0.Add(time.Duration(i)*time.Microsecond), fmt.Sprintf("w%d", w), "alice", i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Append: %v", err)
	}
	got := listAll(t, s, audit.Query{Limit: audit.MaxLimit})
	seen := map[string]bool{}
	for _, r := range got {
		seen[fmt.Sprintf("%s %d", r.Layer, r.Tasks[0])] = true
	}
	if len(got) != writers*perWriter || len(seen) != writers*perWriter {
		t.Fatalf("%d writers × %d appends: %d records listed, %d distinct; want %d", writers, perWriter, len(got), len(seen), writers*perWriter)
	}
	checkNewestFirst(t, got)
}

// BenchmarkAppend appends records one after the other and reports the
// median and 99th percentile of one Append.
func BenchmarkAppend(b *testing.B, s audit.Store) {
	t0 := now()
	lat := make([]time.Duration, 0, b.N)
	i := 0
	for b.Loop() {
		start := time.Now()
		if err := s.Append(b.Context(), record(t0.Add(time.Duration(i)*time.Microsecond), "a", "alice", i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkList lists the newest 50 of 200 records of today filtered by a
// layer that has 10 (so the listing reads every day of the retention)
// and reports the median time of one List.
func BenchmarkList(b *testing.B, s audit.Store) {
	t0 := now()
	for i := range 200 {
		layer := "a"
		if i%20 == 0 {
			layer = "b"
		}
		if err := s.Append(b.Context(), record(t0.Add(-time.Duration(i)*time.Second), layer, "alice", i)); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		p, err := s.List(b.Context(), audit.Query{Layer: "b", Limit: 50})
		if err != nil || len(p.Records) != 10 {
			b.Fatalf("List: %d records, %v; want 10", len(p.Records), err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
}
