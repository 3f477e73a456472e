package gwc

import (
	"testing"

	"tilecache/internal/apperr"
)

func TestMassTruncateRequestsXML(t *testing.T) {
	tests := []struct {
		name string
		href string
		want string
	}{
		{"contract §7.1", "http://localhost:8080/rest/masstruncate",
			`<massTruncateRequests href="http://localhost:8080/rest/masstruncate"> <requestType>truncateLayer</requestType></massTruncateRequests>`},
		{"mounted under a prefix", "https://example.org/geowebcache/rest/masstruncate",
			`<massTruncateRequests href="https://example.org/geowebcache/rest/masstruncate"> <requestType>truncateLayer</requestType></massTruncateRequests>`},
		{"escaped", `http://h/"a"&<b>`,
			`<massTruncateRequests href="http://h/&#34;a&#34;&amp;&lt;b&gt;"> <requestType>truncateLayer</requestType></massTruncateRequests>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(MassTruncateRequestsXML(tt.href)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDecodeMassTruncate(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"contract §7.2", `<truncateLayer><layerName>topp:states</layerName></truncateLayer>`, "topp:states"},
		{"whitespace trimmed", "<?xml version=\"1.0\"?>\n<truncateLayer>\n  <layerName>\n    topp:states \n  </layerName>\n</truncateLayer>\n", "topp:states"},
		{"escaped", `<truncateLayer><layerName>a&amp;b c</layerName></truncateLayer>`, "a&b c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeMassTruncate([]byte(tt.body))
			if err != nil {
				t.Fatalf("got error %v, want %q", err, tt.want)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeMassTruncateErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"no layerName", `<truncateLayer/>`, "layerName is required"},
		{"empty layerName", `<truncateLayer><layerName> </layerName></truncateLayer>`, "layerName is required"},
		{"other type", `<truncateAll/>`, "Unknown mass truncate request type: truncateAll"},
		{"extent type", `<truncateExtent><layerName>topp:states</layerName></truncateExtent>`, "Unknown mass truncate request type: truncateExtent"},
		{"unknown element", `<truncateLayer><layerName>a</layerName><gridSetId>x</gridSetId></truncateLayer>`, "Unknown field: gridSetId"},
		{"twice", `<truncateLayer><layerName>a</layerName><layerName>b</layerName></truncateLayer>`, "Duplicate field: layerName"},
		{"layerName with elements", `<truncateLayer><layerName><a/></layerName></truncateLayer>`, "Invalid value for layerName: expected text, got element <a>"},
		{"malformed", `<truncateLayer><layerName>a</layerName>`, "Malformed XML: unexpected EOF"},
		{"doctype", `<!DOCTYPE truncateLayer><truncateLayer><layerName>a</layerName></truncateLayer>`, "DTDs are not allowed: the body must not contain <!DOCTYPE or other XML directives"},
		{"empty", ``, "Empty request body: expected a truncateLayer document"},
		{"JSON", `{"truncateLayer":{"layerName":"a"}}`, "Malformed XML: text outside the root element"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeMassTruncate([]byte(tt.body))
			if err == nil {
				t.Fatalf("got %q, want error %q", got, tt.want)
			}
			checkInvalid(t, err)
			if msg := apperr.Message(err); msg != tt.want {
				t.Errorf("got %q, want %q", msg, tt.want)
			}
		})
	}
}
