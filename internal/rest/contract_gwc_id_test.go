package rest_test

import (
	"net/http"
	"testing"

	"tilecache/internal/app/apptest"
)

// TestGwcIDRefused: gwc, the OGC bindings' path on the CDN (/gwc/service/*
// has a behaviour of its own, /gwc/featureinfo/ goes to the tile origin),
// is refused at PUT with a 400 that says so, as the other reserved ids are.
func TestGwcIDRefused(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	res := a.Do(t, "PUT", "/rest/gridsets/gwc.xml", gridSetDoc(t, "gwc", 3, 2), "Content-Type", "text/xml")
	wantBadRequest(t, res, `id "gwc" is the path of the OGC bindings`, "/gwc/service/wmts")
	if res := a.Do(t, "GET", "/rest/gridsets/gwc.xml", ""); res.Status != http.StatusNotFound {
		t.Errorf("the refused grid set was saved: GET %d", res.Status)
	}
}
