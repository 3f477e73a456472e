package s3store_test

// Tests that need no S3: configuration, key validation and what happens when
// the endpoint cannot be reached.

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// TestUnreachable needs no S3: nothing listens on port 1.
func TestUnreachable(t *testing.T) {
	s, err := s3store.New(s3store.Options{
		Bucket:     "tiles",
		Endpoint:   awsconf.S3Endpoint{Host: "127.0.0.1:1", PathStyle: true},
		AccessKey:  "k",
		SecretKey:  "s",
		MaxRetries: 1,
	})
	if err != nil {
		t.Fatalf("New error: %v", err)
	}
	errs, _, statErr := storeErrors(t, s)
	errs["Stat"] = statErr
	for op, err := range errs {
		t.Logf("%s: %v", op, err)
		if !apperr.Is(err, apperr.Unavailable) {
			t.Errorf("%s with S3 unreachable: got error %v (kind %v), want kind %v", op, err, apperr.KindOf(err), apperr.Unavailable)
		}
	}
}

// TestKeysRejected needs no S3: invalid keys fail before any request.
func TestKeysRejected(t *testing.T) {
	s, err := s3store.New(s3store.Options{
		Bucket:     "tiles",
		Prefix:     "p",
		Endpoint:   awsconf.S3Endpoint{Host: "127.0.0.1:1", PathStyle: true},
		AccessKey:  "k",
		SecretKey:  "s",
		MaxRetries: 1,
	})
	if err != nil {
		t.Fatalf("New error: %v", err)
	}
	ctx := t.Context()
	for _, key := range []string{"", "\xff.png", "a\x01b.png", "a\x00b", strings.Repeat("a", 1023)} {
		t.Run(strconv.Quote(key), func(t *testing.T) {
			if err := s.Put(ctx, key, []byte("x"), tilestore.Meta{ContentType: "image/png"}); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Put(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
			if _, _, _, err := s.Get(ctx, key); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Get(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
			if _, _, err := s.Stat(ctx, key); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Stat(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
			if _, err := s.Delete(ctx, []string{"ok.png", key}); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Delete(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
		})
	}
	if got := s.Requests(); got.Total() != 0 {
		t.Errorf("requests sent for invalid keys: got %+v, want none", got)
	}
	// A listing prefix longer than any key matches nothing, without a request.
	if err := s.List(ctx, strings.Repeat("a", 1100), func(tilestore.Object) error { return errors.New("called") }); err != nil {
		t.Errorf("List of an over-long prefix: got %v, want nil", err)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name       string
		opts       s3store.Options
		wantPrefix string
		wantErr    bool
	}{
		{"defaults", s3store.Options{Bucket: "tiles"}, "", false},
		{"prefix gets a slash", s3store.Options{Bucket: "tiles", Prefix: "cache"}, "cache/", false},
		{"prefix slashes trimmed", s3store.Options{Bucket: "tiles", Prefix: "/cache/v1//"}, "cache/v1/", false},
		{"only slashes", s3store.Options{Bucket: "tiles", Prefix: "/"}, "", false},
		{"static keys", s3store.Options{Bucket: "tiles", AccessKey: "a", SecretKey: "s", SessionToken: "t"}, "", false},
		{"no bucket", s3store.Options{}, "", true},
		{"invalid bucket name", s3store.Options{Bucket: "Tiles_Bucket"}, "", true},
		{"access key without secret", s3store.Options{Bucket: "tiles", AccessKey: "a"}, "", true},
		{"prefix not UTF-8", s3store.Options{Bucket: "tiles", Prefix: "\xff"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := s3store.New(tt.opts)
			if tt.wantErr {
				if !apperr.Is(err, apperr.Invalid) {
					t.Errorf("New(%+v): got error %v, want kind %v", tt.opts, err, apperr.Invalid)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%+v) error: %v", tt.opts, err)
			}
			if s.Prefix() != tt.wantPrefix || s.Bucket() != tt.opts.Bucket {
				t.Errorf("New(%+v): got bucket %q, prefix %q; want %q, %q", tt.opts, s.Bucket(), s.Prefix(), tt.opts.Bucket, tt.wantPrefix)
			}
		})
	}
}

func TestNewFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr bool
	}{
		{"nothing set: AWS, credential chain", map[string]string{}, false},
		{"MinIO", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "eu-west-1"}, false},
		{"session token", map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}, false},
		{"generic endpoint", map[string]string{"AWS_ENDPOINT_URL": "https://s3.example.com"}, false},
		{"endpoint not a URL", map[string]string{"AWS_ENDPOINT_URL_S3": "127.0.0.1:9000"}, true},
		{"endpoint not http", map[string]string{"AWS_ENDPOINT_URL_S3": "ftp://127.0.0.1"}, true},
		{"access key without secret", map[string]string{"AWS_ACCESS_KEY_ID": "a"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			s, err := s3store.NewFromEnv(lookup, "tiles", "cache")
			if tt.wantErr {
				if !apperr.Is(err, apperr.Invalid) {
					t.Errorf("NewFromEnv(%v): got error %v, want kind %v", tt.env, err, apperr.Invalid)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewFromEnv(%v) error: %v", tt.env, err)
			}
			if s.Bucket() != "tiles" || s.Prefix() != "cache/" {
				t.Errorf("NewFromEnv: got bucket %q, prefix %q; want %q, %q", s.Bucket(), s.Prefix(), "tiles", "cache/")
			}
		})
	}
}
