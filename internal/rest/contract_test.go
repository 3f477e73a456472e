package rest_test

// Contract §2 (authentication) and §3 (method matrix, unknown paths, POST
// /rest/seed/{layer} dispatch by Content-Type).

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/app/apptest"
	"tilecache/internal/auth"
	"tilecache/internal/testkit/testenv"
)

const (
	seedBodyJSON = `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`
	seedBodyXML  = `<seedRequest><zoomStart>0</zoomStart><zoomStop>0</zoomStop></seedRequest>`
	truncateBody = `<truncateLayer><layerName>demo:world</layerName></truncateLayer>`
)

// TestMethodMatrix checks every cell of the §3 table.
func TestMethodMatrix(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	type cell struct {
		method, path, body string
		headers            []string
		status             int
		contentType        string // checked when status is 200 and it is not ""
		allow              string // for 405
	}
	ok := func(method, path, body, contentType string, headers ...string) cell {
		return cell{method: method, path: path, body: body, headers: headers, status: 200, contentType: contentType}
	}
	no := func(method, path, allow string) cell {
		return cell{method: method, path: path, body: seedBodyJSON, status: 405, allow: allow}
	}
	cells := []cell{
		ok("GET", "/rest/seed/demo:world.json", "", ctJSON),
		ok("POST", "/rest/seed/demo:world.json", seedBodyJSON, ctJSON),
		no("PUT", "/rest/seed/demo:world.json", "GET, POST"),
		no("DELETE", "/rest/seed/demo:world.json", "GET, POST"),

		ok("GET", "/rest/seed/demo:world.xml", "", ctXML),
		ok("POST", "/rest/seed/demo:world.xml", seedBodyXML, ctXML),
		no("PUT", "/rest/seed/demo:world.xml", "GET, POST"),
		no("DELETE", "/rest/seed/demo:world.xml", "GET, POST"),

		ok("GET", "/rest/seed.json", "", ctJSON),
		no("POST", "/rest/seed.json", "GET"),
		no("PUT", "/rest/seed.json", "GET"),
		no("DELETE", "/rest/seed.json", "GET"),

		no("GET", "/rest/seed", "POST"),
		ok("POST", "/rest/seed", "kill_all=all", ctHTML, "Content-Type", ctForm),
		no("PUT", "/rest/seed", "POST"),
		no("DELETE", "/rest/seed", "POST"),

		no("GET", "/rest/seed/demo:world", "POST"),
		ok("POST", "/rest/seed/demo:world", "kill_all=all", ctHTML, "Content-Type", ctForm),
		no("PUT", "/rest/seed/demo:world", "POST"),
		no("DELETE", "/rest/seed/demo:world", "POST"),

		ok("GET", "/rest/masstruncate", "", ctXML),
		ok("POST", "/rest/masstruncate", truncateBody, "", "Content-Type", "text/xml"),
		no("PUT", "/rest/masstruncate", "GET, POST"),
		no("DELETE", "/rest/masstruncate", "GET, POST"),

		ok("GET", "/rest/diskquota.xml", "", ctQuotaXML),
		no("POST", "/rest/diskquota.xml", "GET, PUT"),
		ok("PUT", "/rest/diskquota.xml", "<cacheQuotaConfiguration/>", ctQuotaXML),
		no("DELETE", "/rest/diskquota.xml", "GET, PUT"),

		ok("GET", "/rest/diskquota.json", "", ctJSON),
		no("POST", "/rest/diskquota.json", "GET, PUT"),
		ok("PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{}}`, ctJSON),
		no("DELETE", "/rest/diskquota.json", "GET, PUT"),

		// The method is checked before the layer.
		no("PUT", "/rest/seed/unknown.json", "GET, POST"),
		no("DELETE", "/rest/seed/unknown.xml", "GET, POST"),
		no("GET", "/rest/seed/unknown", "POST"),
	}
	for _, c := range cells {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			res := a.Do(t, c.method, c.path, c.body, c.headers...)
			if c.status == 405 {
				wantError(t, res, 405, "Method "+c.method+" not allowed on "+c.path)
				if got := res.Header.Get("Allow"); got != c.allow {
					t.Errorf("Allow: got %q, want %q", got, c.allow)
				}
				return
			}
			if res.Status != c.status {
				t.Fatalf("status: got %d (%q), want %d", res.Status, res.Body, c.status)
			}
			if got := res.Header.Get("Allow"); got != "" {
				t.Errorf("Allow on a %d: got %q, want none", res.Status, got)
			}
			if c.contentType != "" {
				if got := res.Header.Get("Content-Type"); got != c.contentType {
					t.Errorf("Content-Type: got %q, want %q", got, c.contentType)
				}
			}
			if c.path == "/rest/masstruncate" && c.method == "POST" && res.Body != "" {
				t.Errorf("body: got %q, want empty", res.Body)
			}
		})
	}
	killAll(t, a)
}

