package auth_test

import (
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/auth"
)

// status runs one request with Basic credentials through a's middleware.
func status(tb testing.TB, a *auth.Authenticator, name, password string) int {
	tb.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/rest/seed.json", nil)
	req.SetBasicAuth(name, password)
	a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(rec, req)
	return rec.Code
}

func TestParse(t *testing.T) {
	h1, h2, h3 := MustHash(t, "one"), MustHash(t, "two"), MustHash(t, "three")
	input := "\uFEFF# accounts for tests\n" +
		"\n" +
		"alice:" + string(h1) + "\n" +
		"   # indented comment\n" +
		"  bob:" + string(h2) + ":admin  \r\n" +
		"\t\n" +
		"carol:" + string(h3) + ":user" // no final newline
	a, err := auth.Parse(strings.NewReader(input), "accounts")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tests := []struct {
		name, password string
		want           int
	}{
		{"alice", "one", http.StatusOK},
		{"bob", "two", http.StatusOK},
		{"carol", "three", http.StatusForbidden},
		{"alice", "two", http.StatusUnauthorized},
		{"# accounts for tests", "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		if got := status(t, a, tt.name, tt.password); got != tt.want {
			t.Errorf("%s/%s: got %d, want %d", tt.name, tt.password, got, tt.want)
		}
	}
}

