package rest_test

// Every error text the contract quotes (§4.2–§4.4 seed, §6 kill, §7 mass
// truncate, §8 disk quota), exact; and for the errors whose text it leaves
// open, 400 text/plain with one line naming the problem. A rejected request
// creates no task and consumes no id.

import (
	"net/http"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

type errCase struct {
	name   string
	path   string
	body   string
	want   string   // exact message; if "", parts are checked instead
	parts  []string // substrings of the message
	header []string
}

func runErrCases(t *testing.T, a *apptest.App, method string, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := a.Do(t, method, c.path, c.body, c.header...)
			if c.want != "" {
				wantError(t, res, 400, c.want)
			} else {
				wantBadRequest(t, res, c.parts...)
			}
		})
	}
}

func TestSeedErrors(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	const states = "/rest/seed/topp:states"
	const world = "/rest/seed/demo:world"
	j := func(fields string) string { return `{"seedRequest":{` + fields + `}}` }
	x := func(fields string) string { return `<seedRequest>` + fields + `</seedRequest>` }
	z := `"zoomStart":0,"zoomStop":1`
	zx := `<zoomStart>0</zoomStart><zoomStop>1</zoomStop>`
	cases := []errCase{
		// §4.2 / §4.3: quoted texts.
		{name: "unknown grid set JSON", path: states + ".json", body: j(`"gridSetId":"EPSG:1234",` + z), want: "Unknown grid set EPSG:1234 for layer topp:states"},
		{name: "unknown grid set XML", path: states + ".xml", body: x(`<gridSetId>EPSG:1234</gridSetId>` + zx), want: "Unknown grid set EPSG:1234 for layer topp:states"},
		{name: "grid set of another layer", path: "/rest/seed/slow:world.json", body: j(`"gridSetId":"EPSG:900913",` + z), want: "Unknown grid set EPSG:900913 for layer slow:world"},
		{name: "gridSetId wins over srs", path: states + ".json", body: j(`"gridSetId":"EPSG:1234","srs":{"number":4326},` + z), want: "Unknown grid set EPSG:1234 for layer topp:states"},
		{name: "zoomStart missing JSON", path: states + ".json", body: j(`"zoomStop":1`), want: "zoomStart is required"},
		{name: "zoomStart missing XML", path: states + ".xml", body: x(`<zoomStop>1</zoomStop>`), want: "zoomStart is required"},
		{name: "zoomStop missing JSON", path: states + ".json", body: j(`"zoomStart":1`), want: "zoomStop is required"},
		{name: "zoomStop missing XML", path: states + ".xml", body: x(`<zoomStart>1</zoomStart>`), want: "zoomStop is required"},
		{name: "zoomStart above highest level", path: world + ".json", body: j(`"gridSetId":"EPSG:4326","zoomStart":25,"zoomStop":25`), want: "zoomStart 25 is above the highest zoom level 21 of grid set EPSG:4326"},
		{name: "zoomStart above layer's zoomStop", path: states + ".json", body: j(`"zoomStart":13,"zoomStop":14`), want: "zoomStart 13 is above the highest zoom level 12 of grid set EPSG:4326"},
		{name: "zoomStart above custom grid set", path: world + ".xml", body: x(`<gridSetId>TopLeft4326</gridSetId><zoomStart>4</zoomStart><zoomStop>4</zoomStop>`), want: "zoomStart 4 is above the highest zoom level 3 of grid set TopLeft4326"},
		{name: "zoomStart > zoomStop", path: states + ".json", body: j(`"zoomStart":5,"zoomStop":2`), want: "zoomStart 5 is greater than zoomStop 2"},
		{name: "zoomStart > zoomStop XML", path: states + ".xml", body: x(`<zoomStart>5</zoomStart><zoomStop>2</zoomStop>`), want: "zoomStart 5 is greater than zoomStop 2"},
		{name: "unsupported format", path: states + ".json", body: j(`"format":"image/bogus",` + z), want: "Unsupported format image/bogus for layer topp:states"},
		{name: "format of another layer", path: "/rest/seed/slow:world.xml", body: x(`<format>image/jpeg</format>` + zx), want: "Unsupported format image/jpeg for layer slow:world"},
		{name: "unknown type JSON", path: states + ".json", body: j(`"type":"explode",` + z), want: "Unknown type: explode"},
		{name: "unknown type XML", path: states + ".xml", body: x(`<type>explode</type>` + zx), want: "Unknown type: explode"},
		{name: "unknown field JSON", path: states + ".json", body: j(`"zoomStart":0,"zoomstop":1`), want: "Unknown field: zoomstop"},
		{name: "unknown field XML", path: states + ".xml", body: x(`<zoomStart>0</zoomStart><zoomstop>1</zoomstop>`), want: "Unknown field: zoomstop"},
		{name: "unknown layer JSON", path: "/rest/seed/nosuchlayer.json", body: j(z), want: "Unknown layer: nosuchlayer"},
		{name: "unknown layer XML", path: "/rest/seed/nosuchlayer.xml", body: x(zx), want: "Unknown layer: nosuchlayer"},
		{name: "more than one grid set for srs JSON", path: world + ".json", body: j(`"srs":{"number":4326},` + z), want: "More than one grid set of layer demo:world matches EPSG:4326; gridSetId must be specified"},
		{name: "more than one grid set for srs XML", path: world + ".xml", body: x(`<srs><number>4326</number></srs>` + zx), want: "More than one grid set of layer demo:world matches EPSG:4326; gridSetId must be specified"},
		{name: "no grid set for srs JSON", path: states + ".json", body: j(`"srs":{"number":3035},` + z), want: "No grid set of layer topp:states uses EPSG:3035"},
		{name: "no grid set for srs XML", path: states + ".xml", body: x(`<srs><number>3035</number></srs>` + zx), want: "No grid set of layer topp:states uses EPSG:3035"},
		{name: "no grid set for web mercator", path: "/rest/seed/slow:world.json", body: j(`"srs":{"number":3857},` + z), want: "No grid set of layer slow:world uses EPSG:3857"},
		// §4.4
		{name: "invalid STYLES JSON", path: states + ".json", body: j(z + `,"parameters":{"entry":[{"string":["STYLES","foo"]}]}`), want: "Invalid value for parameter STYLES: foo"},
		{name: "invalid STYLES single entry", path: states + ".json", body: j(z + `,"parameters":{"entry":{"string":["STYLES","foo"]}}`), want: "Invalid value for parameter STYLES: foo"},
		{name: "invalid styles lower-case name", path: states + ".json", body: j(z + `,"parameters":{"entry":{"string":["styles","foo"]}}`), want: "Invalid value for parameter STYLES: foo"},
		{name: "invalid STYLES XML", path: states + ".xml", body: x(zx + `<parameters><entry><string>STYLES</string><string>foo</string></entry></parameters>`), want: "Invalid value for parameter STYLES: foo"},
		{name: "invalid CQL_FILTER", path: states + ".json", body: j(z + `,"parameters":{"entry":[{"string":["STYLES","pophatch"]},{"string":["CQL_FILTER","a;b"]}]}`), want: "Invalid value for parameter CQL_FILTER: a;b"},
		// Bodies: malformed, empty, wrong root, DTD, trailing text.
		{name: "malformed XML", path: states + ".xml", body: `<seedRequest><zoomStart>0</zoomStart>`, parts: []string{"Malformed XML"}},
		{name: "mismatched XML tags", path: states + ".xml", body: `<seedRequest><zoomStart>0</zoomStop></seedRequest>`, parts: []string{"Malformed XML"}},
		{name: "malformed JSON", path: states + ".json", body: `{"seedRequest":{"zoomStart":0,`},
		{name: "JSON with XML body", path: states + ".json", body: x(zx)},
		{name: "XML with JSON body", path: states + ".xml", body: j(z)},
		{name: "empty body JSON", path: states + ".json", body: ``},
		{name: "empty body XML", path: states + ".xml", body: ``},
		{name: "blank body JSON", path: states + ".json", body: " \n "},
		{name: "wrong root JSON", path: states + ".json", body: `{"seedRequests":{` + z + `}}`, parts: []string{"seedRequest"}},
		{name: "wrong root XML", path: states + ".xml", body: `<seedRequests>` + zx + `</seedRequests>`, parts: []string{"seedRequest"}},
		{name: "two root keys JSON", path: states + ".json", body: `{"seedRequest":{` + z + `},"other":{}}`},
		{name: "JSON array", path: states + ".json", body: `[` + j(z) + `]`},
		{name: "JSON null", path: states + ".json", body: `null`},
		{name: "seedRequest not an object", path: states + ".json", body: `{"seedRequest":5}`},
		{name: "DOCTYPE", path: states + ".xml", body: `<!DOCTYPE seedRequest [<!ENTITY z "0">]>` + x(`<zoomStart>&z;</zoomStart><zoomStop>1</zoomStop>`)},
		{name: "DOCTYPE after declaration", path: states + ".xml", body: `<?xml version="1.0"?>` + "\n" + `<!DOCTYPE seedRequest SYSTEM "http://example.org/x.dtd">` + x(zx)},
		{name: "trailing text after JSON", path: states + ".json", body: j(z) + ` x`},
		{name: "trailing bracket after JSON", path: states + ".json", body: j(z) + `]`},
		{name: "trailing object after JSON", path: states + ".json", body: j(z) + `{}`},
		{name: "trailing text after stray braces", path: states + ".json", body: j(z) + `}} 1`},
		{name: "second root XML", path: states + ".xml", body: x(zx) + `<seedRequest/>`},
		// Field values.
		{name: "negative zoomStart", path: states + ".json", body: j(`"zoomStart":-1,"zoomStop":1`)},
		{name: "zoomStart not a number", path: states + ".json", body: j(`"zoomStart":"one","zoomStop":1`), parts: []string{"zoomStart"}},
		{name: "zoomStart fraction", path: states + ".json", body: j(`"zoomStart":0.5,"zoomStop":1`), parts: []string{"zoomStart"}},
		{name: "zoomStop not a number XML", path: states + ".xml", body: x(`<zoomStart>0</zoomStart><zoomStop>many</zoomStop>`), parts: []string{"zoomStop"}},
		{name: "threadCount not a number", path: states + ".json", body: j(z + `,"threadCount":"many"`), parts: []string{"threadCount"}},
		{name: "filterUpdate not a boolean", path: states + ".json", body: j(z + `,"filterUpdate":"maybe"`), parts: []string{"filterUpdate"}},
		{name: "three bounds", path: states + ".json", body: j(z + `,"bounds":{"coords":{"double":["-124.0","22.0","-66.0"]}}`)},
		{name: "five bounds XML", path: states + ".xml", body: x(zx + `<bounds><coords><double>1</double><double>2</double><double>3</double><double>4</double><double>5</double></coords></bounds>`)},
		{name: "minx equals maxx", path: states + ".json", body: j(z + `,"bounds":{"coords":{"double":[-100,22,-100,50]}}`)},
		{name: "miny above maxy", path: states + ".json", body: j(z + `,"bounds":{"coords":{"double":[-124,50,-66,22]}}`)},
		{name: "non-finite bound", path: states + ".json", body: j(z + `,"bounds":{"coords":{"double":["NaN","22","-66","50"]}}`)},
		{name: "infinite bound XML", path: states + ".xml", body: x(zx + `<bounds><coords><double>-Infinity</double><double>22</double><double>-66</double><double>50</double></coords></bounds>`)},
		{name: "non-numeric bound", path: states + ".json", body: j(z + `,"bounds":{"coords":{"double":["a","22","-66","50"]}}`)},
		{name: "parameter entry of three strings", path: states + ".json", body: j(z + `,"parameters":{"entry":[{"string":["STYLES","pophatch","x"]}]}`)},
		{name: "parameter entry of one string XML", path: states + ".xml", body: x(zx + `<parameters><entry><string>STYLES</string></entry></parameters>`)},
		{name: "srs not a number", path: states + ".json", body: j(z + `,"srs":{"number":"EPSG:4326"}`), parts: []string{"srs"}},
	}
	runErrCases(t, a, "POST", cases)

	if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Errorf("tasks after rejected seed requests: got %v, want none", rows)
	}
	wantNextID(t, a, 1)
}