// TestRejectedMethodChangesNothing: a 405 with a valid body creates no task
// and consumes no id, and does not change the disk quota configuration.
func TestRejectedMethodChangesNothing(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	for _, c := range []struct{ name, method, path, body string }{
		{"seed body to seed.json", "POST", "/rest/seed.json", seedBodyJSON},
		{"seed body PUT", "PUT", "/rest/seed/demo:world.json", seedBodyJSON},
		{"seed body GET on kill path", "GET", "/rest/seed/demo:world", seedBodyJSON},
		{"quota patch POST", "POST", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := a.Do(t, c.method, c.path, c.body, "Content-Type", ctJSON)
			if res.Status != 405 {
				t.Errorf("status: got %d, want 405", res.Status)
			}
		})
	}
	if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Errorf("tasks after 405s: got %v, want none", rows)
	}
	if res := a.Do(t, "GET", "/rest/diskquota.json", ""); res.Body != defaultQuotaJSON {
		t.Errorf("disk quota after 405: got %s, want %s", res.Body, defaultQuotaJSON)
	}
	wantNextID(t, a, 1)
}

// TestUnknownPaths: unknown paths under /rest are 404 text/plain, whatever
// the method.
func TestUnknownPaths(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	for _, c := range []struct{ method, path string }{
		{"GET", "/rest"},
		{"GET", "/rest/"},
		{"GET", "/rest/nope"},
		{"POST", "/rest/nope"},
		{"DELETE", "/rest/nope"},
		{"GET", "/rest/seedx"},
		{"GET", "/rest/seed/"},
		{"POST", "/rest/seed/"},
		{"GET", "/rest/seed.xml"},
		{"GET", "/rest/seed/demo:world/extra.json"},
		{"POST", "/rest/seed/demo:world/"},
		{"GET", "/rest/masstruncate/truncateLayer"},
		{"GET", "/rest/masstruncate.json"},
		{"GET", "/rest/diskquota"},
		{"PUT", "/rest/diskquota"},
		{"GET", "/rest/diskquota.yaml"},
		{"GET", "/rest/diskquota.json/x"},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			res := a.Do(t, c.method, c.path, "")
			if res.Status != 404 {
				t.Errorf("status: got %d (%q), want 404", res.Status, res.Body)
			}
			if ct := res.Header.Get("Content-Type"); ct != ctText {
				t.Errorf("Content-Type: got %q, want %q", ct, ctText)
			}
		})
	}
}

