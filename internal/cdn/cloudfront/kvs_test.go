package cloudfront_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	kvs "github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"

	smithyendpoints "github.com/aws/smithy-go/endpoints"

	"tilecache/internal/cdn/cloudfront"
	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
)

// fakeKVS is a CloudFront KeyValueStore data plane in miniature: no
// emulator here serves that API (moto has none), so the adapter's wire
// format is checked against this fake, which follows its REST-JSON
// shapes: Describe and ListKeys read, UpdateKeys writes if If-Match is
// the current ETag (409 otherwise) and returns the next one.
type fakeKVS struct {
	mu      sync.Mutex
	arn     string
	etag    int
	values  map[string]string
	updates int
	batch   []int // keys changed by each UpdateKeys
}

func (f *fakeKVS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-ECDSA-P256-SHA256") {
		http.Error(w, `{"message":"not signed with SigV4A"}`, http.StatusForbidden)
		return
	}
	// The ARN, which holds a "/", is one escaped path segment.
	escArn, sub, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/key-value-stores/"), "/")
	arn, _ := url.PathUnescape(escArn)
	if arn != f.arn {
		http.Error(w, `{"message":"no such store"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", "etag-"+strconv.Itoa(f.etag))
	switch {
	case r.Method == http.MethodGet && sub == "":
		json.NewEncoder(w).Encode(map[string]any{"KvsARN": f.arn, "ItemCount": len(f.values), "TotalSizeInBytes": 0})
	case r.Method == http.MethodGet && sub == "keys":
		items := []map[string]string{}
		for k, v := range f.values {
			items = append(items, map[string]string{"Key": k, "Value": v})
		}
		json.NewEncoder(w).Encode(map[string]any{"Items": items})
	case r.Method == http.MethodPost && sub == "keys":
		if r.Header.Get("If-Match") != "etag-"+strconv.Itoa(f.etag) {
			w.Header().Del("ETag")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"message":"ETag mismatch"}`))
			return
		}
		var in struct {
			Puts    []struct{ Key, Value string }
			Deletes []struct{ Key string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Puts)+len(in.Deletes) > 50 {
			http.Error(w, `{"message":"bad update"}`, http.StatusBadRequest)
			return
		}
		for _, p := range in.Puts {
			// CloudFront refuses the whole update for one entry over
			// its limits.
			if len(p.Key) > 512 || len(p.Value) > 1024 {
				w.Header().Set("X-Amzn-Errortype", "ValidationException")
				http.Error(w, `{"message":"value too large"}`, http.StatusBadRequest)
				return
			}
		}
		for _, p := range in.Puts {
			f.values[p.Key] = p.Value
		}
		for _, d := range in.Deletes {
			delete(f.values, d.Key)
		}
		f.updates++
		f.batch = append(f.batch, len(in.Puts)+len(in.Deletes))
		f.etag++
		w.Header().Set("ETag", "etag-"+strconv.Itoa(f.etag))
		json.NewEncoder(w).Encode(map[string]any{"ItemCount": len(f.values), "TotalSizeInBytes": 0})
	default:
		http.Error(w, `{"message":"unexpected"}`, http.StatusBadRequest)
	}
}

