package upstream_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/source/upstream"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://user:password@host/wms?apikey=SECRET&map=x", "http://host/wms?apikey=REDACTED&map=REDACTED"},
		{"https://user@host:8443/a/b", "https://host:8443/a/b"},
		{"http://:pw@127.0.0.1:8080/wms", "http://127.0.0.1:8080/wms"},
		{"http://user:p%40ss@host/", "http://host/"},
		{"http://host/wms", "http://host/wms"},
		{"http://host/wms?", "http://host/wms?"},
		{"http://host/wms?apikey=", "http://host/wms?apikey="},
		{"http://host/wms?a=1&&b=2&", "http://host/wms?a=REDACTED&&b=REDACTED&"},
		{"http://host/wms?s3cret&map=x", "http://host/wms?REDACTED&map=REDACTED"},
		{"http://host/wms?k=a=b&k=c", "http://host/wms?k=REDACTED&k=REDACTED"},
		{"http://host/wms?a=1;token=t0ken", "http://host/wms?a=REDACTED"},
		{"http://host/wms?MAP=%2Fsrv%2Fa.map&X+Y=1", "http://host/wms?MAP=REDACTED&X+Y=REDACTED"},
		{"http://host/p#access_token=abc", "http://host/p#REDACTED"},
		{"http://u:pw@host/p?q=1#frag", "http://host/p?q=REDACTED#REDACTED"},
		{"http://host/tiles/{z}/{x}/{-y}.png?key=abc", "http://host/tiles/{z}/{x}/{-y}.png?key=REDACTED"},
		{"http://host/a%2Fb/c d", "http://host/a%2Fb/c d"},
		{"http://user:pw@[::1]:80/x?y=z", "http://[::1]:80/x?y=REDACTED"},
		{"http://user:pw@/x", "http:///x"},
		{"http://user:pw@", "http:"},
		{"mailto:user@example.com?subject=hi", "mailto:REDACTED?subject=REDACTED"},
		{"/wms?apikey=SECRET", "/wms?apikey=REDACTED"},
		{"//user:pw@host/wms?k=v", "//host/wms?k=REDACTED"},
		{"", ""},
		// What url.Parse refuses is never echoed.
		{"http://user:pa ss@host/?k=SECRET\x7f", upstream.UnparseableURL},
		{"http://user:pw@host:port/?k=SECRET", upstream.UnparseableURL},
		{"http://user:pw@host/%zz?k=SECRET", upstream.UnparseableURL},
		{"http://{s}.tiles.test/{z}/{x}/{y}.png?key=SECRET", upstream.UnparseableURL},
		{"http://us\ner:pw@host/", upstream.UnparseableURL},
		{":nothing?k=SECRET", upstream.UnparseableURL},
		{"//@//x?k=SECRET", upstream.UnparseableURL},
	} {
		got := upstream.Redact(c.in)
		if got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		if again := upstream.Redact(got); again != got {
			t.Errorf("Redact(%q) = %q, but Redact of that is %q", c.in, got, again)
		}
	}
}

// FuzzRedact checks that Redact's output depends only on the parts it
// keeps: with the input's userinfo, query values, bare query parts,
// fragment and opaque part replaced by markers, the output is the same
// and carries no marker. So no password or query value of the input is in
// the output, except as a part of what is kept (host, path, names).
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"http://user:password@host/wms?apikey=SECRET&map=x",
		"https://u@h:1/{z}/{x}/{y}.png?key=k#f",
		"http://h/?a&b=&=c&&d=e=f",
		"mailto:x@y?z=1",
		"//u:p@h/p?q=r",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out := upstream.Redact(raw)
		u, err := url.Parse(raw)
		if err != nil {
			if out != upstream.UnparseableURL {
				t.Fatalf("Redact(%q) = %q for input url.Parse refuses, want %q", raw, out, upstream.UnparseableURL)
			}
			return
		}
		if out == upstream.UnparseableURL && u.Scheme == "" && u.Host == "" {
			return // a reference like //@//x, whose parts cannot be written back alone
		}
		if again := upstream.Redact(out); again != out {
			t.Fatalf("Redact(%q) = %q, but Redact of that is %q", raw, out, again)
		}
		r, err := url.Parse(out)
		if err != nil {
			t.Fatalf("Redact(%q) = %q, which does not parse: %v", raw, out, err)
		}
		if r.User != nil || r.Scheme != u.Scheme || r.Host != u.Host || (u.Opaque == "" && r.Path != u.Path) {
			t.Fatalf("Redact(%q) = %q: scheme, host or path changed, or userinfo kept", raw, out)
		}
		for k, vs := range r.Query() {
			for _, v := range vs {
				if v != "" && v != upstream.Redacted {
					t.Fatalf("Redact(%q) = %q keeps %s=%s", raw, out, k, v)
				}
			}
		}

		marked, markers := markSecrets(raw, u)
		if marked == "" {
			return
		}
		got := upstream.Redact(marked)
		for _, m := range markers {
			if strings.Contains(got, m) {
				t.Fatalf("Redact(%q) = %q carries the secret there", marked, got)
			}
		}
		if got != out {
			t.Fatalf("the secrets change the output: Redact(%q) = %q, Redact(%q) = %q", raw, out, marked, got)
		}
	})
}

// markSecrets returns raw (which url.Parse made u of) with its secret
// parts replaced by markers: the userinfo, every non-empty query value,
// every query part without "=", the fragment and an opaque part. It
// returns "" when a marker would not be unique in the result.
func markSecrets(raw string, u *url.URL) (string, []string) {
	var markers []string
	next := func() string {
		m := "Zq" + strconv.Itoa(len(markers)) + "xQ"
		markers = append(markers, m)
		return m
	}
	rest, frag, hasFrag := strings.Cut(raw, "#")
	head, query := rest, u.RawQuery
	hasQuery := u.ForceQuery || u.RawQuery != "" // else rest has no "?"
	if hasQuery {
		head = rest[:len(rest)-len(query)-1]
	}
	var b strings.Builder
	switch {
	case u.Opaque != "":
		b.WriteString(head[:len(head)-len(u.Opaque)])
		b.WriteString(next())
	case u.User != nil:
		// head is [scheme:]//userinfo@host[path]; the userinfo ends at
		// the authority's last "@".
		start := strings.Index(head, "//") + 2
		authority, _, _ := strings.Cut(head[start:], "/")
		at := strings.LastIndex(authority, "@")
		b.WriteString(head[:start])
		b.WriteString(next())
		b.WriteString(head[start+at:])
	default:
		b.WriteString(head)
	}
	if hasQuery {
		b.WriteByte('?')
		for i, part := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			name, value, ok := strings.Cut(part, "=")
			switch {
			case part == "":
			case !ok:
				b.WriteString(next())
			case value == "":
				b.WriteString(part)
			default:
				b.WriteString(name + "=" + next())
			}
		}
	}
	if hasFrag {
		b.WriteByte('#')
		if frag != "" {
			b.WriteString(next())
		}
	}
	s := b.String()
	for _, m := range markers {
		if strings.Count(s, m) != 1 || strings.Contains(upstream.Redacted+upstream.UnparseableURL, m) {
			return "", nil
		}
	}
	return s, markers
}
