package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
	"tilecache/internal/tilestore/storetest"
)

// The tests share one bucket per test binary, created by the first test
// that needs it and removed, after emptying, by TestMain. Every store gets
// a unique prefix in it.
var shared struct {
	once   sync.Once
	err    error
	raw    *minio.Client // plain minio-go, for looking behind the store's back
	bucket string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.bucket != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		err := removeBucket(ctx, shared.raw, shared.bucket)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "remove test bucket %s: %v\n", shared.bucket, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// setup skips tb (or fails it, under TILECACHE_REQUIRE_DEVSTACK=1) unless an
// S3 endpoint is configured, and returns a raw client and the shared bucket.
func setup(tb testing.TB) (*minio.Client, string) {
	tb.Helper()
	testenv.RequireS3(tb)
	shared.once.Do(func() {
		raw, err := rawClient()
		if err != nil {
			shared.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		bucket := testenv.Name(tb, "s3store")
		if err := raw.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region()}); err != nil {
			shared.err = fmt.Errorf("create bucket %s: %w", bucket, err)
			return
		}
		shared.raw, shared.bucket = raw, bucket
	})
	if shared.err != nil {
		tb.Fatalf("set up S3: %v", shared.err)
	}
	return shared.raw, shared.bucket
}

func region() string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return "us-east-1"
}

func endpoint(tb testing.TB) awsconf.S3Endpoint {
	tb.Helper()
	ep, err := awsconf.ParseS3Endpoint(os.LookupEnv, region())
	if err != nil {
		tb.Fatal(err)
	}
	return ep
}

// rawClient is a plain minio-go client configured from the environment,
// with the same connection pool size as a Store, so that benchmarks compare
// the adapter and not the pools.
func rawClient() (*minio.Client, error) {
	ep, err := awsconf.ParseS3Endpoint(os.LookupEnv, region())
	if err != nil {
		return nil, err
	}
	tr, err := minio.DefaultTransport(ep.Secure)
	if err != nil {
		return nil, err
	}
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	lookup := minio.BucketLookupDNS
	if ep.PathStyle {
		lookup = minio.BucketLookupPath
	}
	return minio.New(ep.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")),
		Secure:       ep.Secure,
		Transport:    tr,
		Region:       region(),
		BucketLookup: lookup,
	})
}

// removeBucket empties bucket and removes it.
func removeBucket(ctx context.Context, raw *minio.Client, bucket string) error {
	if err := removePrefix(ctx, raw, bucket, ""); err != nil {
		return err
	}
	return raw.RemoveBucket(ctx, bucket)
}

// removePrefix removes every object whose name starts with prefix, the
// usual minio-go way: a listing piped into RemoveObjects.
func removePrefix(ctx context.Context, raw *minio.Client, bucket, prefix string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := raw.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true})
	var listErr error
	ch := make(chan minio.ObjectInfo)
	go func() {
		defer close(ch)
		for o := range objects {
			if o.Err != nil {
				listErr = o.Err
				cancel()
				continue // drain, so that minio-go's goroutine ends
			}
			ch <- o
		}
	}()
	var errs []error
	for e := range raw.RemoveObjects(ctx, bucket, ch, minio.RemoveObjectsOptions{}) {
		errs = append(errs, fmt.Errorf("remove %s: %w", e.ObjectName, e.Err))
	}
	return errors.Join(append(errs, listErr)...)
}

// newStore returns a Store on the shared bucket with a prefix of its own,
// emptied when tb ends.
func newStore(tb testing.TB) *s3store.Store {
	tb.Helper()
	raw, bucket := setup(tb)
	s, err := s3store.NewFromEnv(os.LookupEnv, bucket, testenv.Name(tb, "t"))
	if err != nil {
		tb.Fatalf("NewFromEnv error: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := removePrefix(ctx, raw, bucket, s.Prefix()); err != nil {
			tb.Errorf("empty prefix %s: %v", s.Prefix(), err)
		}
		s.Close()
	})
	return s
}

