package auth

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// LoadFile reads an accounts file (format as for Parse) and returns an
// Authenticator for its accounts. Errors name the file and, for content
// errors, the line.
func LoadFile(path string) (*Authenticator, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load accounts: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads accounts in htpasswd style from r; name is used in error
// messages (usually the file path).
//
// Each line is
//
//	name:bcrypt-hash
//	name:bcrypt-hash:role
//
// where role is "viewer", "operator" or "admin" (the default, so that a
// file written before roles existed keeps its administrators), or "user":
// kept for compatibility, an account that authenticates and is refused
// every request (403).
// Blank lines and lines whose first non-blank character is '#' are ignored;
// leading and trailing whitespace and a CR before the newline are removed.
// Hashes must be bcrypt ($2a$, $2b$ or $2y$, as written by HashPassword or
// "htpasswd -B"); plaintext passwords and other schemes are rejected.
//
// An error has the form "name:line: problem" and never quotes the hash
// field, which might be a plaintext password. Parse fails on a name that
// occurs twice and when there are no accounts at all.
func Parse(r io.Reader, name string) (*Authenticator, error) {
	accounts, err := parseAccounts(r, name)
	if err != nil {
		return nil, err
	}
	return New(accounts), nil
}

func parseAccounts(r io.Reader, name string) ([]Account, error) {
	var accounts []Account
	seen := make(map[string]int) // account name → line number
	sc := bufio.NewScanner(r)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if lineNo == 1 {
			line = strings.TrimPrefix(line, "\uFEFF") // byte order mark
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		acc, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lineNo, err)
		}
		if first, dup := seen[acc.Name]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate account %q (first defined on line %d)", name, lineNo, acc.Name, first)
		}
		seen[acc.Name] = lineNo
		accounts = append(accounts, acc)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line too long", name, lineNo+1)
		}
		return nil, fmt.Errorf("read accounts %s: %w", name, err)
	}
	if len(accounts) == 0 {
		return nil, fmt.Errorf("%s: no accounts defined", name)
	}
	return accounts, nil
}

// parseLine parses one non-blank, non-comment, trimmed line.
func parseLine(line string) (Account, error) {
	fields := strings.Split(line, ":")
	if len(fields) < 2 {
		return Account{}, errors.New(`want "name:bcrypt-hash" or "name:bcrypt-hash:role", found no ':'`)
	}
	if len(fields) > 3 {
		return Account{}, fmt.Errorf(`want "name:bcrypt-hash" or "name:bcrypt-hash:role", found %d fields`, len(fields))
	}
	if err := CheckName(fields[0]); err != nil {
		return Account{}, err
	}
	acc := Account{Name: fields[0], Hash: []byte(fields[1]), Role: Admin}
	if err := checkHash(acc.Hash); err != nil {
		return Account{}, fmt.Errorf("account %q: %w", acc.Name, err)
	}
	if len(fields) == 3 {
		role, err := ParseRole(fields[2])
		if err != nil {
			return Account{}, fmt.Errorf("account %q: %w", acc.Name, err)
		}
		acc.Role = role
	}
	return acc, nil
}

// CheckName reports whether name can be an account name: non-empty UTF-8
// without ':' (Basic credentials split at the first colon), whitespace or
// control characters, and not starting with '#' (that line would be a
// comment).
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty account name")
	case !utf8.ValidString(name):
		return errors.New("account name is not valid UTF-8")
	case strings.HasPrefix(name, "#"):
		return fmt.Errorf("account name %q starts with '#'", name)
	case strings.Contains(name, ":"):
		return fmt.Errorf("account name %q contains ':'", name)
	case strings.IndexFunc(name, unicode.IsSpace) >= 0:
		return fmt.Errorf("account name %q contains whitespace", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("account name %q contains a control character", name)
	}
	return nil
}

