// Package web holds the demo map page: one self-contained HTML file with
// OpenLayers inlined (built from web/ by `make web`), which the program
// writes to the root of the tile store as index.html, so the CDN and the
// local program serve it at "/". It reads index.json beside it and shows
// every tile set on a map, with the z/x/y key of the tile under the cursor.
package web

import _ "embed"

//go:embed index.html
var index []byte

// IndexHTML returns the page. Callers must not modify it.
func IndexHTML() []byte { return index }