func TestConformance(t *testing.T) {
	setup(t)
	storetest.Run(t, func(t *testing.T) tilestore.Store { return newStore(t) })
}

func mustPut(tb testing.TB, s tilestore.Store, key string, data []byte, meta tilestore.Meta) {
	tb.Helper()
	if err := s.Put(tb.Context(), key, data, meta); err != nil {
		tb.Fatalf("Put(%q) error: %v", key, err)
	}
}

// putAll stores small objects under keys with 16 concurrent writers.
func putAll(tb testing.TB, s tilestore.Store, keys []string, data []byte) {
	tb.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range work {
				if err := s.Put(context.Background(), k, data, tilestore.Meta{ContentType: "image/png"}); err != nil {
					tb.Errorf("Put(%q) error: %v", k, err)
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
}

func listKeys(t *testing.T, s tilestore.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(t.Context(), prefix, func(o tilestore.Object) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatalf("List(%q) error: %v", prefix, err)
	}
	return keys
}

// TestCDNHeaders checks what a CDN in front of the bucket sees: the meta is
// stored as the object's own Content-Type and Cache-Control, both in a raw
// HEAD and in a plain HTTP GET of the object.
func TestCDNHeaders(t *testing.T) {
	raw, bucket := setup(t)
	s := newStore(t)
	tests := []struct {
		name string
		key  string
		meta tilestore.Meta
	}{
		{"png with cache control", "topp:states/EPSG:900913/png/default/3/2/5.png", tilestore.Meta{ContentType: "image/png", CacheControl: "public, max-age=86400"}},
		{"jpeg without cache control", "topp:states/EPSG:900913/jpeg/default/3/2/5.jpeg", tilestore.Meta{ContentType: "image/jpeg"}},
		{"vector tile", "roads/EPSG:900913/pbf/default/14/8192/5461.pbf", tilestore.Meta{ContentType: "application/vnd.mapbox-vector-tile", CacheControl: "max-age=60, stale-while-revalidate=30"}},
		{"gzip vector tile", "roads/EPSG:900913/mapbox-vectortile/default/14/8192/5461.pbf", tilestore.Meta{ContentType: "application/vnd.mapbox-vector-tile", ContentEncoding: "gzip"}},
	}
	// The answer as the CDN gets it: not decompressed by the client.
	plain := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustPut(t, s, tt.key, []byte("tile"), tt.meta)

			info, err := raw.StatObject(t.Context(), bucket, s.Prefix()+tt.key, minio.StatObjectOptions{})
			if err != nil {
				t.Fatalf("raw StatObject(%q) error: %v", s.Prefix()+tt.key, err)
			}
			if info.ContentType != tt.meta.ContentType {
				t.Errorf("raw StatObject: got Content-Type %q, want %q", info.ContentType, tt.meta.ContentType)
			}
			if got := info.Metadata.Get("Cache-Control"); got != tt.meta.CacheControl {
				t.Errorf("raw StatObject: got Cache-Control %q, want %q", got, tt.meta.CacheControl)
			}

			u, err := raw.PresignedGetObject(t.Context(), bucket, s.Prefix()+tt.key, time.Minute, nil)
			if err != nil {
				t.Fatalf("presign GET: %v", err)
			}
			resp, err := plain.Get(u.String())
			if err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "tile" {
				t.Errorf("HTTP GET: got body %q, want the bytes put", body)
			}
			if got := resp.Header.Get("Content-Encoding"); got != tt.meta.ContentEncoding {
				t.Errorf("HTTP GET: got Content-Encoding %q, want %q", got, tt.meta.ContentEncoding)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: got status %s, want 200", u, resp.Status)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.meta.ContentType {
				t.Errorf("HTTP GET: got Content-Type %q, want %q", got, tt.meta.ContentType)
			}
			if got, ok := resp.Header["Cache-Control"]; tt.meta.CacheControl == "" && ok || tt.meta.CacheControl != "" && !slices.Equal(got, []string{tt.meta.CacheControl}) {
				t.Errorf("HTTP GET: got Cache-Control %q, want %q", got, tt.meta.CacheControl)
			}
		})
	}
}