// TestPostLayerDispatchByContentType: POST /rest/seed/{layer} is a seed
// request when its Content-Type is JSON or XML, answered in that format,
// and a kill request otherwise (§3, §4.5).
func TestPostLayerDispatchByContentType(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	next := int64(1)
	for _, c := range []struct {
		name, contentType, body string
		wantCT                  string // of a 200
		wantSeed                bool   // a task list with one task
		wantErr                 string // exact 400 text, or "" for 200
		wantErrPart             string // 400 whose text contains this
		wantStatus              int    // 415: refused media type
	}{
		{name: "application/json", contentType: "application/json", body: seedBodyJSON, wantCT: ctJSON, wantSeed: true},
		{name: "application/json with charset", contentType: "application/json; charset=utf-8", body: seedBodyJSON, wantCT: ctJSON, wantSeed: true},
		{name: "application/xml", contentType: "application/xml", body: seedBodyXML, wantCT: ctXML, wantSeed: true},
		{name: "text/xml", contentType: "text/xml", body: seedBodyXML, wantCT: ctXML, wantSeed: true},
		{name: "text/xml with charset", contentType: "text/xml; charset=UTF-8", body: seedBodyXML, wantCT: ctXML, wantSeed: true},
		{name: "form is a kill", contentType: ctForm, body: "kill_all=all", wantCT: ctHTML},
		{name: "text/plain is refused", contentType: "text/plain", body: "kill_all=all", wantStatus: 415},
		{name: "no content type with a body is refused", body: "kill_all=running", wantStatus: 415},
		{name: "JSON content type parses the body as a seed request", contentType: "application/json", body: "kill_all=all", wantErrPart: ""},
		{name: "XML content type parses the body as a seed request", contentType: "text/xml", body: "kill_all=all", wantErrPart: ""},
		{name: "form with a JSON body is a kill", contentType: ctForm, body: seedBodyJSON, wantErr: "Missing form parameter kill_all"},
		{name: "JSON seed body with unknown field", contentType: "application/json", body: `{"seedRequest":{"zoomStart":0,"zoomstop":0}}`, wantErr: "Unknown field: zoomstop"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h []string
			if c.contentType != "" {
				h = []string{"Content-Type", c.contentType}
			}
			res := a.Do(t, "POST", "/rest/seed/demo:world", c.body, h...)
			switch {
			case c.wantStatus != 0:
				wantUnsupported(t, res)
			case c.wantErr != "":
				wantError(t, res, 400, c.wantErr)
			case c.wantCT == "":
				wantBadRequest(t, res, c.wantErrPart)
			default:
				wantOK(t, res, c.wantCT)
				if !c.wantSeed {
					if !strings.Contains(res.Body, "<p>Terminated tasks:</p>") {
						t.Errorf("kill page: got %q, want it to list terminated tasks", res.Body)
					}
					return
				}
				var rows []row
				if c.wantCT == ctXML {
					rows = xmlRows(t, res.Body)
				} else {
					rows = jsonRows(t, res.Body)
				}
				checkRows(t, rows)
				wantIDs(t, rows, next, 1)
				next++
			}
		})
	}
	t.Run("unknown layer with JSON content type", func(t *testing.T) {
		res := a.Do(t, "POST", "/rest/seed/nosuchlayer", seedBodyJSON, "Content-Type", "application/json")
		wantError(t, res, 400, "Unknown layer: nosuchlayer")
	})
	t.Run("unknown layer with XML content type", func(t *testing.T) {
		res := a.Do(t, "POST", "/rest/seed/nosuchlayer", seedBodyXML, "Content-Type", "application/xml")
		wantError(t, res, 400, "Unknown layer: nosuchlayer")
	})
	wantNextID(t, a, next)
}

