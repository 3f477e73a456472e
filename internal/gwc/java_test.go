package gwc_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"tilecache/internal/gwc"
	"tilecache/internal/testkit/testenv"
)

// javaMaps are written by Marshal and loaded by java.util.Properties, and
// stored by Properties.store and read by Unmarshal.
var javaMaps = map[string]map[string]string{
	"tricky": {
		`back\slash\`:          `\value\`,
		"equals=key":           "=value=",
		"colon:key":            ":value:",
		"#hash":                "#value",
		"!bang":                "!value",
		"new\nline":            "line\nbreaks\r\nand\rreturns",
		"tab\tkey":             "\ttab\tvalue\t",
		"form\ffeed":           "\fff",
		" leading space":       " leading space",
		"trailing space ":      "trailing space  ",
		"inner  spaces":        "a  b",
		"é":                    "é",
		"日本":                   "日本語のテキスト",
		"emoji 😀":              "😀 and 🗺",
		"empty":                "",
		"":                     "empty key",
		"controls":             "\x00\x01\x1b\x7f\u0085\u2028\ufeff",
		"literal escape":       `\u0041\n\t`,
		"\uFFFD":               "after U+10000 in UTF-16 order",
		"\U00010000":           "before U+FFFD in UTF-16 order",
		"  ":                   "  ",
		"value with separator": "a=b:c d",
	},
	"parameters": {
		"STYLES":     "pophatch",
		"CQL_FILTER": "NAME = 'Été' AND POP > 1000 OR TYPE IN ('a:b', 'c#d')",
		"TIME":       "2020-01-01T00:00:00Z/2020-12-31T23:59:59Z",
		"ENV":        "color:ff0000;label:Zürich",
		"ELEVATION":  "",
	},
	"empty":       {},
	"empty entry": {"": ""},
	// Longer than Java's read buffer (8192) and first line buffer (1024).
	"long": {
		strings.Repeat("k", 3000):  strings.Repeat("v\\", 6000),
		strings.Repeat("é", 5000):  strings.Repeat("😀 ", 5000),
		strings.Repeat(" ", 2000):  strings.Repeat(" ", 2000),
		strings.Repeat("\n", 1000): "x",
	},
}

// TestJava checks Marshal and Unmarshal against java.util.Properties:
// Properties.load reads what Marshal wrote as the same entries, Unmarshal
// reads what Properties.store wrote as the same entries, and Marshal
// escapes every entry byte for byte as Properties.store does. Decode cases
// that are ASCII or ISO-8859-1 are loaded by Java too and must give what
// Unmarshal gives.
func TestJava(t *testing.T) {
	java := testenv.RequireJava(t)
	program, err := filepath.Abs(filepath.Join("testdata", "PropertiesRoundTrip.java"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	decodeNames := writeJavaInputs(t, dir)
	cmd := exec.CommandContext(t.Context(), java, program, dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", java, program, err, out)
	}
	t.Logf("java: %s", strings.TrimSpace(string(out)))
	for name, m := range javaMaps {
		t.Run(name, func(t *testing.T) { checkJavaRoundTrip(t, dir, name, m) })
	}
	for name, i := range decodeNames {
		tc := decodeCases[i]
		t.Run("decode "+tc.name, func(t *testing.T) { checkJavaDecode(t, dir, name, tc.in) })
	}
}

// writeJavaInputs writes into dir, for the Java program, each of javaMaps
// marshalled (name.properties) with its entries (name.entries), and each
// of the decodeCases Java reads (decode-i.properties); it returns the
// latter's names with their index in decodeCases.
func writeJavaInputs(t *testing.T, dir string) map[string]int {
	t.Helper()
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, m := range javaMaps {
		data, err := gwc.Marshal(m, "a comment: é\nover lines")
		if err != nil {
			t.Fatal(err)
		}
		write(name+".properties", data)
		write(name+".entries", []byte(entryLines(m)))
	}
	decodeNames := map[string]int{}
	for i, tc := range decodeCases {
		if tc.notJava != "" {
			continue
		}
		name := "decode-" + strconv.Itoa(i)
		decodeNames[name] = i
		write(name+".properties", []byte(tc.in))
		write(name+".entries", nil)
	}

	return decodeNames
}

// readJavaOutput reads the Java program's file name in dir.
func readJavaOutput(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkJavaRoundTrip: Java's Properties.load reads m's marshalled form as
// m, Unmarshal reads Properties.store's output as m, and both escape the
// entries alike.
func checkJavaRoundTrip(t *testing.T, dir, name string, m map[string]string) {
	if got, want := readJavaOutput(t, dir, name+".loaded"), entryLines(m); got != want {
		t.Errorf("Properties.load read the entries\n%s\nwant\n%s", got, want)
	}
	stored := readJavaOutput(t, dir, name+".stored")
	back, err := gwc.Unmarshal([]byte(stored))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(back, m) {
		t.Errorf("Unmarshal of Properties.store's output: got %q, want %q", back, m)
	}
	// Java 17 writes the entries in hash order, after comment lines.
	var javaLines []string
	for line := range strings.Lines(stored) {
		line = strings.TrimRight(line, "\r\n")
		if line != "" && line[0] != '#' && line[0] != '!' {
			javaLines = append(javaLines, line)
		}
	}
	ours, err := gwc.Marshal(m, "")
	if err != nil {
		t.Fatal(err)
	}
	goLines := strings.Split(strings.TrimSuffix(string(ours), "\n"), "\n")
	if len(m) == 0 {
		goLines = nil
	}
	slices.Sort(javaLines)
	slices.Sort(goLines)
	if !slices.Equal(goLines, javaLines) {
		t.Errorf("Marshal escapes entries as\n%q\nProperties.store as\n%q", goLines, javaLines)
	}
}

// checkJavaDecode: Unmarshal reads in (file name) as Java's Properties.load
// did, or refuses it as Java did.
func checkJavaDecode(t *testing.T, dir, name, in string) {
	loaded := readJavaOutput(t, dir, name+".loaded")
	got, err := gwc.Unmarshal([]byte(in))
	if loaded == "ERROR\n" {
		if err == nil {
			t.Errorf("Java refused %q, Unmarshal read %q", in, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("Java read %q, Unmarshal failed: %v", in, err)
	}
	if want := entryLines(got); loaded != want {
		t.Errorf("Java read %q as\n%s\nUnmarshal as\n%s", in, loaded, want)
	}
}

// entryLines formats m as the Java program does: sorted lines "xKEY xVALUE"
// with the hex of each string's UTF-16 code units.
func entryLines(m map[string]string) string {
	hex := func(s string) string {
		var b strings.Builder
		b.WriteByte('x')
		for _, u := range utf16.Encode([]rune(s)) {
			fmt.Fprintf(&b, "%04X", u)
		}
		return b.String()
	}
	lines := make([]string, 0, len(m))
	for k, v := range m {
		lines = append(lines, hex(k)+" "+hex(v)+"\n")
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}