// TestSyncEdgeGridSets: the edge's key-value store is made to hold the
// grid sets' levels through the KeyValueStore adapter: only what differs
// is written, keys of grid sets no longer configured are deleted, more
// than 50 changes go in several conditional updates, and a second sync
// changes nothing.
func TestSyncEdgeGridSets(t *testing.T) {
	arn := "arn:aws:cloudfront::123456789012:key-value-store/2b7e1f9e-0000-4000-8000-0123456789ab"
	g, _ := grid.Builtin("EPSG:900913")
	fake := &fakeKVS{arn: arn, values: map[string]string{
		"EPSG:900913": edgepath.NewTable([]*grid.GridSet{g})["EPSG:900913"].Encode(), // already right
		"Gone":        "1;1",
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}
	cfg.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
	})
	// The SDK puts the account id in the endpoint's host name; the fake
	// is reached by a resolver of its own.
	store := cloudfront.NewKeyValueStore(cfg, arn, func(o *kvs.Options) { o.EndpointResolverV2 = fixedEndpoint(srv.URL) })

	table := edgepath.NewTable(grid.Builtins())
	// 60 more grid sets: more than one update's worth.
	for i := range 60 {
		table["Custom"+strconv.Itoa(i)] = edgepath.Levels{Cols: []int64{int64(i + 1)}, Rows: []int64{2}}
	}
	changed, err := edgepath.Sync(t.Context(), store, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != len(table)-1+1 { // all but EPSG:900913, and Gone deleted
		t.Errorf("changed %d keys, want %d: %v", len(changed), len(table), changed)
	}
	if fake.updates != 2 || fake.batch[0] != 50 {
		t.Errorf("%d updates of %v keys, want 2, the first of 50", fake.updates, fake.batch)
	}
	if len(fake.values) != len(table) {
		t.Errorf("the store holds %d keys, want %d", len(fake.values), len(table))
	}
	for id, l := range table {
		if fake.values[id] != l.Encode() {
			t.Errorf("%s: stored %q, want %q", id, fake.values[id], l.Encode())
		}
	}
	if _, ok := fake.values["Gone"]; ok {
		t.Error("a grid set no longer configured is still stored")
	}
	if again, err := edgepath.Sync(t.Context(), store, table); err != nil || len(again) != 0 || fake.updates != 2 {
		t.Errorf("second sync: changed %v, %v, %d updates; want nothing", again, err, fake.updates)
	}
	// Another writer in between: the conditional update fails, nothing is
	// half written.
	table["Late"] = edgepath.Levels{Cols: []int64{1}, Rows: []int64{1}}
	stale := &staleStore{KeyValueStore: store}
	if _, err := edgepath.Sync(t.Context(), stale, table); err == nil {
		t.Error("an update against a stale ETag succeeded")
	}
}

// staleStore reads an ETag that is no longer current.
type staleStore struct{ *cloudfront.KeyValueStore }

func (s *staleStore) Read(ctx context.Context) (map[string]string, string, error) {
	v, _, err := s.KeyValueStore.Read(ctx)
	return v, "etag-old", err
}

// fixedEndpoint resolves every request to one URL.
type fixedEndpoint string

func (f fixedEndpoint) ResolveEndpoint(ctx context.Context, p kvs.EndpointParameters) (smithyendpoints.Endpoint, error) {
	u, err := url.Parse(string(f))
	if err != nil {
		return smithyendpoints.Endpoint{}, err
	}
	// Sign as the real endpoint asks: SigV4A, service cloudfront-keyvaluestore, any region.
	def, err := kvs.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, p)
	if err != nil {
		return smithyendpoints.Endpoint{}, err
	}
	def.URI = *u
	return def, nil
}

// TestSyncSkipsOversizeEntries: a grid set whose levels are over the
// store's 1,024 characters is left out and logged, and the rest of its
// batch is written (CloudFront refuses a whole update for one such
// value); a grid set whose stored levels are stale and whose new ones are
// too long loses its stale key, so the edge maps none of its paths with
// the old levels.
func TestSyncSkipsOversizeEntries(t *testing.T) {
	arn := "arn:aws:cloudfront::123456789012:key-value-store/2b7e1f9e-0000-4000-8000-0123456789ab"
	fake := &fakeKVS{arn: arn, values: map[string]string{"Grown": "1;1"}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
	})}
	var logged strings.Builder
	store := cloudfront.NewKeyValueStore(cfg, arn, func(o *kvs.Options) { o.EndpointResolverV2 = fixedEndpoint(srv.URL) }).
		WithLog(slog.New(slog.NewTextHandler(&logged, nil)))

	big := edgepath.Levels{}
	for z := range 150 {
		big.Cols, big.Rows = append(big.Cols, 1000000+int64(z)), append(big.Rows, 1000000+int64(z))
	}
	table := edgepath.Table{"Big": big, "Grown": big}
	for i := range 40 {
		table["Custom"+strconv.Itoa(i)] = edgepath.Levels{Cols: []int64{int64(i + 1)}, Rows: []int64{2}}
	}
	if _, err := edgepath.Sync(t.Context(), store, table); err != nil {
		t.Fatalf("a sync with an oversize entry failed: %v", err)
	}
	for id, l := range table {
		_, stored := fake.values[id]
		switch {
		case id == "Big" || id == "Grown":
			if stored {
				t.Errorf("%s: stored, want it left out (its value has %d characters)", id, len(l.Encode()))
			}
		case fake.values[id] != l.Encode():
			t.Errorf("%s: stored %q, want %q", id, fake.values[id], l.Encode())
		}
	}
	for _, want := range []string{"key=Big", "key=Grown", "limit of 1,024 characters", "stale_value_deleted=true"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logged.String())
		}
	}
}
