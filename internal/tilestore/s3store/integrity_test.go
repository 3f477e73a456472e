package s3store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/awsconf"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// putProxy is a reverse proxy in front of the S3 endpoint that records the
// headers of PUT requests and, when corrupt is set, flips one byte of their
// bodies on the way, as a faulty network or middlebox would.
type putProxy struct {
	mu      sync.Mutex
	headers []http.Header
	corrupt bool
}

func (p *putProxy) start(t *testing.T, target awsconf.S3Endpoint) awsconf.S3Endpoint {
	t.Helper()
	if target.Secure {
		t.Skip("the S3 endpoint uses TLS; the proxy speaks plain HTTP")
	}
	to := &url.URL{Scheme: "http", Host: target.Host}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = to.Scheme, to.Host
		r.Out.Host = r.In.Host // the client signed the proxy's host
		if r.In.Method != http.MethodPut {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.headers = append(p.headers, r.In.Header.Clone())
		if !p.corrupt {
			return
		}
		body, err := io.ReadAll(r.Out.Body)
		if err != nil {
			t.Errorf("proxy: read PUT body: %v", err)
			return
		}
		if len(body) > 0 {
			body[len(body)/2] ^= 0x01
		}
		r.Out.Body = io.NopCloser(bytes.NewReader(body))
	}}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	ep := target
	ep.Host = strings.TrimPrefix(srv.URL, "http://")
	return ep
}

// crc32c is the base64 of data's big-endian CRC-32C, as S3 wants it.
func crc32c(data []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	return base64.StdEncoding.EncodeToString(b[:])
}

// TestPutIntegrity: PUTs to a plain-HTTP endpoint send the body as it is
// (not aws-chunked), unsigned, with an x-amz-checksum-crc32c header the
// server checks, so a body changed on the way is refused and nothing is
// stored.
func TestPutIntegrity(t *testing.T) {
	_, bucket := setup(t)
	direct := newStore(t) // the same prefix, read directly
	p := &putProxy{}
	s, err := s3store.New(s3store.Options{
		Bucket: bucket, Prefix: direct.Prefix(), Endpoint: p.start(t, endpoint(t)), Region: region(),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: os.Getenv("AWS_SESSION_TOKEN"),
		MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data := bytes.Repeat([]byte("tile bytes "), 9000) // ~99 KB: more than one 64 KiB aws-chunk
	meta := tilestore.Meta{ContentType: "image/png"}

	if err := s.Put(ctx, "ok.png", data, meta); err != nil {
		t.Fatalf("Put through the proxy: %v", err)
	}
	got, _, found, err := direct.Get(ctx, "ok.png")
	if err != nil || !found || !bytes.Equal(got, data) {
		t.Fatalf("Get after Put = %d bytes, found %v, err %v; want the %d bytes put", len(got), found, err, len(data))
	}
	p.mu.Lock()
	if len(p.headers) != 1 {
		t.Fatalf("proxy saw %d PUTs, want 1", len(p.headers))
	}
	h := p.headers[0]
	p.corrupt = true
	p.mu.Unlock()
	if v := h.Get("X-Amz-Content-Sha256"); v != "UNSIGNED-PAYLOAD" {
		t.Errorf("X-Amz-Content-Sha256 = %q, want UNSIGNED-PAYLOAD", v)
	}
	if sum := h.Get("X-Amz-Checksum-Crc32c"); sum == "" {
		t.Error("no x-amz-checksum-crc32c on a PUT to a plain-HTTP endpoint")
	} else if want := crc32c(data); sum != want {
		t.Errorf("x-amz-checksum-crc32c = %q, want %q", sum, want)
	}
	if h.Get("X-Amz-Trailer") != "" {
		t.Errorf("X-Amz-Trailer = %q: the checksum was sent as a trailer", h.Get("X-Amz-Trailer"))
	}
	if enc := h.Get("Content-Encoding"); strings.Contains(enc, "aws-chunked") {
		t.Errorf("Content-Encoding = %q: the body was sent in signed chunks", enc)
	}

	err = s.Put(ctx, "corrupted.png", data, meta)
	if err == nil {
		t.Fatal("Put of a body corrupted on the way succeeded")
	}
	t.Logf("corrupted PUT: %v", err)
	if _, _, found, gerr := direct.Get(ctx, "corrupted.png"); gerr != nil || found {
		t.Errorf("after the refused PUT: found %v, err %v; want nothing stored", found, gerr)
	}
}
