package upstream_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"tilecache/internal/source/upstream"
)

// The secrets of secretURL: none may appear in an error.
const (
	secretUser   = "wmsuser"
	secretPass   = "s3cretpw"
	secretKey    = "K3Y-SECRET"
	secretMap    = "hidden.map"
	secretSigned = "S1GNED-SECRET" // in the query of a redirect's target
)

var secrets = []string{secretUser, secretPass, secretKey, secretMap, secretSigned}

// secretURL is an upstream URL on srv with a password and secret query
// values.
func secretURL(srv *httptest.Server) string {
	return "http://" + secretUser + ":" + secretPass + "@" + srv.Listener.Addr().String() +
		"/wms?apikey=" + secretKey + "&map=%2Fsrv%2F" + secretMap
}

// checkRedacted fails the test unless err, and every error it wraps, is
// free of the secrets, and err's message names the upstream's host and
// path, the parameter names and what the wants say.
func checkRedacted(t *testing.T, err error, srv *httptest.Server, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	var walk func(e error)
	walk = func(e error) {
		if e == nil {
			return
		}
		for _, s := range secrets {
			if strings.Contains(e.Error(), s) {
				t.Errorf("error %T carries %q: %s", e, s, e)
			}
		}
		if ue, ok := e.(*upstream.Error); ok && strings.Contains(ue.URL+ue.Msg, secretPass) {
			t.Errorf("upstream.Error fields carry the password: %+v", ue)
		}
		switch x := e.(type) {
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	msg := err.Error()
	for _, w := range append([]string{srv.Listener.Addr().String(), "apikey=", "map="}, wants...) {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
}

// checkCredentials answers 401 unless the request carries the URL's user,
// password and key: redacting what is logged must not change what is sent.
func checkCredentials(w http.ResponseWriter, r *http.Request) bool {
	user, pass, _ := r.BasicAuth()
	if user != secretUser || pass != secretPass || r.URL.Query().Get("apikey") != secretKey {
		http.Error(w, "who are you", http.StatusUnauthorized)
		return false
	}
	return true
}

// resetConn closes the request's connection with a TCP reset.
func resetConn(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func fetch(t *testing.T, o upstream.HTTPOptions, u string) error {
	t.Helper()
	c, err := upstream.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c.Fetch(t.Context(), u, func([]byte, string) error { return nil })
}

// fastRetry retries once, at once.
var fastRetry = upstream.HTTPOptions{Addresses: loopback, Retries: 1, RetryBackoff: time.Millisecond}

func TestFetchErrorsRedactTheURL(t *testing.T) {
	t.Run("HTTP 500 with a body", redactHTTP500WithABody)
	t.Run("connection reset", redactConnectionReset)
	t.Run("timeout", redactTimeout)
	t.Run("connection refused", redactConnectionRefused)
	t.Run("redirect followed, then a reset", redactRedirectFollowedThenAReset)
	t.Run("redirect followed, then HTTP 500", redactRedirectFollowedThenHTTP500)
	t.Run("redirect to another host", redactRedirectToAnotherHost)
	t.Run("redirect to a Location that does not parse", redactRedirectToALocationThatDoesNotParse)
	t.Run("answer too large", redactAnswerTooLarge)
	t.Run("cancelled", redactCancelled)
}

func redactHTTP500WithABody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if checkCredentials(w, r) {
			http.Error(w, "map server exploded", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	err := fetch(t, fastRetry, secretURL(srv))
	ue, ok := errors.AsType[*upstream.Error](err)
	if !ok || ue.Status != 500 || ue.Msg != "map server exploded" {
		t.Fatalf("got %v, want HTTP 500 with the upstream's message", err)
	}
	if want := "http://" + srv.Listener.Addr().String() + "/wms?apikey=REDACTED&map=REDACTED"; ue.URL != want {
		t.Errorf("URL %q, want %q", ue.URL, want)
	}
	checkRedacted(t, err, srv, "HTTP 500", "map server exploded", "/wms?")
}

func redactConnectionReset(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if checkCredentials(w, r) {
			resetConn(t, w)
		}
	}))
	defer srv.Close()
	err := fetch(t, fastRetry, secretURL(srv))
	if _, ok := errors.AsType[*url.Error](err); !ok {
		t.Fatalf("got %v, want the HTTP client's *url.Error", err)
	}
	checkRedacted(t, err, srv, "/wms?")
}

func redactTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	err := fetch(t, upstream.HTTPOptions{Addresses: loopback, Retries: -1, Timeout: 50 * time.Millisecond}, secretURL(srv))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want it to be context.DeadlineExceeded", err)
	}
	if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
		t.Errorf("got %v, want a net.Error that is a timeout", err)
	}
	checkRedacted(t, err, srv, "/wms?")
}

func redactConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := secretURL(srv)
	srv.Close()
	checkRedacted(t, fetch(t, fastRetry, u), srv, "/wms?")
}

// The client follows a redirect to the same host and port: an error
// after it carries the target's URL, with its own query.
func redactRedirectFollowedThenAReset(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !checkCredentials(w, r) {
			return
		}
		if r.URL.Path == "/wms" {
			http.Redirect(w, r, "/moved?apikey="+secretKey+"&sig="+secretSigned, http.StatusFound)
			return
		}
		resetConn(t, w)
	}))
	defer srv.Close()
	err := fetch(t, fastRetry, secretURL(srv))
	ue, ok := errors.AsType[*url.Error](err)
	if !ok || !strings.Contains(ue.URL, "/moved?") {
		t.Fatalf("got %v, want the client's *url.Error for the redirect's target", err)
	}
	checkRedacted(t, err, srv, "/moved?", "sig=REDACTED")
}

func redactRedirectFollowedThenHTTP500(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !checkCredentials(w, r) {
			return
		}
		if r.URL.Path == "/wms" {
			http.Redirect(w, r, "/moved?apikey="+secretKey+"&sig="+secretSigned, http.StatusMovedPermanently)
			return
		}
		http.Error(w, "moved and broken", http.StatusInternalServerError)
	}))
	defer srv.Close()
	err := fetch(t, fastRetry, secretURL(srv))
	if ue, ok := errors.AsType[*upstream.Error](err); !ok || ue.Status != 500 {
		t.Fatalf("got %v, want HTTP 500", err)
	}
	checkRedacted(t, err, srv, "moved and broken", "/wms?")
}

// A redirect to another host is not followed; the client's error would
// carry the Location as it is.
func redactRedirectToAnotherHost(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://"+secretUser+":"+secretPass+"@"+other.Listener.Addr().String()+
			"/x?apikey="+secretKey+"&sig="+secretSigned)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	err := fetch(t, fastRetry, secretURL(srv))
	if ue, ok := errors.AsType[*upstream.Error](err); !ok || ue.Status != http.StatusTemporaryRedirect {
		t.Fatalf("got %v, want an *upstream.Error for HTTP 307", err)
	}
	checkRedacted(t, err, srv, "another host", other.Listener.Addr().String())
}

// A Location that does not parse: the client's own error quotes it.
func redactRedirectToALocationThatDoesNotParse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/x%zz?apikey="+secretKey+"&sig="+secretSigned)
		w.WriteHeader(http.StatusFound)
	}))
	defer srv.Close()
	err := fetch(t, fastRetry, secretURL(srv))
	if ue, ok := errors.AsType[*upstream.Error](err); !ok || ue.Status != http.StatusFound {
		t.Fatalf("got %v, want an *upstream.Error for HTTP 302", err)
	}
	checkRedacted(t, err, srv, "does not parse")
}

func redactAnswerTooLarge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, 4096))
	}))
	defer srv.Close()
	c, err := upstream.NewClient(fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	err = c.FetchLimited(t.Context(), secretURL(srv), 100, func([]byte, string) error { return nil })
	checkRedacted(t, err, srv, "more than")
}

func redactCancelled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, err := upstream.NewClient(fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = c.Fetch(ctx, secretURL(srv), func([]byte, string) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	checkRedacted(t, err, srv, "/wms?")
}

// TestErrorRedactsItsURL: an *upstream.Error made elsewhere with a whole
// URL still prints it redacted.
func TestErrorRedactsItsURL(t *testing.T) {
	for _, status := range []int{200, 503} {
		e := &upstream.Error{URL: "http://u:" + secretPass + "@h/wms?apikey=" + secretKey, Status: status, Msg: "m"}
		if s := e.Error(); strings.Contains(s, secretPass) || strings.Contains(s, secretKey) || !strings.Contains(s, "http://h/wms?apikey=REDACTED") {
			t.Errorf("status %d: %q", status, s)
		}
	}
}