// bcryptAlphabet is the base64 alphabet bcrypt uses for salt and checksum.
const bcryptAlphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// checkHash reports whether h looks like a complete bcrypt hash:
// "$2a$", "$2b$" or "$2y$", two cost digits in bcrypt's range, '$', then 53
// characters of bcrypt base64 (60 bytes in all). The error does not quote h.
func checkHash(h []byte) error {
	const hashLen = 60
	errNotBcrypt := errors.New("password is not a bcrypt hash ($2a$, $2b$ or $2y$); plaintext and other schemes are not accepted")
	if len(h) != hashLen || h[0] != '$' || h[1] != '2' || !bytes.ContainsRune([]byte("aby"), rune(h[2])) || h[3] != '$' || !isDigit(h[4]) || !isDigit(h[5]) || h[6] != '$' {
		return errNotBcrypt
	}
	for _, c := range h[7:] {
		if !bytes.ContainsRune([]byte(bcryptAlphabet), rune(c)) {
			return errNotBcrypt
		}
	}
	if _, err := bcrypt.Cost(h); err != nil {
		return fmt.Errorf("invalid bcrypt hash: %w", err)
	}
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// HashPassword returns the bcrypt hash of password at the given cost, in the
// form an accounts file line holds. A cost below bcrypt.MinCost means
// bcrypt.DefaultCost (bcrypt's own rule); above bcrypt.MaxCost is an error.
// The password must be 1 to 72 bytes long (bcrypt ignores anything beyond 72
// bytes, so longer passwords are refused rather than silently truncated).
func HashPassword(password string, cost int) (string, error) {
	if password == "" {
		return "", errors.New("hash password: empty password")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// AddAccount sets the password of account name in the accounts file at path,
// creating the file if it does not exist (its directory must exist).
//
// If the file has a line for name, that line's hash is replaced and its role
// field, if any, kept; further lines for the same name are removed.
// Otherwise "name:hash" (an administrator) is appended. All other lines,
// comments included, are kept as they are. The result must load with
// LoadFile, or AddAccount fails and leaves the file untouched; this also
// replaces a plaintext line for name with a hashed one.
//
// The file is replaced atomically: the new content is written to a temporary
// file in the same directory with mode 0600, synced, and renamed over path,
// so a reader sees either the old or the new file. Concurrent AddAccount
// calls on the same file are not serialised: the last rename wins.
func AddAccount(path, name, password string, cost int) error {
	return AddAccountRole(path, name, password, "", cost)
}

// AddAccountRole is AddAccount that also sets the account's role: role is
// a word of the accounts file's third field ("viewer", "operator",
// "admin", or "user" for no access), written on the account's line; ""
// keeps the line's role (a new account is then an administrator).
func AddAccountRole(path, name, password, role string, cost int) error {
	if err := CheckName(name); err != nil {
		return fmt.Errorf("add account: %w", err)
	}
	if role != "" {
		if _, err := ParseRole(role); err != nil {
			return fmt.Errorf("add account %q: %w", name, err)
		}
	}
	hash, err := HashPassword(password, cost)
	if err != nil {
		return fmt.Errorf("add account %q: %w", name, err)
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("add account %q: %w", name, err)
	}
	content := setAccountLine(old, name, hash, role)
	if _, err := parseAccounts(bytes.NewReader(content), path); err != nil {
		return fmt.Errorf("add account %q: file would not load, left unchanged: %w", name, err)
	}
	if err := writeFileAtomic(path, content); err != nil {
		return fmt.Errorf("add account %q: %w", name, err)
	}
	return nil
}

// setAccountLine returns content with the hash of account name set to hash
// and, unless role is "", its role set to role, as AddAccountRole
// describes.
func setAccountLine(content []byte, name, hash, role string) []byte {
	withRole := func(old string) string {
		switch {
		case role != "":
			return name + ":" + hash + ":" + role
		case old != "":
			return name + ":" + hash + ":" + old
		}
		return name + ":" + hash
	}
	var out bytes.Buffer
	replaced := false
	for len(content) > 0 {
		line, rest, hasNL := bytes.Cut(content, []byte("\n"))
		content = rest
		trimmed := strings.TrimSpace(strings.TrimPrefix(string(line), "\uFEFF"))
		lineName, after, isAccount := strings.Cut(trimmed, ":")
		if !isAccount || strings.HasPrefix(trimmed, "#") || lineName != name {
			out.Write(line)
			if hasNL {
				out.WriteByte('\n')
			}
			continue
		}
		if replaced {
			continue // a duplicate line for the same account
		}
		replaced = true
		_, old, _ := strings.Cut(after, ":")
		out.WriteString(withRole(old))
		out.WriteByte('\n')
	}
	if !replaced {
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
			out.WriteByte('\n')
		}
		out.WriteString(withRole("") + "\n")
	}
	return out.Bytes()
}

// writeFileAtomic replaces path with content through a temporary file in
// the same directory and a rename; the file ends up with mode 0600.
func writeFileAtomic(path string, content []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp already uses 0600; say so explicitly in case that changes.
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("chmod temporary file: %w", err)
	}
	if _, err := tmp.Write(content); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync temporary file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	// Make the rename durable; not every platform can sync a directory, and
	// the file is already in place, so a failure here is not reported.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