// TestPrefix checks that the prefix is applied inside the store: objects
// land under it, List reports keys without it, and a store never sees the
// objects of a store whose prefix merely starts with its own.
func TestPrefix(t *testing.T) {
	raw, bucket := setup(t)
	base := testenv.Name(t, "p")
	var stores []*s3store.Store
	for _, prefix := range []string{base, "/" + base + "2/"} {
		s, err := s3store.NewFromEnv(os.LookupEnv, bucket, prefix)
		if err != nil {
			t.Fatalf("NewFromEnv(prefix %q) error: %v", prefix, err)
		}
		stores = append(stores, s)
	}
	t.Cleanup(func() {
		for _, s := range stores {
			if err := removePrefix(context.Background(), raw, bucket, s.Prefix()); err != nil {
				t.Errorf("empty prefix %s: %v", s.Prefix(), err)
			}
		}
	})
	if got, want := stores[0].Prefix(), base+"/"; got != want {
		t.Errorf("Prefix(): got %q, want %q", got, want)
	}
	if got, want := stores[1].Prefix(), base+"2/"; got != want {
		t.Errorf("Prefix() for %q: got %q, want %q", "/"+base+"2/", got, want)
	}
	for i, s := range stores {
		mustPut(t, s, "l/0.png", []byte(strconv.Itoa(i)), tilestore.Meta{ContentType: "image/png"})
	}
	if got := listKeys(t, stores[0], ""); !slices.Equal(got, []string{"l/0.png"}) {
		t.Errorf("List(\"\"): got %q, want [\"l/0.png\"] (its own object only, without prefix)", got)
	}
	var names []string
	for o := range raw.ListObjects(t.Context(), bucket, minio.ListObjectsOptions{Prefix: base, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("raw ListObjects error: %v", o.Err)
		}
		names = append(names, o.Key)
	}
	if want := []string{base + "/l/0.png", base + "2/l/0.png"}; !slices.Equal(names, want) {
		t.Errorf("objects in the bucket: got %q, want %q", names, want)
	}
	data, _, found, err := stores[0].Get(t.Context(), "l/0.png")
	if err != nil || !found || string(data) != "0" {
		t.Errorf("Get: got %q, found=%v, err=%v; want \"0\"", data, found, err)
	}
}

// TestListOddPrefixes lists prefixes with empty, "." or ".." segments,
// which MinIO refuses to list (List falls back to a shorter prefix) but
// which are ordinary prefixes on AWS.
func TestListOddPrefixes(t *testing.T) {
	s := newStore(t)
	for _, k := range []string{"a/..b.png", "a/.c.png", "a/b.png"} {
		mustPut(t, s, k, []byte(k), tilestore.Meta{ContentType: "image/png"})
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"a/..", []string{"a/..b.png"}},
		{"a/.", []string{"a/..b.png", "a/.c.png"}},
		{"a/../", nil},
		{"a/./", nil},
		{"a//", nil},
		{"/a", nil},
	}
	for _, tt := range tests {
		if got := listKeys(t, s, tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("List(%q): got %q, want %q", tt.prefix, got, tt.want)
		}
	}
}

