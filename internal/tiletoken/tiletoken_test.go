package tiletoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write testdata/vectors.json anew")

// vectors is testdata/vectors.json: the tokens both implementations
// check, with the outcome each must give.
type vectors struct {
	Comment string            `json:"comment"`
	Keys    map[string]string `json:"keys"`
	Cases   []vector          `json:"cases"`
}

type vector struct {
	Name  string   `json:"name"`
	Token string   `json:"token"`
	Ring  []string `json:"ring"` // the key ids the verifier holds
	Layer string   `json:"layer"`
	Now   int64    `json:"now"` // Unix seconds
	Want  string   `json:"want"`
}

const vectorsFile = "testdata/vectors.json"

// makeVectors builds the vector table from fixed keys (HMAC is
// deterministic, so the file is reproducible with -update).
func makeVectors(t *testing.T) vectors {
	keys := map[string]string{
		"k1":    "old-key-secret-0123456789abcdefghijklmnopqrstu",
		"k2":    "current-key-secret-0123456789abcdefghijklmnopqr",
		"other": "another-deployments-secret-0123456789abcdefghij",
	}
	const now = 1800000000
	ring := []string{"k2", "k1"}
	sign := func(kid string, exp int64, layers ...string) string {
		tok, err := Sign(Key{ID: kid, Secret: keys[kid]}, layers, time.Unix(exp, 0))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// raw signs a body as written, whatever it holds.
	raw := func(kid, body string) string {
		m := hmac.New(sha256.New, []byte(keys[kid]))
		m.Write([]byte(body))
		return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	field := func(tok string, i int, v string) string {
		f := strings.Split(tok, ".")
		f[i] = v
		return strings.Join(f, ".")
	}
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	good := sign("k2", now+3600, "roads", "demo:private")
	sig := good[strings.LastIndexByte(good, '.')+1:]
	// The signature's second last character changed (the last one holds
	// padding bits too).
	repl := "A"
	if good[len(good)-2] == 'A' {
		repl = "B"
	}
	flipped := good[:len(good)-2] + repl + good[len(good)-1:]
	c := []vector{
		{Name: "valid, first layer", Token: good, Layer: "roads", Want: "ok"},
		{Name: "valid, second layer", Token: good, Layer: "demo:private", Want: "ok"},
		{Name: "valid, a second before expiry", Token: sign("k2", now+1, "roads"), Layer: "roads", Want: "ok"},
		{Name: "valid, a layer id in UTF-8", Token: sign("k2", now+60, "straßen/ü"), Layer: "straßen/ü", Want: "ok"},
		{Name: "expired a second ago", Token: sign("k2", now-1, "roads"), Layer: "roads", Want: "expired"},
		{Name: "expires now", Token: sign("k2", now, "roads"), Layer: "roads", Want: "expired"},
		{Name: "another layer's", Token: good, Layer: "parcels", Want: "wrong-layer"},
		{Name: "a prefix of a layer it opens", Token: good, Layer: "road", Want: "wrong-layer"},
		{Name: "a layer id that is two of its ids joined", Token: good, Layer: "roads\ndemo:private", Want: "wrong-layer"},
		{Name: "wrong key id (another deployment's key)", Token: sign("other", now+3600, "roads"), Layer: "roads", Want: "unknown-key"},
		{Name: "rotated: the old key still in the ring", Token: sign("k1", now+3600, "roads"), Layer: "roads", Want: "ok"},
		{Name: "rotated: the old key removed", Token: sign("k1", now+3600, "roads"), Ring: []string{"k2"}, Layer: "roads", Want: "unknown-key"},
		{Name: "tampered signature", Token: flipped, Layer: "roads", Want: "bad-signature"},
		{Name: "tampered layers", Token: field(good, 3, b64("roads\ndemo:private\nparcels")), Layer: "parcels", Want: "bad-signature"},
		{Name: "tampered expiry", Token: field(good, 2, "1900000000"), Layer: "roads", Want: "bad-signature"},
		{Name: "tampered key id (the old key's id)", Token: field(good, 1, "k1"), Layer: "roads", Want: "bad-signature"},
		{Name: "signature of another key", Token: field(sign("other", now+3600, "roads", "demo:private"), 1, "k2"), Layer: "roads", Want: "bad-signature"},
		{Name: "missing", Token: "", Layer: "roads", Want: "missing"},
		{Name: "malformed: one field", Token: "v1", Layer: "roads", Want: "malformed"},
		{Name: "malformed: another version", Token: field(good, 0, "v2"), Layer: "roads", Want: "malformed"},
		{Name: "malformed: six fields", Token: good + ".x", Layer: "roads", Want: "malformed"},
		{Name: "malformed: expiry with a leading zero", Token: field(good, 2, "01800003600"), Layer: "roads", Want: "malformed"},
		{Name: "malformed: expiry not a number", Token: field(good, 2, "18e8"), Layer: "roads", Want: "malformed"},
		{Name: "malformed: expiry of 13 digits", Token: field(good, 2, "1800000000000"), Layer: "roads", Want: "malformed"},
		{Name: "malformed: key id of 33 characters", Token: field(good, 1, strings.Repeat("k", 33)), Layer: "roads", Want: "malformed"},
		{Name: "malformed: key id with a colon", Token: field(good, 1, "k:2"), Layer: "roads", Want: "malformed"},
		{Name: "malformed: empty layers", Token: field(good, 3, ""), Layer: "roads", Want: "malformed"},
		{Name: "malformed: layers with padding", Token: field(good, 3, b64("roads")+"="), Layer: "roads", Want: "malformed"},
		{Name: "malformed: layers in standard base64", Token: field(good, 3, "a+b/"), Layer: "roads", Want: "malformed"},
		{Name: "malformed: signature one character short", Token: field(good, 4, sig[:42]), Layer: "roads", Want: "malformed"},
		{Name: "malformed: signature with padding", Token: field(good, 4, sig[:42]+"="), Layer: "roads", Want: "malformed"},
		{Name: "malformed: longer than 2048 characters", Token: field(good, 3, strings.Repeat("A", 2048)), Layer: "roads", Want: "malformed"},
		{Name: "malformed: a space", Token: " " + good, Layer: "roads", Want: "malformed"},
		{Name: "signed, layers not UTF-8", Token: raw("k2", "v1.k2.1800003600."+base64.RawURLEncoding.EncodeToString([]byte{0xff, 0xfe})), Layer: "roads", Want: "malformed"},
		{Name: "signed, layers not canonical base64url", Token: raw("k2", "v1.k2.1800003600.cm9hZHT"), Layer: "roads", Want: "malformed"},
		{Name: "signed, layers of one character", Token: raw("k2", "v1.k2.1800003600.c"), Layer: "roads", Want: "malformed"},
	}
	for i := range c {
		c[i].Now = now
		if c[i].Ring == nil {
			c[i].Ring = ring
		}
	}
	return vectors{
		Comment: "Tile tokens and the outcome each must have, checked by internal/tiletoken (Go) and functions/edge/tiletoken.js (JavaScript, the edge). Written by go test ./internal/tiletoken -update.",
		Keys:    keys, Cases: c,
	}
}

func readVectors(t *testing.T) vectors {
	t.Helper()
	data, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVectors checks every shared vector in Go; the file is the one
// makeVectors writes.
func TestVectors(t *testing.T) {
	want := makeVectors(t)
	if *update {
		data, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := readVectors(t)
	if len(v.Cases) != len(want.Cases) {
		t.Errorf("%s has %d cases, makeVectors %d: run go test -update", vectorsFile, len(v.Cases), len(want.Cases))
	}
	outcomes := map[string]bool{}
	for _, c := range v.Cases {
		secrets := func(id string) (string, bool) {
			if !slices.Contains(c.Ring, id) {
				return "", false
			}
			s, ok := v.Keys[id]
			return s, ok
		}
		_, err := Verify(c.Token, secrets, c.Layer, time.Unix(c.Now, 0))
		if got := Code(err); got != c.Want {
			t.Errorf("%s: %s (%v), want %s", c.Name, got, err, c.Want)
		}
		outcomes[c.Want] = true
	}
	for _, o := range []string{"ok", "missing", "malformed", "unknown-key", "bad-signature", "expired", "wrong-layer"} {
		if !outcomes[o] {
			t.Errorf("no vector has the outcome %s", o)
		}
	}
}

// TestVectorsEdge runs the edge's JavaScript twin under Node against the
// same vectors.
func TestVectorsEdge(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the edge function's tests: %v", err)
	}
	out, err := exec.Command(node, "../../functions/edge/tiletoken.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("the edge's tile token tests failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func TestIssueVerify(t *testing.T) {
	ring, err := ParseKeyring("new:" + strings.Repeat("n", 32) + ", old:" + strings.Repeat("o", 32))
	if err != nil {
		t.Fatal(err)
	}
	if ring.Current() != "new" || len(ring.Keys()) != 2 || ring.Keys()[0].ID != "new" {
		t.Fatalf("current %s, keys %v", ring.Current(), ring.Keys())
	}
	now := time.Unix(1800000000, 0)
	tok, err := ring.Issue([]string{"a", "b:c"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "v1.new.1800003600.") {
		t.Errorf("token %s", tok)
	}
	got, err := ring.Verify(tok, "b:c", now)
	if err != nil || !slices.Equal(got.Layers, []string{"a", "b:c"}) || got.KeyID != "new" {
		t.Errorf("verify: %+v %v", got, err)
	}
	if _, err := ring.Verify(tok, "b:c", now.Add(time.Hour)); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v", err)
	}
	for _, bad := range []string{"", "k", "k:short", "k:" + strings.Repeat("s", 32) + ",k:" + strings.Repeat("t", 32), "k k:" + strings.Repeat("s", 32)} {
		if _, err := ParseKeyring(bad); err == nil {
			t.Errorf("ParseKeyring(%q) accepted", bad)
		}
	}
	for _, layers := range [][]string{nil, {""}, {"a\nb"}, {strings.Repeat("x", 1600)}} {
		if _, err := ring.Issue(layers, now); err == nil {
			t.Errorf("Issue(%q) accepted", layers)
		}
	}
	if k := NewKey("k"); len(k.Secret) != 43 {
		t.Errorf("NewKey: secret %q", k.Secret)
	}
}
