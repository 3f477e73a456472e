// Package s3store is the tilestore.Store for S3-compatible object storage
// (AWS S3, MinIO and the like), built on minio-go. Objects are laid out
// exactly as GeoWebCache's S3 blob store lays them out, so a CDN or a static
// web server can serve the bucket directly.
//
// # Prefix
//
// A Store owns the keys below its Prefix and nothing else. The prefix is
// applied inside the store: callers pass keys without it, and List reports
// keys without it. With Prefix "tiles", Put("topp:states/…/2.png") writes
// the object "tiles/topp:states/…/2.png", and List("") on that store reports
// it as "topp:states/…/2.png". Leading and trailing slashes of the prefix are
// trimmed and exactly one "/" is appended, so "tiles", "/tiles/" and "tiles/"
// name the same namespace and a store with prefix "tiles" never sees the
// objects of a store with prefix "tiles2". Many stores can therefore share one
// bucket (tests give each store a unique prefix).
//
// # Keys
//
// S3 accepts almost any key. A key that is empty, not UTF-8, longer than
// 1,024 bytes once prefixed, or that holds a character XML 1.0 cannot carry
// (most control characters, which DeleteObjects could not name) is rejected
// with apperr.Invalid before any request is made. The store does not rewrite
// keys: "a/../b" is a key of its own on AWS (MinIO rejects such keys; that
// error is reported as apperr.Invalid too).
//
// # Meta
//
// Put stores Meta.ContentType as the object's Content-Type and
// Meta.CacheControl as its Cache-Control and Meta.ContentEncoding as its
// Content-Encoding (each omitted when empty), so that a CDN in front of
// the bucket serves tiles with the right headers. Get returns them from the same GET response as the content, so they always belong
// together.
//
// # Checksums
//
// List and Stat report an object's MD5 from its ETag, which S3 and MinIO
// set to the hex MD5 of the body of a single-part upload (every Put of a
// tile is one). The ETag of an upload in parts ("…-N") is not a digest:
// MD5 is then "" (unknown). A bucket whose ETags are not digests (AWS
// SSE-KMS or SSE-C, MinIO's encryption or compression) reports 32-hex
// values that match no content: a reseed then stores every tile again, as
// it would without checksums.
//
// # Errors
//
// Errors are wrapped with the operation and key, and classified at this
// boundary (nothing above it needs minio-go's types):
//   - a missing object is not an error (found=false, or ignored by Delete);
//   - a missing bucket is apperr.NotFound, with a message naming the bucket
//     (on AWS, Stat cannot tell a missing bucket from a missing object, since
//     HEAD responses have no body, and reports found=false);
//   - denied access and bad credentials are apperr.Internal (a deployment
//     fault, not the client's), with a message saying to check them;
//   - network failures, timeouts, throttling and S3 5xx answers (after the
//     store's retries) are apperr.Unavailable;
//   - a cancelled or expired context satisfies errors.Is(err, ctx.Err()).
//
// # Retries
//
// Each request is retried by Options.Retry, the policy of tilecache's AWS
// clients (awsconf.Retry: full-jitter exponential backoff, at most
// MaxAttempts attempts, no retry started that could end after Budget) when
// it fails in a way that may pass: SlowDown and other throttling (HTTP 503
// and 429), 500, 502, 504, RequestTimeout, and connections refused, reset or
// closed. The store retries, not minio-go (whose loop is switched off; see
// retryTransport), so that the policy is the SDK clients' own, a call's
// time is bounded, and each throttled attempt counts in
// metrics.AWSThrottled (service "s3") and each retry in metrics.AWSRetries.
// A request body is sent again from a copy (tiles and DeleteObjects bodies
// are small); a body over 32 MiB or of unknown length gets one attempt.
//
// # Requests
//
// Requests reports how many HTTP requests the store has sent, by kind. The
// counts are taken on the wire, so they include retries and failed
// attempts, and each page of a listing: they are what S3 bills.
package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/tilestore"
)