// TestAuthentication checks §2: without valid credentials every request,
// whatever its path, method or body, is 401 with the GWC realm, and
// nothing is read or changed.
func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := auth.AddAccount(users, apptest.User, apptest.Password, bcrypt.MinCost); err != nil {
		t.Fatal(err)
	}
	hash, err := auth.HashPassword("viewer pass", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(users, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("viewer:" + hash + ":user\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	a := apptest.Start(t, apptest.Options{DataDir: dir})

	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	type creds struct {
		name, user, password, header string // header: a raw Authorization value
	}
	credentials := []creds{
		{name: "none"},
		{name: "wrong password", user: apptest.User, password: "wrong"},
		{name: "empty password", user: apptest.User, password: ""},
		{name: "unknown user", user: "nobody", password: apptest.Password},
		{name: "not Basic", header: "Bearer " + b64(apptest.User+":"+apptest.Password)},
		{name: "Digest", header: `Digest username="admin"`},
		{name: "bad base64", header: "Basic !!!not-base64!!!"},
		{name: "no colon", header: "Basic " + b64(apptest.User+apptest.Password)},
		{name: "Basic without credentials", header: "Basic"},
		{name: "empty header", header: " "},
	}
	requests := []struct {
		name, method, path, body string
		headers                  []string
	}{
		{"task list", "GET", "/rest/seed.json", "", nil},
		{"layer task list", "GET", "/rest/seed/demo:world.xml", "", nil},
		{"seed JSON", "POST", "/rest/seed/demo:world.json", seedBodyJSON, nil},
		{"seed XML", "POST", "/rest/seed/demo:world.xml", seedBodyXML, nil},
		{"seed without suffix", "POST", "/rest/seed/demo:world", seedBodyJSON, []string{"Content-Type", "application/json"}},
		{"kill all", "POST", "/rest/seed", "kill_all=all", []string{"Content-Type", ctForm}},
		{"kill layer", "POST", "/rest/seed/slow:world", "kill_all=all", []string{"Content-Type", ctForm}},
		{"405 method", "PUT", "/rest/seed.json", seedBodyJSON, nil},
		{"405 on kill path", "GET", "/rest/seed", "", nil},
		{"unknown layer", "GET", "/rest/seed/nosuchlayer.json", "", nil},
		{"unknown layer seed", "POST", "/rest/seed/nosuchlayer.json", seedBodyJSON, nil},
		{"unknown path", "GET", "/rest/nope", "", nil},
		{"rest root", "GET", "/rest", "", nil},
		{"mass truncate types", "GET", "/rest/masstruncate", "", nil},
		{"mass truncate", "POST", "/rest/masstruncate", truncateBody, []string{"Content-Type", "text/xml"}},
		{"disk quota XML", "GET", "/rest/diskquota.xml", "", nil},
		{"disk quota patch JSON", "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true,"maxConcurrentCleanUps":7}}`, nil},
		{"disk quota patch XML", "PUT", "/rest/diskquota.xml", `<cacheQuotaConfiguration><enabled>true</enabled></cacheQuotaConfiguration>`, nil},
		{"malformed disk quota patch", "PUT", "/rest/diskquota.json", `{`, nil},
		{"over-large body", "PUT", "/rest/diskquota.json", strings.Repeat(" ", MaxBodyPlusOne), nil},
	}

	reject := func(t *testing.T, c creds, method, path, body string, headers []string) {
		t.Helper()
		h := append([]string(nil), headers...)
		if c.header != "" {
			h = append(h, "Authorization", c.header)
		}
		res := a.DoAuth(t, c.user, c.password, method, path, body, h...)
		wantError(t, res, 401, "Authentication required")
		if got, want := res.Header.Get("WWW-Authenticate"), `Basic realm="GeoWebCache Secured"`; got != want {
			t.Errorf("WWW-Authenticate: got %q, want %q", got, want)
		}
		if got := res.Header.Get("Allow"); got != "" {
			t.Errorf("Allow: got %q, want none on a 401", got)
		}
	}
	for _, c := range credentials {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range requests {
				t.Run(r.name, func(t *testing.T) { reject(t, c, r.method, r.path, r.body, r.headers) })
			}
		})
	}
	t.Run("non-administrator", func(t *testing.T) {
		for _, r := range requests {
			t.Run(r.name, func(t *testing.T) {
				res := a.DoAuth(t, "viewer", "viewer pass", r.method, r.path, r.body, r.headers...)
				if res.Status != 403 {
					t.Errorf("status: got %d (%q), want 403", res.Status, res.Body)
				}
				if ct := res.Header.Get("Content-Type"); ct != ctText {
					t.Errorf("Content-Type: got %q, want %q", ct, ctText)
				}
			})
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
			t.Errorf("tasks after rejected requests: got %v, want none", rows)
		}
		if res := a.Do(t, "GET", "/rest/diskquota.json", ""); res.Body != defaultQuotaJSON {
			t.Errorf("disk quota after rejected requests: got %s, want %s", res.Body, defaultQuotaJSON)
		}
		wantNextID(t, a, 1) // seeds the 2 tiles of demo:world level 0
	})

	t.Run("rejected kill and mass truncate touch nothing", func(t *testing.T) {
		stored := func() int {
			return len(a.TileKeys(t, "demo:world/"))
		}
		testenv.Eventually(t, 5*time.Second, "task 1 to store its tiles", func() bool {
			for _, r := range list(t, a, "/rest/seed.json") {
				if r[3] == 1 && r[4] != 2 {
					return false
				}
			}
			return stored() >= 2
		})
		before := stored()
		rows := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":4}}`)
		defer killAll(t, a)
		wantIDs(t, rows, 2, 1)
		for _, c := range credentials {
			reject(t, c, "POST", "/rest/seed", "kill_all=all", []string{"Content-Type", ctForm})
			reject(t, c, "POST", "/rest/seed/slow:world", "kill_all=running", []string{"Content-Type", ctForm})
			reject(t, c, "POST", "/rest/seed/slow:world?kill_all=all", "", nil)
			reject(t, c, "POST", "/rest/masstruncate", truncateBody, []string{"Content-Type", "text/xml"})
		}
		for _, r := range list(t, a, "/rest/seed.json") {
			if r[3] == 2 && r[4] != 1 {
				t.Errorf("task 2 after rejected kills: got %v, want it running", r)
			}
		}
		if after := stored(); after != before {
			t.Errorf("demo:world objects after rejected mass truncates: got %d, want %d", after, before)
		}
		killAll(t, a)
		wantNextID(t, a, 3)
	})
	t.Run("valid credentials", func(t *testing.T) {
		res := a.DoAuth(t, "", "", "GET", "/rest/seed.json", "", "Authorization", "Basic "+b64(apptest.User+":"+apptest.Password))
		wantOK(t, res, ctJSON)
		res = a.DoAuth(t, "", "", "GET", "/rest/seed.json", "", "Authorization", "basic "+b64(apptest.User+":"+apptest.Password))
		if res.Status != http.StatusOK {
			t.Errorf("lower-case scheme: got %d, want 200", res.Status)
		}
	})
}

// MaxBodyPlusOne is one byte over the contract's 1 MiB body limit.
const MaxBodyPlusOne = 1<<20 + 1