// TestDeleteManyKeys deletes more keys than one DeleteObjects request takes,
// and checks the number of requests for that and for listing them.
func TestDeleteManyKeys(t *testing.T) {
	s := newStore(t)
	keys := make([]string, 2500)
	for i := range keys {
		keys[i] = fmt.Sprintf("layer/EPSG:4326/png/default/11/%d/%d.png", i/100, i)
	}
	putAll(t, s, keys, []byte("x"))
	slices.Sort(keys)

	t.Run("List pages", func(t *testing.T) {
		before := s.Requests()
		got := listKeys(t, s, "layer/")
		if !slices.Equal(got, keys) {
			t.Errorf("List: got %d keys, want the %d keys in lexical order", len(got), len(keys))
		}
		if d := s.Requests().Sub(before); d != (s3store.RequestCounts{List: 3}) {
			t.Errorf("List of %d keys: got requests %+v, want 3 LIST pages only", len(keys), d)
		}
	})

	t.Run("List stopped early leaves no goroutine", func(t *testing.T) {
		errStop := errors.New("stop")
		for _, stopAt := range []int{1, 999, 1000, 1001} {
			calls := 0
			err := s.List(t.Context(), "", func(tilestore.Object) error {
				if calls++; calls == stopAt {
					return errStop
				}
				return nil
			})
			if !errors.Is(err, errStop) || calls != stopAt {
				t.Errorf("List stopping at %d: got %d calls, error %v; want %d calls and %v", stopAt, calls, err, stopAt, errStop)
			}
		}
		if g := listingGoroutines(); len(g) > 0 {
			t.Errorf("after List returned: got %d minio-go listing goroutines, want none:\n%s", len(g), strings.Join(g, "\n\n"))
		}
	})

	t.Run("Delete", func(t *testing.T) {
		before := s.Requests()
		n, err := s.Delete(t.Context(), keys)
		if err != nil || n != len(keys) {
			t.Fatalf("Delete(%d keys): got %d, %v; want %d, nil", len(keys), n, err, len(keys))
		}
		if d := s.Requests().Sub(before); d != (s3store.RequestCounts{Delete: 3}) {
			t.Errorf("Delete of %d keys: got requests %+v, want 3 DeleteObjects requests only", len(keys), d)
		}
		if got := listKeys(t, s, ""); len(got) != 0 {
			t.Errorf("List after Delete: got %d keys (first %q), want none", len(got), got[0])
		}
	})
}

// listingGoroutines returns the stacks of goroutines running minio-go's
// listing code.
func listingGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "minio-go/v7.(*Client).listObjects") || strings.Contains(g, "minio-go/v7.(*Client).ListObjects") {
			found = append(found, g)
		}
	}
	return found
}

func TestRequestCounts(t *testing.T) {
	s := newStore(t)
	meta := tilestore.Meta{ContentType: "image/png"}
	ctx := t.Context()
	steps := []struct {
		name string
		do   func() error
		want s3store.RequestCounts
	}{
		{"Put", func() error { return s.Put(ctx, "a/1.png", []byte("x"), meta) }, s3store.RequestCounts{Put: 1}},
		{"Get", func() error { _, _, _, err := s.Get(ctx, "a/1.png"); return err }, s3store.RequestCounts{Get: 1}},
		{"Get absent", func() error { _, _, _, err := s.Get(ctx, "a/2.png"); return err }, s3store.RequestCounts{Get: 1}},
		{"Stat", func() error { _, _, err := s.Stat(ctx, "a/1.png"); return err }, s3store.RequestCounts{Head: 1}},
		{"List", func() error { return s.List(ctx, "a/", func(tilestore.Object) error { return nil }) }, s3store.RequestCounts{List: 1}},
		{"Delete", func() error { _, err := s.Delete(ctx, []string{"a/1.png", "a/2.png"}); return err }, s3store.RequestCounts{Delete: 1}},
		{"Delete nothing", func() error { _, err := s.Delete(ctx, nil); return err }, s3store.RequestCounts{}},
	}
	for _, st := range steps {
		before := s.Requests()
		if err := st.do(); err != nil {
			t.Fatalf("%s error: %v", st.name, err)
		}
		if got := s.Requests().Sub(before); got != st.want {
			t.Errorf("%s: got requests %+v, want %+v", st.name, got, st.want)
		}
	}
	if got, want := s.Requests().Total(), int64(6); got != want {
		t.Errorf("Requests().Total(): got %d, want %d", got, want)
	}
}

