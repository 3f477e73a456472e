package cloudfront

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"

	"tilecache/internal/apperr"
)

// The error answers below are CloudFront's wire format (REST-XML); the
// server is a plain HTTP server on 127.0.0.1, because no CloudFront-
// compatible server can be made to throttle or fail on demand.

// scripted is a server that answers every request with status and body,
// and counts the requests.
type scripted struct {
	status int
	body   string
	hang   bool // wait for the client to give up instead
	calls  atomic.Int64
	last   atomic.Value // body of the last request
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	b, _ := io.ReadAll(r.Body)
	s.last.Store(string(b))
	if s.hang {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(s.status)
	io.WriteString(w, s.body)
}

func errorXML(code, message string) string {
	return fmt.Sprintf(`<?xml version="1.0"?>
<ErrorResponse xmlns="http://cloudfront.amazonaws.com/doc/2020-05-31/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>4bd7a1c2-0000-0000-0000-000000000000</RequestId></ErrorResponse>`, code, message)
}

// localClient returns a client for url that tries once.
func localClient(url string) *cf.Client {
	return cf.New(cf.Options{
		BaseEndpoint:     aws.String(url),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test-secret", ""),
		RetryMaxAttempts: 1,
	})
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   apperr.Kind
	}{
		{"TooManyInvalidationsInProgress", http.StatusBadRequest,
			errorXML("TooManyInvalidationsInProgress", "Processing your request will cause you to exceed the maximum number of in-progress wildcard invalidations."), apperr.Unavailable},
		{"Throttling", http.StatusBadRequest, errorXML("Throttling", "Rate exceeded"), apperr.Unavailable},
		{"ServiceUnavailable", http.StatusServiceUnavailable, errorXML("ServiceUnavailable", "try later"), apperr.Unavailable},
		{"InternalError", http.StatusInternalServerError, errorXML("InternalError", "oops"), apperr.Unavailable},
		{"BadGatewayHTML", http.StatusBadGateway, "<html><body>502 Bad Gateway</body></html>", apperr.Unavailable},
		{"TooManyRequests", http.StatusTooManyRequests, "slow down", apperr.Unavailable},
		{"NoSuchDistribution", http.StatusNotFound, errorXML("NoSuchDistribution", "The specified distribution does not exist."), apperr.Invalid},
		{"InvalidArgument", http.StatusBadRequest, errorXML("InvalidArgument", "Your request contains one or more invalid invalidation paths."), apperr.Invalid},
		{"AccessDenied", http.StatusForbidden, errorXML("AccessDenied", "User is not authorized to perform: cloudfront:CreateInvalidation"), apperr.Invalid},
		{"BatchTooLarge", http.StatusRequestEntityTooLarge, errorXML("BatchTooLarge", "Invalidation batch specified is too large."), apperr.Invalid},
		{"InconsistentQuantities", http.StatusBadRequest, errorXML("InconsistentQuantities", "The value of Quantity and the size of Items don't match."), apperr.Invalid},
		{"InvalidationBatchAlreadyExists", http.StatusConflict, errorXML("InvalidationBatchAlreadyExists", "The caller reference is already in use."), apperr.Invalid},
		{"UnknownClientError", http.StatusBadRequest, errorXML("SomethingNew", "no idea"), apperr.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(&scripted{status: tt.status, body: tt.body})
			defer srv.Close()
			inv := New(localClient(srv.URL), "E2EXAMPLE")
			id, err := inv.Invalidate(t.Context(), "ref-1", []string{"/demo:world/EPSG:4326/*"})
			if err == nil {
				t.Fatalf("got id %q and no error, want an error of kind %v", id, tt.want)
			}
			if got := apperr.KindOf(err); got != tt.want {
				t.Fatalf("got kind %v (%v), want %v", got, err, tt.want)
			}
			if msg := apperr.Message(err); !strings.HasPrefix(msg, "invalidate 1 path in CloudFront distribution E2EXAMPLE: ") {
				t.Errorf("message %q lacks the context", msg)
			}
		})
	}
}