func TestKillErrors(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	form := []string{"Content-Type", ctForm}
	unknownCode := func(code string) string {
		return "Unknown kill_all code: '" + code + "'. One of all|running|pending is expected."
	}
	runErrCases(t, a, "POST", []errCase{
		{name: "unknown code", path: "/rest/seed", body: "kill_all=bogus", header: form, want: unknownCode("bogus")},
		{name: "unknown code on a layer", path: "/rest/seed/demo:world", body: "kill_all=bogus", header: form, want: unknownCode("bogus")},
		{name: "unknown code in query", path: "/rest/seed?kill_all=bogus", body: "", want: unknownCode("bogus")},
		{name: "code 2", path: "/rest/seed", body: "kill_all=2", header: form, want: unknownCode("2")},
		{name: "missing parameter", path: "/rest/seed", body: "foo=bar", header: form, want: "Missing form parameter kill_all"},
		{name: "empty body", path: "/rest/seed", body: "", header: form, want: "Missing form parameter kill_all"},
		{name: "empty body without content type", path: "/rest/seed", body: "", want: "Missing form parameter kill_all"},
		{name: "missing parameter on a layer", path: "/rest/seed/demo:world", body: "", header: form, want: "Missing form parameter kill_all"},
		{name: "unknown layer", path: "/rest/seed/nosuchlayer", body: "kill_all=all", header: form, want: "Unknown layer: nosuchlayer"},
		{name: "unknown layer, query code", path: "/rest/seed/x?kill_all=all", body: "", want: "Unknown layer: x"},
	})
	wantNextID(t, a, 1)
}