var _ tilestore.Store = (*Store)(nil)

const (
	maxKeyLen                = 1024 // S3's limit, in bytes, prefix included
	defaultRegion            = "us-east-1"
	defaultDeleteConcurrency = 4
	// maxIdleConnsPerHost is far above minio-go's 16 because seeding runs
	// many PUTs at once: with a small pool, connections beyond it are
	// closed after each request and TCP (and TLS) setup dominates.
	maxIdleConnsPerHost = 256
)

// Options configures a Store. Bucket is required; everything else has a
// default.
type Options struct {
	// Bucket must already exist.
	Bucket string
	// Prefix is the namespace of the store inside the bucket; see the
	// package documentation. Empty means the whole bucket.
	Prefix string
	// Endpoint is where to connect. The zero value means AWS S3 in Region;
	// see awsconf.ParseS3Endpoint. PathStyle selects path-style requests
	// (http://host/bucket/key), which MinIO and most non-AWS servers need.
	Endpoint awsconf.S3Endpoint
	// Region defaults to us-east-1. Setting it also spares minio-go a
	// GetBucketLocation request per bucket.
	Region string
	// AccessKey, SecretKey and SessionToken are static credentials. When
	// AccessKey is empty, credentials come from minio-go's chain instead:
	// the process environment (AWS_ACCESS_KEY_ID, …), the shared
	// credentials file, then IAM roles (ECS and EKS containers, EC2
	// instances).
	AccessKey, SecretKey, SessionToken string
	// DeleteConcurrency is how many DeleteObjects requests (of up to 1,000
	// keys each) one Delete keeps in flight. Default 4.
	DeleteConcurrency int
	// Retry is the retry policy of each request (see the package
	// documentation); zero fields take awsconf's defaults (10 attempts, a
	// 20 s budget, backoff from 200 ms doubling to 5 s).
	Retry awsconf.Retry
	// MaxRetries, when positive, is how many times a request is tried in
	// all (Retry.MaxAttempts); 1 disables retries.
	MaxRetries int
}

// Store is a tilestore.Store backed by an S3 bucket. It is safe for
// concurrent use.
type Store struct {
	client            *minio.Client
	core              minio.Core // the same client; GetObject in one request
	bucket            string
	prefix            string // "" or ends with "/"
	deleteConcurrency int
	counts            *counters
	transport         *http.Transport
}

// New returns a Store for opts. It makes no request: a missing bucket or
// bad credentials surface on first use.
func New(opts Options) (*Store, error) {
	if err := s3utils.CheckValidBucketNameStrict(opts.Bucket); err != nil {
		return nil, apperr.Invalidf("s3store: bucket name %q: %v", opts.Bucket, err)
	}
	prefix := strings.Trim(opts.Prefix, "/")
	if prefix != "" {
		prefix += "/"
		if err := checkName(prefix); err != nil {
			return nil, apperr.Invalidf("s3store: prefix %q: %s", opts.Prefix, err)
		}
	}
	region := opts.Region
	if region == "" {
		region = defaultRegion
	}
	ep := opts.Endpoint
	if ep.Host == "" {
		// No endpoint override: AWS S3 in region, as awsconf defines it.
		var err error
		if ep, err = awsconf.ParseS3Endpoint(func(string) (string, bool) { return "", false }, region); err != nil {
			return nil, fmt.Errorf("s3store: %w", err)
		}
	}
	var creds *credentials.Credentials
	switch {
	case opts.AccessKey != "" && opts.SecretKey == "":
		return nil, apperr.Invalidf("s3store: an access key is set but no secret key")
	case opts.AccessKey != "":
		creds = credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, opts.SessionToken)
	default:
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	tr, err := newTransport(ep.Secure)
	if err != nil {
		return nil, fmt.Errorf("s3store: HTTP transport: %w", err)
	}
	counts := new(counters)
	lookup := minio.BucketLookupDNS
	if ep.PathStyle {
		lookup = minio.BucketLookupPath
	}
	policy := opts.Retry.WithDefaults()
	if opts.MaxRetries > 0 {
		policy.MaxAttempts = opts.MaxRetries
	}
	client, err := minio.New(ep.Host, &minio.Options{
		Creds:        creds,
		Secure:       ep.Secure,
		Transport:    &retryTransport{base: &countingTransport{base: tr, counts: counts}, policy: policy},
		Region:       region,
		BucketLookup: lookup,
		// The store retries (retryTransport); minio-go tries once.
		MaxRetries: 1,
		// Lets Put send its own x-amz-checksum-crc32c header (minio-go
		// then adds no checksum of its own).
		TrailingHeaders: true,
	})
	if err != nil {
		return nil, apperr.Invalidf("s3store: endpoint %q: %v", ep.Host, err)
	}
	dc := opts.DeleteConcurrency
	if dc <= 0 {
		dc = defaultDeleteConcurrency
	}
	return &Store{
		client:            client,
		core:              minio.Core{Client: client},
		bucket:            opts.Bucket,
		prefix:            prefix,
		deleteConcurrency: dc,
		counts:            counts,
		transport:         tr,
	}, nil
}

