package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUseraddRole: -role writes the account's role into the accounts
// file; without it a new account is an administrator and an existing one
// keeps its role; an unknown role is refused before anything is written.
func TestUseraddRole(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users")
	add := func(args ...string) error {
		return run(t.Context(), append([]string{"useradd", "-file", file}, args...), strings.NewReader("pw\n"), new(strings.Builder))
	}
	if err := add("-name", "ann", "-role", "viewer"); err != nil {
		t.Fatal(err)
	}
	if err := add("-name", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := add("-name", "ann"); err != nil { // a new password, the role kept
		t.Fatal(err)
	}
	if err := add("-name", "cy", "-role", "root"); err == nil || !strings.Contains(err.Error(), `unknown role "root"`) {
		t.Errorf("-role root: %v", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ann:") || !strings.HasSuffix(lines[0], ":viewer") ||
		!strings.HasPrefix(lines[1], "bob:") || strings.Count(lines[1], ":") != 1 {
		t.Errorf("accounts file:\n%s\nwant ann with :viewer and bob without a role", b)
	}
}