func TestMassTruncateErrors(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	xmlCT := []string{"Content-Type", "text/xml"}
	runErrCases(t, a, "POST", []errCase{
		{name: "unknown layer", path: "/rest/masstruncate", body: `<truncateLayer><layerName>nosuchlayer</layerName></truncateLayer>`, header: xmlCT, want: "Could not find layer nosuchlayer"},
		{name: "unknown layer without content type", path: "/rest/masstruncate", body: `<truncateLayer><layerName>nosuchlayer</layerName></truncateLayer>`, want: "Could not find layer nosuchlayer"},
		{name: "layerName missing", path: "/rest/masstruncate", body: `<truncateLayer/>`, header: xmlCT, want: "layerName is required"},
		{name: "layerName empty", path: "/rest/masstruncate", body: `<truncateLayer><layerName></layerName></truncateLayer>`, header: xmlCT, want: "layerName is required"},
		{name: "layerName blank", path: "/rest/masstruncate", body: `<truncateLayer><layerName>  </layerName></truncateLayer>`, header: xmlCT, want: "layerName is required"},
		{name: "truncateAll", path: "/rest/masstruncate", body: `<truncateAll/>`, header: xmlCT, want: "Unknown mass truncate request type: truncateAll"},
		{name: "truncateExtent", path: "/rest/masstruncate", body: `<truncateExtent><layerName>demo:world</layerName></truncateExtent>`, header: xmlCT, want: "Unknown mass truncate request type: truncateExtent"},
		{name: "JSON content type", path: "/rest/masstruncate", body: `{"truncateLayer":{"layerName":"demo:world"}}`, header: []string{"Content-Type", "application/json"}, want: "Format extension unknown or not specified: application/json"},
		{name: "JSON content type with XML body", path: "/rest/masstruncate", body: truncateBody, header: []string{"Content-Type", "application/json"}, want: "Format extension unknown or not specified: application/json"},
		{name: "text/plain content type", path: "/rest/masstruncate", body: truncateBody, header: []string{"Content-Type", "text/plain"}, want: "Format extension unknown or not specified: text/plain"},
		{name: "malformed", path: "/rest/masstruncate", body: `<truncateLayer><layerName>demo:world</layerName>`, header: xmlCT},
		{name: "empty body", path: "/rest/masstruncate", body: ``, header: xmlCT},
		{name: "DOCTYPE", path: "/rest/masstruncate", body: `<!DOCTYPE truncateLayer [<!ENTITY l "demo:world">]><truncateLayer><layerName>&l;</layerName></truncateLayer>`, header: xmlCT},
	})
	// A browser's post without a Content-Type (a CORS simple request a page
	// of any site may send) is refused whatever its origin, before the
	// body is read; curl's still truncates, as GeoWebCache's does.
	for _, h := range [][]string{{"Origin", a.URL}, {"Sec-Fetch-Site", "same-origin"}, {"Sec-Fetch-Mode", "no-cors"}} {
		res := a.Do(t, "POST", "/rest/masstruncate", truncateBody, h...)
		wantUnsupported(t, res)
		if !strings.Contains(res.Body, "Content-Type: text/xml") {
			t.Errorf("%s: %q, want it to name text/xml", h[0], res.Body)
		}
	}
	if res := a.Do(t, "POST", "/rest/masstruncate", truncateBody, "Origin", a.URL, "Content-Type", "text/xml"); res.Status != http.StatusOK {
		t.Errorf("the service's own page with text/xml: %d %q", res.Status, res.Body)
	}
	if res := a.Do(t, "POST", "/rest/masstruncate", truncateBody); res.Status != http.StatusOK {
		t.Errorf("no Content-Type, not a browser: %d %q", res.Status, res.Body)
	}
}

