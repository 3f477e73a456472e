package cli_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"tilecache/internal/cli"
)

// restServer is a real HTTP server on 127.0.0.1 speaking enough of the
// REST seeding interface for `tasks` and a followed `seed` of layer
// "world"; it records the credentials of every request.
type restServer struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string // "user:password" per request, "" without credentials
	polls int
}

func newRESTServer(t *testing.T, tls bool) *restServer {
	t.Helper()
	s := &restServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		auth := ""
		if u, p, ok := r.BasicAuth(); ok {
			auth = u + ":" + p
		}
		s.auths = append(s.auths, auth)
		var rows string
		path := strings.TrimPrefix(r.URL.Path, "/geoserver/gwc") // GeoWebCache's base
		switch {
		case r.Method == http.MethodPost && path == "/rest/seed/world.json":
			rows = "[[0,10,10,7,0]]"
		case r.Method == http.MethodGet && path == "/rest/seed/world.json":
			s.polls++
			rows = "[[5,10,5,7,1]]"
			if s.polls > 1 {
				rows = "[[10,10,0,7,2]]"
			}
		case r.Method == http.MethodGet && path == "/rest/seed.json":
			rows = "[]"
		default:
			s.mu.Unlock()
			http.NotFound(w, r)
			return
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"long-array-array":%s}`, rows)
	})
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *restServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

// client is an HTTP client whose connections all go to the server,
// whatever host the URL names: a server URL may name gwc.example.test or
// 10.1.2.3 and still reach this real server on 127.0.0.1.
func (s *restServer) client() *http.Client {
	var tr *http.Transport
	if s.TLS != nil {
		tr = s.Server.Client().Transport.(*http.Transport).Clone()
	} else {
		tr = &http.Transport{}
	}
	tr.Proxy = nil
	addr := s.Listener.Addr().String()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

// clearEnv unsets the variables of the command for the test (TILECACHE_URL
// decides the command's own host).
func clearEnv(t *testing.T) {
	for _, k := range []string{"TILECACHE_URL", "TILECACHE_USER", "TILECACHE_PASSWORD", "TILECACHE_NETRC"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func writeNetrc(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return path
}

// TestCredentialsFileModes: a credentials file that group or others may
// access is refused with its name, its mode and the chmod that fixes it,
// before any request; a private one is used. With --password the file is
// not read, so its mode does not matter.
func TestCredentialsFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	clearEnv(t)
	for _, c := range []struct {
		name     string
		file     string
		mode     os.FileMode
		password bool // --password given
		refused  bool
	}{
		{"owner read-write", "netrc", 0o600, false, false},
		{"owner read-only", "netrc", 0o400, false, false},
		{"owner all", "netrc", 0o700, false, false},
		{"group readable", "netrc", 0o640, false, true},
		{"world readable", "netrc", 0o644, false, true},
		{"others readable only", "netrc", 0o604, false, true},
		{"group writable", "netrc", 0o620, false, true},
		{"everyone", "netrc", 0o666, false, true},
		{"name with a space is quoted", "my netrc", 0o644, false, true},
		{"not read with --password", "netrc", 0o644, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newRESTServer(t, false)
			netrc := writeNetrc(t, c.file, "machine 127.0.0.1 login admin password file-secret-123\n", c.mode)
			args := []string{"tasks", "--server", srv.URL, "--netrc", netrc}
			if c.password {
				args = append(args, "--user", "admin", "--password", "flag-secret")
			}
			r := runCLI(t, cli.Env{HTTP: srv.client()}, args...)
			if strings.Contains(r.stdout+r.stderr, "file-secret-123") {
				t.Errorf("the password is printed: %q", r.stderr)
			}
			if !c.refused {
				if r.code != cli.ExitDone {
					t.Fatalf("got exit %d, want %d; stderr %q", r.code, cli.ExitDone, r.stderr)
				}
				want := "admin:file-secret-123"
				if c.password {
					want = "admin:flag-secret"
				}
				if got := srv.requests(); len(got) != 1 || got[0] != want {
					t.Errorf("got credentials %q, want [%q]", got, want)
				}
				return
			}
			if r.code != cli.ExitError {
				t.Errorf("got exit %d, want %d", r.code, cli.ExitError)
			}
			fix := "chmod 600 " + netrc
			if strings.Contains(netrc, " ") {
				fix = "chmod 600 '" + netrc + "'"
			}
			for _, want := range []string{netrc, fmt.Sprintf("mode %04o", c.mode), fix} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("got stderr %q, want it to contain %q", r.stderr, want)
				}
			}
			if got := srv.requests(); len(got) != 0 {
				t.Errorf("got %d request(s) after the refusal, want 0", len(got))
			}
		})
	}
}

// TestDefaultEntryOnlyForOwnHost: a credentials file's default entry goes
// only to the command's own host, that of TILECACHE_URL, else 127.0.0.1
// (the built-in server); another host gets the request without
// credentials and a note on stderr. A machine entry is used for its host.
func TestDefaultEntryOnlyForOwnHost(t *testing.T) {
	srv := newRESTServer(t, false)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	local := fmt.Sprintf("http://127.0.0.1:%d", port)
	const defaultOnly = "default login admin password default-secret\n"
	for _, c := range []struct {
		name     string
		env      string // TILECACHE_URL; "" unset
		server   string // --server; "" none
		netrc    string
		wantAuth string // "" none
		wantNote bool
	}{
		{"built-in server host", "", local, defaultOnly, "admin:default-secret", false},
		{"built-in server, no --server", "", "", defaultOnly, "admin:default-secret", false},
		{"another host than the built-in", "", "http://gwc.example.test:8080", defaultOnly, "", true},
		{"localhost is another name than 127.0.0.1", "", fmt.Sprintf("http://localhost:%d", port), defaultOnly, "", true},
		{"host of TILECACHE_URL", "http://gwc.example.test:8080", "", defaultOnly, "admin:default-secret", false},
		{"host of TILECACHE_URL, other port and case", "http://gwc.example.test:9999", "http://GWC.example.test:8080", defaultOnly, "admin:default-secret", false},
		{"--server elsewhere than TILECACHE_URL", "http://gwc.example.test:8080", "http://other.example.test:8080", defaultOnly, "", true},
		{"127.0.0.1 once TILECACHE_URL names another host", "http://gwc.example.test:8080", local, defaultOnly, "", true},
		{"machine entry of the host", "", "http://gwc.example.test:8080", "machine gwc.example.test login ops password machine-secret\n" + defaultOnly, "ops:machine-secret", false},
		{"no entry at all", "", "http://gwc.example.test:8080", "machine other.example.test login x password y\n", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			if c.env != "" {
				t.Setenv("TILECACHE_URL", c.env)
			}
			before := len(srv.requests())
			netrc := writeNetrc(t, "netrc", c.netrc, 0o600)
			args := []string{"tasks", "--netrc", netrc}
			if c.server != "" {
				args = append(args, "--server", c.server)
			}
			r := runCLI(t, cli.Env{HTTP: srv.client()}, args...)
			if r.code != cli.ExitDone {
				t.Fatalf("got exit %d, want %d; stderr %q", r.code, cli.ExitDone, r.stderr)
			}
			got := srv.requests()[before:]
			if len(got) != 1 || got[0] != c.wantAuth {
				t.Errorf("got credentials %q, want [%q]", got, c.wantAuth)
			}
			note := strings.Contains(r.stderr, "no credentials for")
			if note != c.wantNote {
				t.Errorf("got note %v, want %v; stderr %q", note, c.wantNote, r.stderr)
			}
			if c.wantNote {
				for _, want := range []string{netrc, "default entry", "without them", "machine "} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("got note %q, want it to contain %q", r.stderr, want)
					}
				}
			}
			if strings.Contains(r.stderr, "secret") {
				t.Errorf("a password is printed: %q", r.stderr)
			}
		})
	}
}

// TestPlainHTTPWarning: credentials sent over plain http:// to a host
// that is not loopback draw a warning on stderr; loopback hosts, https
// and requests without credentials do not.
func TestPlainHTTPWarning(t *testing.T) {
	clearEnv(t)
	plain := newRESTServer(t, false)
	tls := newRESTServer(t, true)
	for _, c := range []struct {
		server   string
		tls      bool
		user     bool // --user and --password
		wantWarn bool
	}{
		{plain.URL, false, true, false},
		{"http://127.0.0.2:8080", false, true, false},
		{"http://127.255.255.254:8080", false, true, false},
		{"http://localhost:8080", false, true, false},
		{"http://LOCALHOST.:8080", false, true, false},
		{"http://[::1]:8080", false, true, false},
		{"http://[::ffff:127.0.0.1]:8080", false, true, false},
		{"http://gwc.example.test:8080", false, true, true},
		{"http://gwc.example.test/geoserver/gwc", false, true, true},
		{"http://10.1.2.3:8080", false, true, true},
		{"http://128.0.0.1:8080", false, true, true},
		{"http://[2001:db8::1]:8080", false, true, true},
		{"http://localhost.example.test:8080", false, true, true},
		{"http://gwc.example.test:8080", false, false, false},
		{"https://gwc.example.com:8443", true, true, false},
	} {
		name := c.server
		if !c.user {
			name += " without credentials"
		}
		t.Run(name, func(t *testing.T) {
			srv := plain
			if c.tls {
				srv = tls
			}
			before := len(srv.requests())
			args := []string{"tasks", "--server", c.server, "--netrc", ""}
			if c.user {
				args = append(args, "--user", "admin", "--password", "pass-secret")
			}
			r := runCLI(t, cli.Env{HTTP: srv.client()}, args...)
			if r.code != cli.ExitDone {
				t.Fatalf("got exit %d, want %d; stderr %q", r.code, cli.ExitDone, r.stderr)
			}
			if got := len(srv.requests()) - before; got != 1 {
				t.Errorf("got %d request(s), want 1", got)
			}
			warned := strings.Count(r.stderr, "warning:")
			want := 0
			if c.wantWarn {
				want = 1
			}
			if warned != want {
				t.Fatalf("got %d warning(s), want %d; stderr %q", warned, want, r.stderr)
			}
			if c.wantWarn {
				for _, s := range []string{"password", "plain http://", "unencrypted", "https://"} {
					if !strings.Contains(r.stderr, s) {
						t.Errorf("got warning %q, want it to contain %q", r.stderr, s)
					}
				}
			}
			if strings.Contains(r.stderr, "pass-secret") {
				t.Errorf("the password is printed: %q", r.stderr)
			}
		})
	}
}

// TestPlainHTTPWarningOncePerRun: a followed seed makes several requests
// with the credentials of the file over plain http:// to another host;
// the warning comes once, before the first.
func TestPlainHTTPWarningOncePerRun(t *testing.T) {
	clearEnv(t)
	srv := newRESTServer(t, false)
	netrc := writeNetrc(t, "netrc", "machine gwc.example.test login admin password file-secret\n", 0o600)
	r := runCLI(t, cli.Env{HTTP: srv.client()}, "seed", "world", "--server", "http://gwc.example.test:8080", "--netrc", netrc, "--progress", "lines", "--every", "100ms")
	if r.code != cli.ExitDone {
		t.Fatalf("got exit %d, want %d; stderr %q", r.code, cli.ExitDone, r.stderr)
	}
	got := srv.requests()
	if len(got) < 3 {
		t.Fatalf("got %d request(s), want at least 3 (submit and polls)", len(got))
	}
	for i, a := range got {
		if a != "admin:file-secret" {
			t.Errorf("request %d: got credentials %q, want %q", i, a, "admin:file-secret")
		}
	}
	if n := strings.Count(r.stderr, "warning:"); n != 1 {
		t.Errorf("got %d warning(s), want 1; stderr %q", n, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "tilecache: warning:") {
		t.Errorf("got stderr %q, want the warning first", r.stderr)
	}
}