// NewFromEnv returns a Store for bucket and prefix configured from the AWS
// conventions, read through lookup (config.AWS.Env in the programs):
// AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL; unset means AWS S3, path-style
// for any host outside amazonaws.com), AWS_REGION (or AWS_DEFAULT_REGION;
// default us-east-1), and AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN. Without an access key it falls back to minio-go's
// credential chain (see Options). Each of adjust may change the Options
// so made (the retry policy, say) before the store is built.
func NewFromEnv(lookup func(string) (string, bool), bucket, prefix string, adjust ...func(*Options)) (*Store, error) {
	get := func(k string) string { v, _ := lookup(k); return v }
	region := get("AWS_REGION")
	if region == "" {
		region = get("AWS_DEFAULT_REGION")
	}
	if region == "" {
		region = defaultRegion
	}
	ep, err := awsconf.ParseS3Endpoint(lookup, region)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "s3store: bad S3 endpoint configuration")
	}
	ak, sk := get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")
	if ak != "" && sk == "" {
		return nil, apperr.Invalidf("s3store: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
	}
	opts := Options{
		Bucket:       bucket,
		Prefix:       prefix,
		Endpoint:     ep,
		Region:       region,
		AccessKey:    ak,
		SecretKey:    sk,
		SessionToken: get("AWS_SESSION_TOKEN"),
	}
	for _, f := range adjust {
		f(&opts)
	}
	return New(opts)
}

// Bucket returns the bucket the store writes to.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the normalised prefix ("" or ending in "/") that the store
// puts in front of every key; Prefix()+key is the object's name in the
// bucket.
func (s *Store) Prefix() string { return s.prefix }

