package gwc_test

import (
	"maps"
	"testing"
	"unicode/utf8"

	"tilecache/internal/gwc"
)

// FuzzProperties checks that Unmarshal gives back what Marshal was given,
// and that Marshal writes ASCII only.
func FuzzProperties(f *testing.F) {
	f.Add("STYLES", "pophatch", "CQL_FILTER", "NAME = 'x'", "")
	f.Add(" k:=#!", " v\\\n", "é日本😀", "\t\r\f", "comment\nline")
	f.Add("", "", "\\", "\\u0041", "#!")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, comment string) {
		for _, s := range []string{k1, v1, k2, v2, comment} {
			if !utf8.ValidString(s) {
				t.Skip("not valid UTF-8: Marshal refuses it")
			}
		}
		m := map[string]string{k1: v1, k2: v2}
		data, err := gwc.Marshal(m, comment)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range data {
			if b >= 0x80 {
				t.Fatalf("byte %d of %q is not ASCII", i, data)
			}
		}
		got, err := gwc.Unmarshal(data)
		if err != nil {
			t.Fatalf("Unmarshal(%q): %v", data, err)
		}
		if !maps.Equal(got, m) {
			t.Fatalf("Unmarshal(Marshal(%q)) = %q", m, got)
		}
	})
}

// FuzzUnmarshal checks that Unmarshal never panics and that what it reads
// survives Marshal and Unmarshal unchanged.
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte("a=1\nb:2\nc 3\n# comment\n! comment\n"))
	f.Add([]byte("k=a\\\n   b\\\r\n\tc\\\r d\n\\\n#x\n"))
	f.Add([]byte("k\\ \\=\\:=\\u00e9\\uD83D\\uDE00\\u12\n"))
	f.Add([]byte("k\xe9=\xe9\xff\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := gwc.Unmarshal(data)
		if err != nil {
			return
		}
		again, err := gwc.Marshal(m, "")
		if err != nil {
			t.Fatalf("Marshal(%q): %v", m, err)
		}
		back, err := gwc.Unmarshal(again)
		if err != nil {
			t.Fatalf("Unmarshal(%q): %v", again, err)
		}
		if !maps.Equal(back, m) {
			t.Fatalf("Unmarshal(%q) = %q, then %q", data, m, back)
		}
	})
}