// storeErrors runs every Store method against s and returns their errors.
// Stat is reported separately: on AWS it cannot see a missing bucket.
func storeErrors(t *testing.T, s tilestore.Store) (errs map[string]error, statFound bool, statErr error) {
	t.Helper()
	ctx := t.Context()
	meta := tilestore.Meta{ContentType: "image/png"}
	errs = make(map[string]error)
	errs["Put"] = s.Put(ctx, "a/1.png", []byte("x"), meta)
	_, _, found, err := s.Get(ctx, "a/1.png")
	if found {
		t.Errorf("Get: got found=true, want false")
	}
	errs["Get"] = err
	errs["List"] = s.List(ctx, "", func(tilestore.Object) error { return nil })
	_, errs["Delete"] = s.Delete(ctx, []string{"a/1.png", "a/2.png"})
	_, statFound, statErr = s.Stat(ctx, "a/1.png")
	return errs, statFound, statErr
}

func TestMissingBucket(t *testing.T) {
	setup(t)
	bucket := testenv.Name(t, "missing")
	s, err := s3store.NewFromEnv(os.LookupEnv, bucket, "p")
	if err != nil {
		t.Fatalf("NewFromEnv error: %v", err)
	}
	errs, statFound, statErr := storeErrors(t, s)
	for op, err := range errs {
		t.Logf("%s: %v", op, err)
		if !apperr.Is(err, apperr.NotFound) || !strings.Contains(apperr.Message(err), bucket) {
			t.Errorf("%s on a missing bucket: got error %v (kind %v, message %q), want kind %v naming the bucket",
				op, err, apperr.KindOf(err), apperr.Message(err), apperr.NotFound)
		}
	}
	// MinIO names the error in a header; AWS answers HEAD with a bare 404.
	if statFound || statErr != nil && !apperr.Is(statErr, apperr.NotFound) {
		t.Errorf("Stat on a missing bucket: got found=%v, err=%v; want kind %v or found=false", statFound, statErr, apperr.NotFound)
	}
}

func TestWrongCredentials(t *testing.T) {
	_, bucket := setup(t)
	tests := []struct{ name, accessKey, secretKey string }{
		{"wrong secret key", os.Getenv("AWS_ACCESS_KEY_ID"), "not-the-secret"},
		{"unknown access key", "no-such-access-key", "whatever-secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := s3store.New(s3store.Options{
				Bucket:    bucket,
				Prefix:    testenv.Name(t, "c"),
				Endpoint:  endpoint(t),
				Region:    region(),
				AccessKey: tt.accessKey,
				SecretKey: tt.secretKey,
			})
			if err != nil {
				t.Fatalf("New error: %v", err)
			}
			start := time.Now()
			errs, statFound, statErr := storeErrors(t, s)
			if statFound {
				t.Errorf("Stat: got found=true, want an error")
			}
			errs["Stat"] = statErr
			for op, err := range errs {
				t.Logf("%s: %v", op, err)
				if err == nil || apperr.KindOf(err) != apperr.Internal || !strings.Contains(apperr.Message(err), "credentials") {
					t.Errorf("%s with %s: got error %v (kind %v, message %q), want kind %v saying to check the credentials",
						op, tt.name, err, apperr.KindOf(err), apperr.Message(err), apperr.Internal)
				}
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("five calls with %s took %v: authentication errors should not be retried", tt.name, d)
			}
		})
	}
}

// TestGetSizes reads objects of sizes around the edges of Get's buffer
// handling, up to one larger than minio-go's default part size would split.
func TestGetSizes(t *testing.T) {
	s := newStore(t)
	for _, size := range []int{0, 1, 64 << 10, 5<<20 + 3} {
		key := fmt.Sprintf("sizes/%d.bin", size)
		data := bytes.Repeat([]byte{byte(size)}, size)
		mustPut(t, s, key, data, tilestore.Meta{ContentType: "application/octet-stream"})
		got, _, found, err := s.Get(t.Context(), key)
		if err != nil || !found || !bytes.Equal(got, data) {
			t.Errorf("Get(%q): got %d bytes, found=%v, err=%v; want %d bytes", key, len(got), found, err, size)
		}
	}
}