// Close releases the store's idle connections. It is optional (a Store
// normally lives as long as the process) and the store stays usable.
func (s *Store) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// Put stores data under key in a single PUT request (minio-go switches to a
// multipart upload only from 16 MiB), with meta as the object's
// Content-Type and Cache-Control. S3 makes the new object visible
// atomically.
//
// The payload is not signed (UNSIGNED-PAYLOAD), as minio-go does on TLS
// endpoints anyway. On a plain-HTTP endpoint minio-go would otherwise sign
// it in chunks (aws-chunked), which doubles the client's CPU per tile and
// adds to the server's. An x-amz-checksum-crc32c header, which S3 and
// MinIO check, guards the body instead, on every endpoint: CRC-32C runs
// in hardware, about 20 times faster than the Content-MD5 it replaces (5%
// of the seeder's CPU per tile).
func (s *Store) Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	name, err := s.objectName(key)
	if err != nil {
		return err
	}
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], crc32.Checksum(data, castagnoli))
	// The retry transport sends data again without copying it (rewindable).
	ctx = context.WithValue(ctx, putBodyKey{}, data)
	_, err = s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{
		ContentType:          meta.ContentType,
		CacheControl:         meta.CacheControl,
		ContentEncoding:      meta.ContentEncoding,
		DisableContentSha256: true,
		UserMetadata:         map[string]string{"x-amz-checksum-crc32c": base64.StdEncoding.EncodeToString(crc[:])},
	})
	if err != nil {
		return s.fail(ctx, "put "+strconv.Quote(key), err)
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Get returns the object's content and meta from one GET request; found is
// false when absent.
func (s *Store) Get(ctx context.Context, key string) ([]byte, tilestore.Meta, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, tilestore.Meta{}, false, fmt.Errorf("get %q: %w", key, err)
	}
	name, err := s.objectName(key)
	if err != nil {
		return nil, tilestore.Meta{}, false, err
	}
	body, info, h, err := s.core.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		if isNoSuchKey(err) {
			return nil, tilestore.Meta{}, false, nil
		}
		return nil, tilestore.Meta{}, false, s.fail(ctx, "get "+strconv.Quote(key), err)
	}
	defer body.Close()
	data, err := readBody(body, info.Size)
	if err != nil {
		return nil, tilestore.Meta{}, false, s.fail(ctx, "get "+strconv.Quote(key), err)
	}
	meta := tilestore.Meta{ContentType: h.Get("Content-Type"), CacheControl: h.Get("Cache-Control"), ContentEncoding: h.Get("Content-Encoding")}
	return data, meta, true, nil
}

// readBody reads a response body of the given Content-Length (-1: unknown)
// into a slice of exactly that size.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(r)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Stat reports whether key exists, its size and its MD5 (from the ETag),
// with one HEAD request.
func (s *Store) Stat(ctx context.Context, key string) (tilestore.Object, bool, error) {
	if err := ctx.Err(); err != nil {
		return tilestore.Object{}, false, fmt.Errorf("stat %q: %w", key, err)
	}
	name, err := s.objectName(key)
	if err != nil {
		return tilestore.Object{}, false, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		if isNoSuchKey(err) {
			return tilestore.Object{}, false, nil
		}
		return tilestore.Object{}, false, s.fail(ctx, "stat "+strconv.Quote(key), err)
	}
	return tilestore.Object{Key: key, Size: info.Size, Modified: info.LastModified, MD5: etagMD5(info.ETag)}, true, nil
}

// etagMD5 returns the MD5 an ETag stands for, in lower-case hex: the ETag
// without its quotes when that is 32 hex digits, else "" (an upload in
// parts, whose ETag ends in "-N", or no ETag).
func etagMD5(etag string) string {
	etag = strings.TrimSuffix(strings.TrimPrefix(etag, `"`), `"`)
	if len(etag) != 2*md5.Size {
		return ""
	}
	for i := range len(etag) {
		c := etag[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return ""
		}
	}
	return strings.ToLower(etag)
}

// objectName validates key and returns the object's name in the bucket.
func (s *Store) objectName(key string) (string, error) {
	if key == "" {
		return "", apperr.Invalidf("empty key")
	}
	name := s.prefix + key
	if err := checkName(name); err != nil {
		return "", apperr.Invalidf("key %q: %s", key, err)
	}
	return name, nil
}

// checkName returns why S3 (or minio-go's DeleteObjects, whose XML request
// body names the keys) cannot take name, or nil.
func checkName(name string) error {
	if len(name) > maxKeyLen {
		return fmt.Errorf("longer than %d bytes with the store's prefix", maxKeyLen)
	}
	if !utf8.ValidString(name) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range name {
		if !validXMLChar(r) {
			return fmt.Errorf("contains %U, which S3's XML requests cannot carry", r)
		}
	}
	return nil
}

// validXMLChar reports whether XML 1.0 allows r (https://www.w3.org/TR/xml/#charsets).
func validXMLChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// newTransport returns minio-go's default transport with a connection pool
// sized for many concurrent requests.
func newTransport(secure bool) (*http.Transport, error) {
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
	tr.MaxIdleConns = maxIdleConnsPerHost
	return tr, nil
}
