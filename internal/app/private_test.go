package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/tiletoken"
)

// privateKeys is the tile token keyring of the private layer tests: k2
// signs, k1 (the key before it) still verifies.
var privateKeys = "k2:" + strings.Repeat("2", 43) + ",k1:" + strings.Repeat("1", 43)

// privateLayers is the test layer file with topp:states private.
var privateLayers = strings.Replace(apptest.Layers, "  - name: topp:states\n", "  - name: topp:states\n    private: true\n", 1)

// getWith GETs path with headers (name, value pairs), without credentials.
func getWith(t *testing.T, base, path string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

// withToken adds ?token= (or &token=) to path.
func withToken(path, token string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "token=" + url.QueryEscape(token)
}

// TestPrivateLayer: a private layer's tiles, through every tile path
// (/tiles/, the key path, the WMTS, XYZ and OGC API edge paths), and its
// own documents (TileJSON, TMS TileMap, its WMTS capabilities, its OGC
// API collection) are refused without a tile token for it — 401 without
// one, with an expired, tampered or unknown key's one, 403 with one for
// another layer — and served with one, given as the query parameter token
// or as Authorization: Bearer, signed by the current key or the one before
// it; the shared documents leave it out; a public layer is served as
// before, with or without a token.
func TestPrivateLayer(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{Layers: privateLayers, Env: map[string]string{"TILECACHE_TILE_TOKEN_KEYS": privateKeys}})
	for _, l := range []string{"topp:states", "demo:world"} {
		wantDone(t, seedAndWait(t, a, l, `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	}
	ring, err := tiletoken.ParseKeyring(privateKeys)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := ring.Secret("k1")
	issue := func(k tiletoken.Key, exp time.Time, layers ...string) string {
		tok, err := tiletoken.Sign(k, layers, exp)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	cur := tiletoken.Key{ID: "k2", Secret: strings.Repeat("2", 43)}
	hour := time.Now().Add(time.Hour)
	good := issue(cur, hour, "topp:states", "other")
	byOldKey := issue(tiletoken.Key{ID: "k1", Secret: old}, hour, "topp:states")
	expired := issue(cur, time.Now().Add(-time.Second), "topp:states")
	otherLayer := issue(cur, hour, "demo:world")
	unknownKey := issue(tiletoken.Key{ID: "k9", Secret: strings.Repeat("9", 43)}, hour, "topp:states")
	tampered := good[:len(good)-2] + map[bool]string{true: "B", false: "A"}[good[len(good)-2] == 'A'] + good[len(good)-1:]

	paths := func(layer string) []string {
		return []string{
			"/tiles/" + layer + "/EPSG:900913/png/2/1/2.png",
			"/" + layer + "/EPSG:900913/png/default/2/1/2.png",
			"/xyz/" + layer + "/EPSG:900913/png/default/2/1/1.png",
			"/wmts/" + layer + "/EPSG:900913/png/default/2/1/1.png",
			"/ogcapi/collections/" + layer + "/map/tiles/WebMercatorQuad/2/1/1.png",
			"/" + layer + "/EPSG:900913/png/default/tilejson.json",
			"/" + layer + "/EPSG:900913/png/default/tilemapresource.xml",
			"/" + layer + "/WMTSCapabilities.xml",
			"/ogcapi/collections/" + layer,
			"/ogcapi/collections/" + layer + "/map/tiles",
		}
	}
	for _, p := range paths("topp:states") {
		for _, c := range []struct {
			name    string
			path    string
			headers []string
			status  int
			says    string
		}{
			{"no token", p, nil, 401, "is private"},
			{"expired", withToken(p, expired), nil, 401, "expired"},
			{"tampered", withToken(p, tampered), nil, 401, "not valid"},
			{"unknown key", withToken(p, unknownKey), nil, 401, "not valid"},
			{"garbage", withToken(p, "v1.x"), nil, 401, "not valid"},
			{"another layer's", withToken(p, otherLayer), nil, 403, "not for layer topp:states"},
			{"another layer's, as Bearer", p, []string{"Authorization", "Bearer " + otherLayer}, 403, "not for layer"},
			{"in the query", withToken(p, good), nil, 200, ""},
			{"as Bearer", p, []string{"Authorization", "Bearer " + good}, 200, ""},
			{"signed by the previous key", withToken(p, byOldKey), nil, 200, ""},
			{"in the edge's header", p, []string{"X-Tile-Token", good}, 200, ""},
			{"expired, in the edge's header", p, []string{"X-Tile-Token", expired}, 401, "expired"},
		} {
			status, h, body := getWith(t, a.URL, c.path, c.headers...)
			if status != c.status || (c.says != "" && !bytes.Contains(body, []byte(c.says))) {
				t.Errorf("%s, %s: %d %.200q, want %d saying %q", p, c.name, status, body, c.status, c.says)
				continue
			}
			if status != 200 && (!strings.HasPrefix(h.Get("Content-Type"), "text/plain") || h.Get("Cache-Control") != "no-store") {
				t.Errorf("%s, %s: refused with Content-Type %q, Cache-Control %q", p, c.name, h.Get("Content-Type"), h.Get("Cache-Control"))
			}
		}
	}
	// The TileJSON is the private layer's own, served with a token.
	if _, _, tj := getWith(t, a.URL, withToken("/topp:states/EPSG:900913/png/default/tilejson.json", good)); !bytes.Contains(tj, []byte(`"tiles"`)) {
		t.Errorf("the private layer's TileJSON with a token: %.300q", tj)
	}
	if _, _, caps := getWith(t, a.URL, withToken("/topp:states/WMTSCapabilities.xml", good)); !bytes.Contains(caps, []byte("<ows:Identifier>topp:states</ows:Identifier>")) {
		t.Errorf("the private layer's WMTS capabilities with a token leave it out: %.300q", caps)
	}
	// The shared documents leave the private layer out, with a token too.
	for _, p := range []string{"/WMTSCapabilities.xml", "/index.json", "/tms.xml", "/ogcapi/collections", withToken("/WMTSCapabilities.xml", good)} {
		status, _, body := getWith(t, a.URL, p)
		if status != 200 || bytes.Contains(body, []byte("topp:states")) || !bytes.Contains(body, []byte("demo:world")) {
			t.Errorf("%s: %d, names topp:states %v, demo:world %v", p, status, bytes.Contains(body, []byte("topp:states")), bytes.Contains(body, []byte("demo:world")))
		}
	}
	// A public layer: the same answer without a token, with one, and with
	// a broken one (its tiles are not guarded).
	for _, p := range paths("demo:world") {
		status, _, want := getWith(t, a.URL, p)
		if status != 200 {
			t.Errorf("%s: %d %.200q, want 200", p, status, want)
			continue
		}
		for _, tok := range []string{good, "v1.x"} {
			if status, _, got := getWith(t, a.URL, withToken(p, tok)); status != 200 || !bytes.Equal(got, want) {
				t.Errorf("%s with a token: %d, %d bytes; want 200 and the %d bytes without", p, status, len(got), len(want))
			}
		}
	}
}

// TestIssueTileTokens: POST /rest/tiletokens.json, behind the accounts,
// answers a token for the layers named (by their ids) signed with the
// current key, valid for the lifetime asked; it opens the private layer's
// tiles, and bad requests are 4xx naming the problem.
func TestIssueTileTokens(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{Layers: privateLayers, Env: map[string]string{"TILECACHE_TILE_TOKEN_KEYS": privateKeys}})
	wantDone(t, seedAndWait(t, a, "topp:states", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":0,"format":"image/png"}}`))
	const tile = "/xyz/topp:states/EPSG:900913/png/default/0/0/0.png"
	if status, _, _ := getWith(t, a.URL, tile); status != 401 {
		t.Fatalf("%s without a token: %d, want 401", tile, status)
	}
	if res := a.DoAuth(t, "", "", "POST", "/rest/tiletokens.json", `{"layers":["topp:states"]}`, "Content-Type", "application/json"); res.Status != 401 {
		t.Errorf("anonymous: %d %q, want 401", res.Status, res.Body)
	}
	before := time.Now()
	res := a.Do(t, "POST", "/rest/tiletokens.json", `{"layers":["topp:states","demo:world"],"lifetime":600}`, "Content-Type", "application/json")
	var got struct {
		Token     string   `json:"token"`
		Expires   string   `json:"expires"`
		ExpiresAt int64    `json:"expiresAt"`
		LayerIDs  []string `json:"layerIds"`
		KeyID     string   `json:"keyId"`
	}
	if res.Status != 200 || json.Unmarshal([]byte(res.Body), &got) != nil || got.KeyID != "k2" ||
		strings.Join(got.LayerIDs, ",") != "topp:states,demo:world" || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("issue: %d %q", res.Status, res.Body)
	}
	if exp := time.Unix(got.ExpiresAt, 0); exp.Before(before.Add(599*time.Second)) || exp.After(time.Now().Add(601*time.Second)) {
		t.Errorf("expires at %s, want 600 s from now", exp)
	}
	if status, h, body := getWith(t, a.URL, withToken(tile, got.Token)); status != 200 || h.Get("Content-Type") != "image/png" {
		t.Errorf("%s with the issued token: %d %.100q", tile, status, body)
	}
	for _, c := range []struct{ body, contentType, says string }{
		{`{"layers":["nope"]}`, "application/json", `no layer named "nope"`},
		{`{"layers":[]}`, "application/json", "name 1 to 100 layers"},
		{`{"layers":["topp:states"],"lifetime":86401}`, "application/json", "give 1 to 86400 seconds"},
		{`{"layers":["topp:states"],"lifetime":0}`, "application/json", "give 1 to 86400 seconds"},
		{`{"layers":["topp:states"],"ttl":5}`, "application/json", "unknown field"},
		{`{"layers":`, "application/json", "not {"},
		{`{"layers":["topp:states"]}`, "text/plain", "application/json"},
	} {
		res := a.Do(t, "POST", "/rest/tiletokens.json", c.body, "Content-Type", c.contentType)
		if res.Status < 400 || res.Status >= 500 || !strings.Contains(res.Body, c.says) {
			t.Errorf("%s (%s): %d %q, want a 4xx saying %q", c.body, c.contentType, res.Status, res.Body, c.says)
		}
	}
	if res := a.Do(t, "GET", "/rest/tiletokens.json", ""); res.Status != 405 {
		t.Errorf("GET: %d, want 405", res.Status)
	}
	// A viewer may ask for one (it opens what the viewer may read); an
	// account without a role may not.
	for user, want := range map[string]int{apptest.ViewerUser: 200, apptest.NoRoleUser: 403} {
		if res := a.DoAuth(t, user, apptest.Password, "POST", "/rest/tiletokens.json", `{"layers":["topp:states"]}`, "Content-Type", "application/json"); res.Status != want {
			t.Errorf("%s: %d %q, want %d", user, res.Status, res.Body, want)
		}
	}
	// An API token limited to a layer gets tile tokens for that layer only.
	res = a.Do(t, "POST", "/rest/tokens.json", `{"role":"viewer","layers":["demo:world"],"lifetime":"1h"}`, "Content-Type", "application/json")
	var api struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if res.Status != 201 || json.Unmarshal([]byte(res.Body), &api) != nil {
		t.Fatalf("API token: %d %q", res.Status, res.Body)
	}
	bearer := []string{"Content-Type", "application/json", "Authorization", "Bearer " + api.Token}
	if res := a.DoAuth(t, "", "", "POST", "/rest/tiletokens.json", `{"layers":["demo:world"]}`, bearer...); res.Status != 200 {
		t.Errorf("limited token, its layer: %d %q, want 200", res.Status, res.Body)
	}
	want := "This request concerns layer topp:states; token " + api.ID + " of account " + apptest.User + " is limited to layers demo:world\n"
	if res := a.DoAuth(t, "", "", "POST", "/rest/tiletokens.json", `{"layers":["demo:world","topp:states"]}`, bearer...); res.Status != 403 || res.Body != want {
		t.Errorf("limited token, another layer: %d %q, want 403 %q", res.Status, res.Body, want)
	}
}
