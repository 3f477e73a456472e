package cli

// Credentials: where they come from and where they may go.
//
//  1. A credentials file that group or others may access (mode & 0o077 != 0)
//     is refused, as ssh refuses such a private key (on systems with Unix
//     permissions).
//  2. A file's `default` entry is sent only to the command's own server
//     host (ownHost): the host of TILECACHE_URL, else of defaultServer.
//     Another host gets no default credentials: the request goes out
//     without them and a note on stderr says why.
//  3. Credentials sent over plain http:// to a host that is not this
//     machine's loopback draw a warning on stderr, once per run.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// defaultServer is --server's default.
const defaultServer = "http://127.0.0.1:8080"

// unixPermissions: the system has Unix file permissions (Windows reports
// made-up modes, so the check of rule 1 is skipped there).
const unixPermissions = runtime.GOOS != "windows" && runtime.GOOS != "js" && runtime.GOOS != "wasip1"

// ownHost is the host the command is configured for apart from a --server
// flag: that of TILECACHE_URL when set, else that of defaultServer. A
// credentials file's default entry is only sent to it.
func ownHost(lookupEnv func(string) (string, bool)) string {
	s := defaultServer
	if v, ok := lookupEnv("TILECACHE_URL"); ok {
		s = v
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// isLoopback reports whether host is this machine's loopback: localhost,
// 127.0.0.0/8 or ::1 (also as ::ffff:127.x.y.z).
func isLoopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback() // netip unmaps ::ffff:127.x.y.z
}

// netrcMatch is what a credentials file holds for a request.
type netrcMatch struct {
	file            string // the file read ("" when there is none)
	login, password string
	// defaultWithheld: no machine entry matched and the file's default
	// entry would have, but the host is not the command's own.
	defaultWithheld bool
}

// credentials finds a password for user at host in a netrc-style file
// ("machine H login U password P", or "default login U password P"); an
// empty user takes the entry's login. The default entry only applies when
// host is own (ownHost). A missing file holds nothing; a file that group
// or others may access is an error.
func credentials(path, host, own, user string) (netrcMatch, error) {
	if path == "" {
		return netrcMatch{}, nil
	}
	if strings.HasPrefix(path, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return netrcMatch{}, nil
		}
		path = filepath.Join(home, path[2:])
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return netrcMatch{}, nil
	}
	if err != nil {
		return netrcMatch{}, fmt.Errorf("read credentials: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return netrcMatch{}, fmt.Errorf("read credentials: %w", err)
	}
	if err := checkPrivate(path, fi); err != nil {
		return netrcMatch{}, err
	}
	var words []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		words = append(words, netrcTokens(line)...)
	}
	if err := sc.Err(); err != nil {
		return netrcMatch{}, fmt.Errorf("read credentials %s: %w", path, err)
	}
	type entry struct{ machine, login, password string }
	var entries []entry
	for i := 0; i < len(words); i++ {
		switch words[i] {
		case "machine":
			if i+1 < len(words) {
				entries = append(entries, entry{machine: words[i+1]})
				i++
			}
		case "default":
			entries = append(entries, entry{machine: "*"})
		case "login", "password":
			if i+1 < len(words) && len(entries) > 0 {
				if words[i] == "login" {
					entries[len(entries)-1].login = words[i+1]
				} else {
					entries[len(entries)-1].password = words[i+1]
				}
				i++
			}
		}
	}
	m := netrcMatch{file: path}
	for _, want := range []string{host, "*"} {
		for _, e := range entries {
			if e.machine != want || (user != "" && e.login != user) {
				continue
			}
			if want == "*" && (own == "" || !strings.EqualFold(host, own)) {
				m.defaultWithheld = true
				return m, nil
			}
			m.login, m.password = e.login, e.password
			return m, nil
		}
	}
	return m, nil
}

// checkPrivate refuses a credentials file that group or others may
// access.
func checkPrivate(path string, fi fs.FileInfo) error {
	if !unixPermissions {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("credentials file %s has mode %04o: group or others can access it, so it is not used (as ssh refuses such a private key); make it private with: chmod 600 %s", path, perm, shellQuote(path))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./~+,:@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// netrcTokens splits a line into words; a word in double quotes may hold
// spaces (and \" or \\).
func netrcTokens(line string) []string {
	var out []string
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		var b strings.Builder
		if line[i] == '"' {
			i++
			for i < len(line) && line[i] != '"' {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				b.WriteByte(line[i])
				i++
			}
			i++ // the closing quote
		} else {
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				b.WriteByte(line[i])
				i++
			}
		}
		out = append(out, b.String())
	}
	return out
}

// httpClient is c.HTTP (or a client with a one-minute timeout) whose
// transport warns before credentials leave over plain http:// for another
// machine; the transport sees every request, redirects included, with the
// Authorization header the client actually sends.
func (c *Client) httpClient() *http.Client {
	c.hcOnce.Do(func() {
		hc := http.Client{Timeout: time.Minute}
		if c.HTTP != nil {
			hc = *c.HTTP
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &plainHTTPWarning{base: base, c: c}
		c.hc = &hc
	})
	return c.hc
}

// plainHTTPWarning is a transport that warns, once per Client, before
// sending an Authorization header over http:// to a host that is not
// loopback.
type plainHTTPWarning struct {
	base http.RoundTripper
	c    *Client
}

func (t *plainHTTPWarning) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && req.Header.Get("Authorization") != "" && !isLoopback(req.URL.Hostname()) {
		t.c.warnOnce.Do(func() {
			var w io.Writer = os.Stderr
			if t.c.Stderr != nil {
				w = t.c.Stderr
			}
			fmt.Fprintf(w, "tilecache: warning: the password goes to %s over plain http://, unencrypted: anyone on the way can read it; use an https:// server URL if the server offers one\n", req.URL.Host)
		})
	}
	return t.base.RoundTrip(req)
}
