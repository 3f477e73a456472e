package discovery

import (
	"html"
	"regexp"
	"strings"
)

// Map clients (MapLibre, Leaflet, OpenLayers) show a TileJSON attribution
// as HTML, in the page of every site that loads the document: a layer's
// attribution is written through safeAttribution, which keeps the HTML
// attributions are made of (text, character references such as &copy;,
// links to http and https addresses) and escapes everything else, so that
// markup such as <script> or <img onerror=…> shows as text.
var (
	// linkOpen is an <a> start tag with one double-quoted http(s) href.
	linkOpen  = regexp.MustCompile(`^(?i:<a\s+href\s*=\s*")(?i:(https?://[^"<>\s]+))"\s*>`)
	linkClose = regexp.MustCompile(`^(?i:</a\s*>)`)
	// charRef is a character reference: named, decimal or hexadecimal.
	charRef = regexp.MustCompile(`^&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});`)
)

// safeAttribution returns a, keeping plain text, character references and
// <a href="http(s)://…">…</a> links (not nested, closed at the end if left
// open), with every other <, >, &, " and ' escaped.
func safeAttribution(a string) string {
	var b strings.Builder
	inLink := false
	for i := 0; i < len(a); {
		rest := a[i:]
		switch rest[0] {
		case '<':
			if m := linkOpen.FindStringSubmatch(rest); m != nil && !inLink {
				// The address is written again, escaped: an entity in it
				// is decoded first so that it is not escaped twice.
				b.WriteString(`<a href="` + html.EscapeString(html.UnescapeString(m[1])) + `">`)
				inLink = true
				i += len(m[0])
				continue
			}
			if m := linkClose.FindString(rest); m != "" && inLink {
				b.WriteString("</a>")
				inLink = false
				i += len(m)
				continue
			}
			b.WriteString("&lt;")
		case '&':
			if m := charRef.FindString(rest); m != "" {
				b.WriteString(m)
				i += len(m)
				continue
			}
			b.WriteString("&amp;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			b.WriteByte(rest[0])
		}
		i++
	}
	if inLink {
		b.WriteString("</a>")
	}
	return b.String()
}