func TestDiskQuotaErrors(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	const pj, px = "/rest/diskquota.json", "/rest/diskquota.xml"
	j := func(fields string) string { return `{"cacheQuotaConfiguration":{` + fields + `}}` }
	x := func(fields string) string { return `<cacheQuotaConfiguration>` + fields + `</cacheQuotaConfiguration>` }
	cases := []errCase{
		{name: "diskBlockSize 0 JSON", path: pj, body: j(`"diskBlockSize":0`), want: "diskBlockSize shall be a positive integer: 0"},
		{name: "diskBlockSize 0 XML", path: px, body: x(`<diskBlockSize>0</diskBlockSize>`), want: "diskBlockSize shall be a positive integer: 0"},
		{name: "diskBlockSize negative", path: pj, body: j(`"diskBlockSize":"-4096"`), want: "diskBlockSize shall be a positive integer: -4096"},
		{name: "cacheCleanUpFrequency 0 JSON", path: pj, body: j(`"cacheCleanUpFrequency":0`), want: "cacheCleanUpFrequency shall be a positive integer: 0"},
		{name: "cacheCleanUpFrequency 0 XML", path: px, body: x(`<cacheCleanUpFrequency>0</cacheCleanUpFrequency>`), want: "cacheCleanUpFrequency shall be a positive integer: 0"},
		{name: "cacheCleanUpUnits FORTNIGHTS JSON", path: pj, body: j(`"cacheCleanUpUnits":"FORTNIGHTS"`), want: "Unknown cacheCleanUpUnits value: FORTNIGHTS"},
		{name: "cacheCleanUpUnits FORTNIGHTS XML", path: px, body: x(`<cacheCleanUpUnits>FORTNIGHTS</cacheCleanUpUnits>`), want: "Unknown cacheCleanUpUnits value: FORTNIGHTS"},
		{name: "cacheCleanUpUnits MILLISECONDS", path: pj, body: j(`"cacheCleanUpUnits":"MILLISECONDS"`), want: "Unknown cacheCleanUpUnits value: MILLISECONDS"},
		{name: "maxConcurrentCleanUps -1 JSON", path: pj, body: j(`"maxConcurrentCleanUps":-1`), want: "maxConcurrentCleanUps shall be a positive integer: -1"},
		{name: "maxConcurrentCleanUps 0 JSON", path: pj, body: j(`"maxConcurrentCleanUps":0`), want: "maxConcurrentCleanUps shall be a positive integer: 0"},
		{name: "maxConcurrentCleanUps 0 XML", path: px, body: x(`<maxConcurrentCleanUps>0</maxConcurrentCleanUps>`), want: "maxConcurrentCleanUps shall be a positive integer: 0"},
		{name: "policy FIFO JSON", path: pj, body: j(`"globalExpirationPolicyName":"FIFO"`), want: "Unknown expiration policy: FIFO"},
		{name: "policy FIFO XML", path: px, body: x(`<globalExpirationPolicyName>FIFO</globalExpirationPolicyName>`), want: "Unknown expiration policy: FIFO"},
		{name: "units ZZiB JSON", path: pj, body: j(`"globalQuota":{"value":"5","units":"ZZiB"}`), want: "Unknown units value: ZZiB"},
		{name: "units ZZiB XML", path: px, body: x(`<globalQuota><value>5</value><units>ZZiB</units></globalQuota>`), want: "Unknown units value: ZZiB"},
		{name: "units PiB (GWC only)", path: pj, body: j(`"globalQuota":{"value":"1","units":"PiB"}`), want: "Unknown units value: PiB"},
		{name: "quota value -5 string", path: pj, body: j(`"globalQuota":{"value":"-5","units":"MiB"}`), want: "Invalid quota value: -5"},
		{name: "quota value -5 number", path: pj, body: j(`"globalQuota":{"value":-5,"units":"MiB"}`), want: "Invalid quota value: -5"},
		{name: "quota value -5 XML", path: px, body: x(`<globalQuota><value>-5</value><units>MiB</units></globalQuota>`), want: "Invalid quota value: -5"},
		{name: "quota value not numeric", path: pj, body: j(`"globalQuota":{"value":"lots","units":"MiB"}`), want: "Invalid quota value: lots"},
		{name: "layer quota without quota JSON", path: pj, body: j(`"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"LRU"}]`), want: "layerQuotas: quota is required"},
		{name: "layer quota without quota XML", path: px, body: x(`<layerQuotas><LayerQuota><layer>topp:states</layer><expirationPolicyName>LRU</expirationPolicyName></LayerQuota></layerQuotas>`), want: "layerQuotas: quota is required"},
		{name: "layer quota with bad units", path: pj, body: j(`"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"1","units":"ZZiB"}}]`), want: "Unknown units value: ZZiB"},
		{name: "layer quota with bad policy", path: pj, body: j(`"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"FIFO","quota":{"value":"1","units":"MiB"}}]`), parts: []string{"FIFO"}},
		{name: "layer quota without layer", path: pj, body: j(`"layerQuotas":[{"expirationPolicyName":"LRU","quota":{"value":"1","units":"MiB"}}]`), parts: []string{"layer"}},
		{name: "layer quota without policy", path: pj, body: j(`"layerQuotas":[{"layer":"topp:states","quota":{"value":"1","units":"MiB"}}]`), parts: []string{"expirationPolicyName"}},
		{name: "globalQuota without units", path: pj, body: j(`"globalQuota":{"value":"5"}`), parts: []string{"units"}},
		{name: "globalQuota without value", path: px, body: x(`<globalQuota><units>MiB</units></globalQuota>`), parts: []string{"value"}},
		// Unknown field, wrong type, wrong root, malformed.
		{name: "unknown field JSON", path: pj, body: j(`"enabled":true,"bogusField":1`), parts: []string{"bogusField"}},
		{name: "unknown field XML", path: px, body: x(`<enabled>true</enabled><bogusField>1</bogusField>`), parts: []string{"bogusField"}},
		{name: "wrong type JSON", path: pj, body: j(`"maxConcurrentCleanUps":"many"`), parts: []string{"maxConcurrentCleanUps"}},
		{name: "wrong type XML", path: px, body: x(`<maxConcurrentCleanUps>many</maxConcurrentCleanUps>`), parts: []string{"maxConcurrentCleanUps"}},
		{name: "enabled not a boolean", path: pj, body: j(`"enabled":"yes"`), parts: []string{"enabled"}},
		{name: "enabled object", path: pj, body: j(`"enabled":{}`), parts: []string{"enabled"}},
		{name: "wrong root JSON", path: pj, body: `{"quotaConfiguration":{}}`},
		{name: "wrong root XML", path: px, body: `<quotaConfiguration/>`},
		{name: "two root keys JSON", path: pj, body: `{"cacheQuotaConfiguration":{},"gwcQuotaConfiguration":{}}`},
		{name: "malformed JSON", path: pj, body: `{"cacheQuotaConfiguration":{"enabled":true`},
		{name: "malformed XML", path: px, body: `<cacheQuotaConfiguration><enabled>true</enabled>`},
		{name: "empty body JSON", path: pj, body: ``},
		{name: "empty body XML", path: px, body: ``},
		{name: "trailing text JSON", path: pj, body: j(`"enabled":true`) + ` true`},
		{name: "DOCTYPE", path: px, body: `<!DOCTYPE cacheQuotaConfiguration [<!ENTITY t "true">]>` + x(`<enabled>&t;</enabled>`)},
		// All or nothing: valid fields next to one bad one.
		{name: "one bad field among good ones JSON", path: pj, body: j(`"enabled":true,"diskBlockSize":8192,"globalQuota":{"value":"1","units":"GiB"},"maxConcurrentCleanUps":0`), want: "maxConcurrentCleanUps shall be a positive integer: 0"},
		{name: "one bad field among good ones XML", path: px, body: x(`<enabled>true</enabled><cacheCleanUpUnits>HOURS</cacheCleanUpUnits><layerQuotas><LayerQuota><layer>topp:states</layer><expirationPolicyName>LRU</expirationPolicyName><quota><value>1</value><units>MiB</units></quota></LayerQuota></layerQuotas><globalExpirationPolicyName>FIFO</globalExpirationPolicyName>`), want: "Unknown expiration policy: FIFO"},
		{name: "bad layer quota after good fields", path: pj, body: j(`"enabled":true,"layerQuotas":[{"layer":"a","expirationPolicyName":"LRU","quota":{"value":"1","units":"MiB"}},{"layer":"b","expirationPolicyName":"LRU"}]`), want: "layerQuotas: quota is required"},
	}
	runErrCases(t, a, "PUT", cases)

	// Nothing was applied.
	if res := a.Do(t, "GET", pj, ""); res.Body != defaultQuotaJSON {
		t.Errorf("GET %s after rejected patches:\n got %s\nwant %s", pj, res.Body, defaultQuotaJSON)
	}
	if res := a.Do(t, "GET", px, ""); res.Body != defaultQuotaXML {
		t.Errorf("GET %s after rejected patches:\n got %s\nwant %s", px, res.Body, defaultQuotaXML)
	}
}
