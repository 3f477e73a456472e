package gwc

import (
	"reflect"
	"testing"

	"tilecache/internal/apperr"
)

func TestParseXML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"elements and text", `<r><a>1</a><b> x </b></r>`, map[string]any{"a": "1", "b": " x "}},
		{"empty element is empty text", `<r><a/><b></b></r>`, map[string]any{"a": "", "b": ""}},
		{"declaration, comments, PIs", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- c --><r><?pi x?><a>1<!-- c -->2</a></r>\n<!-- end -->", map[string]any{"a": "12"}},
		{"entities and CDATA", `<r><a>x &gt; &#49;<![CDATA[<&>]]></a></r>`, map[string]any{"a": "x > 1<&>"}},
		{"attributes and namespaces ignored", `<r xmlns="urn:x" xmlns:p="urn:p" p:k="v"><p:a id="1">1</p:a></r>`, map[string]any{"a": "1"}},
		{"indentation between elements", "<r>\n  <a>1</a>\n</r>", map[string]any{"a": "1"}},
		{"byte order mark", "\xEF\xBB\xBF<r><a>1</a></r>", map[string]any{"a": "1"}},
		{"utf8 label", `<?xml version="1.0" encoding="utf8"?><r><a>é</a></r>`, map[string]any{"a": "é"}},
		{"text root", `<r>x</r>`, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseXML([]byte(tt.in), "x")
			if err != nil {
				t.Fatalf("got error %v, want %#v", err, tt.want)
			}
			if n.name != "r" {
				t.Errorf("got root %q, want r", n.name)
			}
			if got := plain(n); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseXMLErrors(t *testing.T) {
	const dtd = "DTDs are not allowed: the body must not contain <!DOCTYPE or other XML directives"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "Empty request body: expected a thing"},
		{"blank", " \r\n", "Empty request body: expected a thing"},
		{"doctype", `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "y">]><r>&x;</r>`, dtd},
		{"doctype lower case", `<!doctype r><r/>`, dtd},
		{"doctype inside a comment", `<r><!-- <!DOCTYPE --></r>`, dtd},
		{"other directive", `<!ELEMENT r ANY><r/>`, dtd},
		{"truncated", `<r><a>1</a>`, "Malformed XML: unexpected EOF"},
		{"mismatched", `<r><a></b></r>`, "Malformed XML: element <a> closed by </b>"},
		{"unknown entity", `<r>&nbsp;</r>`, "Malformed XML: invalid character entity &nbsp;"},
		{"bare ampersand", `<r>a & b</r>`, "Malformed XML: invalid character entity & (no semicolon)"},
		{"not XML", `{"a":1}`, "Malformed XML: text outside the root element"},
		{"text after root", `<r/>x`, "Malformed XML: text outside the root element"},
		{"two roots", `<r/><s/>`, "Malformed XML: more than one root element"},
		{"only a comment", `<!-- x -->`, "Malformed XML: no root element"},
		{"mixed content", `<r>x<a/></r>`, "Unexpected text in element r: x"},
		{"latin1", `<?xml version="1.0" encoding="ISO-8859-1"?><r/>`, `Malformed XML: opening charset "ISO-8859-1": the body must be UTF-8`},
		{"invalid UTF-8", "<r>\xff</r>", "Malformed XML: invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseXML([]byte(tt.in), "a thing")
			if err == nil {
				t.Fatalf("got %#v, want error %q", plain(n), tt.want)
			}
			if !apperr.Is(err, apperr.Invalid) {
				t.Errorf("got kind %v, want invalid", apperr.KindOf(err))
			}
			if got := apperr.Message(err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestXMLEscape(t *testing.T) {
	if got, want := xmlEscape(`a<b>&"c"'`), "a&lt;b&gt;&amp;&#34;c&#34;&#39;"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
