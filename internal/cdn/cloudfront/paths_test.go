package cloudfront

import (
	"strings"
	"testing"

	"tilecache/internal/apperr"
)

func TestEncodePath(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"Tile", "/demo:world/EPSG:4326/png/default/3/1/2.png", "/demo:world/EPSG:4326/png/default/3/1/2.png"},
		{"Wildcard", "/layer/EPSG:4326/png/default/3/*", "/layer/EPSG:4326/png/default/3/*"},
		{"Root", "/*", "/*"},
		{"Encoded", "/caf%C3%A9%20noir/100%25", "/caf%C3%A9%20noir/100%25"},
		{"LowerHexKept", "/caf%c3%a9", "/caf%c3%a9"},
		{"Space", "/a b", "/a%20b"},
		{"NonASCII", "/café/地図", "/caf%C3%A9/%E5%9C%B0%E5%9B%B3"},
		{"InvalidUTF8", "/a\xff", "/a%FF"},
		{"Tilde", "/~user", "/%7Euser"},
		{"Unsafe", "/\"#<>[\\]^`{|}", "/%22%23%3C%3E%5B%5C%5D%5E%60%7B%7C%7D"},
		{"Controls", "/a\tb\x7f", "/a%09b%7F"},
		{"SafeAndReserved", "/a-b.c_d!$&'()+,;=:@/x?STYLES=grid&CLS=1", "/a-b.c_d!$&'()+,;=:@/x?STYLES=grid&CLS=1"},
		{"QueryWildcard", "/demo:world/tile.png?*", "/demo:world/tile.png?*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodePath(tt.in)
			if err != nil {
				t.Fatalf("encodePath(%q) error: %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("encodePath(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEncodePathRefused(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"Empty", "", "does not start with /"},
		{"Relative", "demo:world/*", "does not start with /"},
		{"PercentAtEnd", "/100%", "not followed by two hex digits"},
		{"PercentOneDigit", "/a%2", "not followed by two hex digits"},
		{"PercentNotHex", "/a%zz", "not followed by two hex digits"},
		{"WildcardInside", "/a/*/b", "before its end"},
		{"TwoWildcards", "/a**", "before its end"},
		{"TooLong", "/" + strings.Repeat("a", MaxPathLength), "at most 4000"},
		{"TooLongEncoded", "/" + strings.Repeat(" ", MaxPathLength/3+1), "at most 4000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodePath(tt.in)
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("encodePath(%.40q) = (%.40q, %v), want an apperr.Invalid", tt.in, got, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
	if _, err := encodePath("/" + strings.Repeat("a", MaxPathLength-1)); err != nil {
		t.Errorf("a path of exactly %d bytes: %v", MaxPathLength, err)
	}
}

func FuzzEncodePath(f *testing.F) {
	for _, s := range []string{"/demo:world/EPSG:4326/*", "/a b/%25/é", "/a%zz", "/~*", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := encodePath(p)
		if err != nil {
			return
		}
		// Encoding is idempotent, and what it sends holds only ASCII
		// CloudFront takes raw.
		again, err := encodePath(got)
		if err != nil || again != got {
			t.Fatalf("encodePath(%q) = %q, then %q, %v", p, got, again, err)
		}
		for i := 0; i < len(got); i++ {
			c := got[i]
			if !keep(c) && c != '%' && !(c == '*' && i == len(got)-1) {
				t.Fatalf("encodePath(%q) = %q holds %q raw", p, got, c)
			}
		}
	})
}