func TestGetNotFound(t *testing.T) {
	srv := httptest.NewServer(&scripted{status: http.StatusNotFound, body: errorXML("NoSuchInvalidation", "The specified invalidation does not exist.")})
	defer srv.Close()
	_, err := New(localClient(srv.URL), "E2EXAMPLE").Get(t.Context(), "I2EXAMPLE")
	if got := apperr.KindOf(err); got != apperr.NotFound {
		t.Fatalf("got kind %v (%v), want %v", got, err, apperr.NotFound)
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	_, err := New(localClient(url), "E2EXAMPLE").Invalidate(t.Context(), "ref-1", []string{"/a"})
	if got := apperr.KindOf(err); got != apperr.Unavailable {
		t.Fatalf("got kind %v (%v), want %v", got, err, apperr.Unavailable)
	}
}

func TestDeadline(t *testing.T) {
	srv := httptest.NewServer(&scripted{hang: true})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := New(localClient(srv.URL), "E2EXAMPLE").Invalidate(ctx, "ref-1", []string{"/a"})
	if got := apperr.KindOf(err); got != apperr.Unavailable {
		t.Errorf("got kind %v (%v), want %v", got, err, apperr.Unavailable)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want an error wrapping context.DeadlineExceeded", err)
	}
}

func TestCanceledWhileWaiting(t *testing.T) {
	srv := httptest.NewServer(&scripted{hang: true})
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := New(localClient(srv.URL), "E2EXAMPLE").Invalidate(ctx, "ref-1", []string{"/a"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want an error wrapping context.Canceled", err)
	}
}

// TestRefusedBeforeSending checks requests CloudFront could never accept:
// they are refused as apperr.Invalid without a call.
func TestRefusedBeforeSending(t *testing.T) {
	many := make([]string, MaxPaths+1)
	for i := range many {
		many[i] = fmt.Sprintf("/demo:world/EPSG:4326/png/default/9/%d/0.png", i)
	}
	var wild []string
	for z := range MaxWildcardPaths + 1 {
		wild = append(wild, fmt.Sprintf("/demo:world/EPSG:4326/png/default/%d/*", z))
	}
	tests := []struct {
		name, ref, dist string
		paths           []string
	}{
		{"TooManyPaths", "r", "E2EXAMPLE", many},
		{"TooManyWildcards", "r", "E2EXAMPLE", wild},
		{"NoLeadingSlash", "r", "E2EXAMPLE", []string{"/ok", "demo:world/*"}},
		{"WildcardInside", "r", "E2EXAMPLE", []string{"/demo:world/*/png"}},
		{"BadEscape", "r", "E2EXAMPLE", []string{"/100%"}},
		{"TooLong", "r", "E2EXAMPLE", []string{"/" + strings.Repeat("é", MaxPathLength/6+1)}},
		{"EmptyCallerRef", "", "E2EXAMPLE", []string{"/a"}},
		{"NoDistribution", "r", "", []string{"/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{status: http.StatusCreated}
			srv := httptest.NewServer(s)
			defer srv.Close()
			_, err := New(localClient(srv.URL), tt.dist).Invalidate(t.Context(), tt.ref, tt.paths)
			if got := apperr.KindOf(err); got != apperr.Invalid {
				t.Errorf("got kind %v (%v), want %v", got, err, apperr.Invalid)
			}
			if n := s.calls.Load(); n != 0 {
				t.Errorf("got %d requests, want none", n)
			}
		})
	}
	// The limits themselves pass.
	s := &scripted{status: http.StatusBadRequest, body: errorXML("Throttling", "Rate exceeded")}
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, paths := range [][]string{many[:MaxPaths], wild[:MaxWildcardPaths]} {
		_, err := New(localClient(srv.URL), "E2EXAMPLE").Invalidate(t.Context(), "r", paths)
		if !apperr.Is(err, apperr.Unavailable) {
			t.Errorf("%d paths: got %v, want them sent (and throttled)", len(paths), err)
		}
	}
	if n := s.calls.Load(); n != 2 {
		t.Errorf("got %d requests, want 2", n)
	}
}