func TestParseHtpasswdVariants(t *testing.T) {
	// htpasswd -B writes $2y$; other tools write $2a$ or $2b$.
	h := string(MustHash(t, "pw")) // $2a$04$...
	for _, prefix := range []string{"$2a$", "$2b$", "$2y$"} {
		line := "admin:" + prefix + h[4:] + "\n"
		a, err := auth.Parse(strings.NewReader(line), "f")
		if err != nil {
			t.Errorf("%s: Parse: %v", prefix, err)
			continue
		}
		if got, want := status(t, a, "admin", "pw"), http.StatusOK; got != want {
			t.Errorf("%s: got %d, want %d", prefix, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	h := string(MustHash(t, "pw"))
	tests := []struct {
		name    string
		input   string
		wantErr string   // substring of the error
		secrets []string // must not appear in the error
	}{
		{"plaintext password", "# GWC default\ngeowebcache:secured\n", `f:2: account "geowebcache": password is not a bcrypt hash`, []string{"secured"}},
		{"plaintext with role", "geowebcache:secured:admin\n", `f:1: account "geowebcache": password is not a bcrypt hash`, []string{"secured"}},
		{"apache md5", "a:$apr1$abcdefgh$ijklmnopqrstuvwxyz0123\n", "f:1: ", []string{"$apr1$"}},
		{"sha1", "a:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "f:1: ", []string{"{SHA}"}},
		{"crypt", "a:rl0uxDNOoWd9Q\n", "f:1: ", []string{"rl0uxDNOoWd9Q"}},
		{"truncated bcrypt", "a:" + h[:59] + "\n", `f:1: account "a": password is not a bcrypt hash`, nil},
		{"bcrypt with junk", "a:" + h[:59] + "!\n", `f:1: account "a": password is not a bcrypt hash`, nil},
		{"bcrypt cost too high", "a:$2a$99$" + h[7:] + "\n", `f:1: account "a": invalid bcrypt hash`, nil},
		{"bcrypt cost not digits", "a:$2a$+5$" + h[7:] + "\n", `f:1: account "a": password is not a bcrypt hash`, nil},
		{"no colon", "ok:" + h + "\n\njustaname\n", `f:3: want "name:bcrypt-hash" or "name:bcrypt-hash:role", found no ':'`, []string{"justaname"}},
		{"too many fields", "a:" + h + ":admin:extra\n", "f:1: want \"name:bcrypt-hash\" or \"name:bcrypt-hash:role\", found 4 fields", nil},
		{"unknown role", "a:" + h + ":root\n", `f:1: account "a": unknown role "root" (want viewer, operator, admin, or user for no access)`, nil},
		{"empty role", "a:" + h + ":\n", `f:1: account "a": unknown role ""`, nil},
		{"role in upper case", "a:" + h + ":ADMIN\n", `f:1: account "a": unknown role "ADMIN"`, nil},
		{"empty name", ":" + h + "\n", "f:1: empty account name", nil},
		{"name with space", "a b:" + h + "\n", `f:1: account name "a b" contains whitespace`, nil},
		{"name with control character", "a\x01b:" + h + "\n", `f:1: account name "a\x01b" contains a control character`, nil},
		{"name not UTF-8", "a\xffb:" + h + "\n", "f:1: account name is not valid UTF-8", nil},
		{"duplicate name", "a:" + h + "\nb:" + h + "\na:" + h + ":user\n", `f:3: duplicate account "a" (first defined on line 1)`, nil},
		{"no accounts", "# nothing here\n\n", "f: no accounts defined", nil},
		{"empty input", "", "f: no accounts defined", nil},
		{"line too long", "a:" + h + "\n" + strings.Repeat("x", 70000) + "\n", "f:2: line too long", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := auth.Parse(strings.NewReader(tt.input), "f")
			if err == nil {
				t.Fatalf("Parse: got Authenticator %v, want error containing %q", a, tt.wantErr)
			}
			if got := err.Error(); !strings.Contains(got, tt.wantErr) {
				t.Errorf("error: got %q, want it to contain %q", got, tt.wantErr)
			}
			for _, s := range tt.secrets {
				if got := err.Error(); strings.Contains(got, s) {
					t.Errorf("error: got %q, want it not to reveal %q", got, s)
				}
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users")
	if err := os.WriteFile(path, []byte("admin:"+string(MustHash(t, "pw"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.LoadFile(path)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if got, want := status(t, a, "admin", "pw"), http.StatusOK; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}

	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("# x\nadmin:secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = auth.LoadFile(bad)
	if got, want := errString(err), bad+":2: "; !strings.Contains(got, want) {
		t.Errorf("LoadFile bad: got %q, want it to contain %q", got, want)
	}

	missing := filepath.Join(dir, "missing")
	_, err = auth.LoadFile(missing)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile missing: got %v, want fs.ErrNotExist", err)
	}
	if got := errString(err); !strings.Contains(got, missing) {
		t.Errorf("LoadFile missing: got %q, want it to name %q", got, missing)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestHashPassword(t *testing.T) {
	h, err := auth.HashPassword("pw", bcrypt.MinCost)
	if err != nil {
		t.Fatalf("HashPassword: %v", err)
	}
	if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != bcrypt.MinCost {
		t.Errorf("cost: got (%d, %v), want (%d, nil)", cost, err, bcrypt.MinCost)
	}
	if err := bcrypt.CompareHashAndPassword([]byte(h), []byte("pw")); err != nil {
		t.Errorf("compare: got %v, want nil", err)
	}
	a, err := auth.Parse(strings.NewReader("admin:"+h), "f")
	if err != nil {
		t.Fatalf("Parse of HashPassword output: %v", err)
	}
	if got, want := status(t, a, "admin", "pw"), http.StatusOK; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}

	errTests := []struct {
		name     string
		password string
		cost     int
	}{
		{"empty password", "", bcrypt.MinCost},
		{"password over 72 bytes", strings.Repeat("x", 73), bcrypt.MinCost},
		{"cost above maximum", "pw", bcrypt.MaxCost + 1},
	}
	for _, tt := range errTests {
		if h, err := auth.HashPassword(tt.password, tt.cost); err == nil {
			t.Errorf("%s: got hash %q, want error", tt.name, h)
		}
	}
}

// mustRead returns the content of path.
func mustRead(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// checkFile asserts that path has mode 0600 and that no temporary file was
// left beside it.
func checkFile(tb testing.TB, path string) {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if got, want := fi.Mode().Perm(), fs.FileMode(0o600); got != want {
			tb.Errorf("mode: got %v, want %v", got, want)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			tb.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestAddAccountCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	if err := auth.AddAccount(path, "admin", "first", bcrypt.MinCost); err != nil {
		t.Fatalf("AddAccount: %v", err)
	}
	checkFile(t, path)
	if err := auth.AddAccount(path, "ops", "second", bcrypt.MinCost); err != nil {
		t.Fatalf("AddAccount second: %v", err)
	}
	checkFile(t, path)
	if got, want := strings.Count(mustRead(t, path), "\n"), 2; got != want {
		t.Errorf("lines: got %d, want %d", got, want)
	}
	a, err := auth.LoadFile(path)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	for _, c := range []struct {
		name, password string
		want           int
	}{
		{"admin", "first", http.StatusOK},
		{"ops", "second", http.StatusOK},
		{"ops", "first", http.StatusUnauthorized},
	} {
		if got := status(t, a, c.name, c.password); got != c.want {
			t.Errorf("%s/%s: got %d, want %d", c.name, c.password, got, c.want)
		}
	}
}

func TestAddAccountReplaces(t *testing.T) {
	hOther, hOld := string(MustHash(t, "other")), string(MustHash(t, "old"))
	tests := []struct {
		name      string
		content   string
		account   string
		keep      []string // lines that must survive byte for byte
		wantLines int
		want      int // status of account with the new password
	}{
		{
			name:      "replace keeps comments, other lines and order",
			content:   "# header\n\nother:" + hOther + "\nadmin:" + hOld + "\n# trailer\n",
			account:   "admin",
			keep:      []string{"# header\n\nother:" + hOther + "\n", "\n# trailer\n"},
			wantLines: 5,
			want:      http.StatusOK,
		},
		{
			name:      "replace keeps the user role",
			content:   "other:" + hOther + "\nviewer:" + hOld + ":user\n",
			account:   "viewer",
			keep:      []string{"other:" + hOther + "\n"},
			wantLines: 2,
			want:      http.StatusForbidden,
		},
		{
			name:      "plaintext line is replaced by a hash",
			content:   "geowebcache:secured\n",
			account:   "geowebcache",
			wantLines: 1,
			want:      http.StatusOK,
		},
		{
			name:      "duplicate lines collapse into one",
			content:   "admin:" + hOld + "\nother:" + hOther + "\nadmin:" + hOld + "\n",
			account:   "admin",
			keep:      []string{"other:" + hOther + "\n"},
			wantLines: 2,
			want:      http.StatusOK,
		},
		{
			name:      "append to file without final newline",
			content:   "other:" + hOther,
			account:   "admin",
			keep:      []string{"other:" + hOther + "\n"},
			wantLines: 2,
			want:      http.StatusOK,
		},
		{
			name:      "CRLF file",
			content:   "# c\r\nother:" + hOther + "\r\nadmin:" + hOld + "\r\n",
			account:   "admin",
			keep:      []string{"# c\r\nother:" + hOther + "\r\n"},
			wantLines: 3,
			want:      http.StatusOK,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "users")
			// A world-readable original must end up 0600 as well.
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := auth.AddAccount(path, tt.account, "new", bcrypt.MinCost); err != nil {
				t.Fatalf("AddAccount: %v", err)
			}
			checkFile(t, path)
			got := mustRead(t, path)
			for _, k := range tt.keep {
				if !strings.Contains(got, k) {
					t.Errorf("content: got %q, want it to contain %q", got, k)
				}
			}
			if n := strings.Count(got, "\n"); n != tt.wantLines {
				t.Errorf("lines: got %d, want %d (content %q)", n, tt.wantLines, got)
			}
			a, err := auth.LoadFile(path)
			if err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			if s := status(t, a, tt.account, "new"); s != tt.want {
				t.Errorf("new password: got %d, want %d", s, tt.want)
			}
			if s := status(t, a, tt.account, "old"); s != http.StatusUnauthorized {
				t.Errorf("old password: got %d, want %d", s, http.StatusUnauthorized)
			}
		})
	}
}

func TestAddAccountErrors(t *testing.T) {
	valid := "other:" + string(MustHash(t, "other")) + "\n"
	tests := []struct {
		name, content, account, password string
	}{
		{"name with colon", "", "a:b", "pw"},
		{"name with space", "", "a b", "pw"},
		{"name with tab", "", "a\tb", "pw"},
		{"name with newline", "", "a\nb", "pw"},
		{"empty name", "", "", "pw"},
		{"name starting with #", "", "#admin", "pw"},
		{"empty password", "", "admin", ""},
		{"password too long", "", "admin", strings.Repeat("p", 73)},
		{"unrelated bad line", valid + "broken:plaintext\n", "admin", "pw"},
		{"existing file has other name with bad hash", valid + "x:y\n", "other", "pw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "users")
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := auth.AddAccount(path, tt.account, tt.password, bcrypt.MinCost); err == nil {
				t.Fatalf("AddAccount: got nil, want error")
			}
			if tt.content == "" {
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("file: got stat error %v, want not created", err)
				}
				return
			}
			if got := mustRead(t, path); got != tt.content {
				t.Errorf("content: got %q, want unchanged %q", got, tt.content)
			}
			checkFile(t, path)
		})
	}
}

func TestAddAccountMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodir", "users")
	if err := auth.AddAccount(path, "admin", "pw", bcrypt.MinCost); err == nil {
		t.Fatalf("AddAccount: got nil, want error")
	}
}
