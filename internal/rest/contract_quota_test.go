package rest_test

// Contract §8: the disk quota configuration, GET and PUT (patch) in XML and
// JSON, byte-exact against the contract's documents.

import (
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

// The §8.2 documents, verbatim.
const (
	exampleQuotaXML = `<?xml version="1.0" encoding="UTF-8"?>
<cacheQuotaConfiguration>
  <enabled>true</enabled>
  <diskBlockSize>4096</diskBlockSize>
  <cacheCleanUpFrequency>5</cacheCleanUpFrequency>
  <cacheCleanUpUnits>SECONDS</cacheCleanUpUnits>
  <maxConcurrentCleanUps>5</maxConcurrentCleanUps>
  <globalExpirationPolicyName>LRU</globalExpirationPolicyName>
  <globalQuota>
    <value>100</value>
    <units>MiB</units>
  </globalQuota>
  <layerQuotas/>
</cacheQuotaConfiguration>`
	exampleQuotaJSON    = `{"cacheQuotaConfiguration":{"enabled":true,"diskBlockSize":4096,"cacheCleanUpFrequency":5,"cacheCleanUpUnits":"SECONDS","maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":"100","units":"MiB"}}}`
	exampleQuotaPutJSON = `{"cacheQuotaConfiguration":{"enabled":true,"diskBlockSize":4096,"cacheCleanUpFrequency":5,"cacheCleanUpUnits":"SECONDS","maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":"100","units":"MiB"},"layerQuotas":[]}}`
	// The §8.2 <LayerQuota> and JSON layer quota examples.
	exampleLayerQuotaXML  = `<LayerQuota><layer>topp:states</layer><expirationPolicyName>LRU</expirationPolicyName><quota><value>10</value><units>MiB</units></quota></LayerQuota>`
	exampleLayerQuotaJSON = `"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}]`
)

// The §8.1 defaults rendered as §8.2 documents.
var (
	defaultQuotaXML = strings.NewReplacer(
		"<enabled>true", "<enabled>false",
		"<cacheCleanUpFrequency>5", "<cacheCleanUpFrequency>10",
		"<maxConcurrentCleanUps>5", "<maxConcurrentCleanUps>2",
		">LRU<", ">LFU<",
		"<value>100", "<value>500",
	).Replace(exampleQuotaXML)
	defaultQuotaJSON = `{"cacheQuotaConfiguration":{"enabled":false,"diskBlockSize":4096,"cacheCleanUpFrequency":10,"cacheCleanUpUnits":"SECONDS","maxConcurrentCleanUps":2,"globalExpirationPolicyName":"LFU","globalQuota":{"value":"500","units":"MiB"}}}`
)

// withLayerQuotas returns the example JSON with layer quotas lq (a JSON
// array's content) inserted.
func withLayerQuotas(lq string) string {
	return strings.TrimSuffix(exampleQuotaJSON, "}}") + `,"layerQuotas":[` + lq + `]}}`
}

func withLayerQuotasXML(lq string) string {
	return strings.Replace(compactXML(exampleQuotaXML), "<layerQuotas/>", "<layerQuotas>"+lq+"</layerQuotas>", 1)
}

func TestDiskQuotaDefaults(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	for _, c := range []struct{ path, ct, want string }{
		{"/rest/diskquota.xml", ctQuotaXML, defaultQuotaXML},
		{"/rest/diskquota.json", ctJSON, defaultQuotaJSON},
	} {
		t.Run(c.path, func(t *testing.T) {
			res := a.Do(t, "GET", c.path, "")
			wantOK(t, res, c.ct)
			if res.Body != c.want {
				t.Errorf("body:\n got %s\nwant %s", res.Body, c.want)
			}
		})
	}
}

// TestDiskQuotaPatch applies a sequence of patches to one app; each step
// checks the PUT answer and the configuration a later GET shows.
func TestDiskQuotaPatch(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	const pj, px = "/rest/diskquota.json", "/rest/diskquota.xml"
	lqStates := `{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}`
	lqWorld2G := `{"layer":"demo:world","expirationPolicyName":"LFU","quota":{"value":"2","units":"GiB"}}`
	lqWorld1536 := `{"layer":"demo:world","expirationPolicyName":"LFU","quota":{"value":"1536","units":"MiB"}}`
	steps := []struct {
		name, path, body string
		wantPut          string // exact PUT answer, if not ""
		wantJSON         string // exact GET /rest/diskquota.json afterwards
		wantXML          string // GET /rest/diskquota.xml afterwards, compared after compactXML, if not ""
	}{
		{
			name:     "example values JSON",
			path:     pj,
			body:     `{"cacheQuotaConfiguration":{"enabled":true,"cacheCleanUpFrequency":5,"maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":"100","units":"MiB"}}}`,
			wantPut:  exampleQuotaPutJSON,
			wantJSON: exampleQuotaJSON,
		},
		{name: "empty patch JSON", path: pj, body: `{"cacheQuotaConfiguration":{}}`, wantPut: exampleQuotaPutJSON, wantJSON: exampleQuotaJSON},
		{name: "empty patch XML", path: px, body: `<cacheQuotaConfiguration/>`, wantPut: exampleQuotaXML, wantJSON: exampleQuotaJSON},
		{name: "empty patch XML with declaration", path: px, body: `<?xml version="1.0" encoding="UTF-8"?>` + "\n<cacheQuotaConfiguration>\n</cacheQuotaConfiguration>\n", wantPut: exampleQuotaXML, wantJSON: exampleQuotaJSON},
		{name: "empty patch with GWC root JSON", path: pj, body: `{"gwcQuotaConfiguration":{}}`, wantPut: exampleQuotaPutJSON, wantJSON: exampleQuotaJSON},
		{
			name:     "GWC root alias JSON",
			path:     pj,
			body:     `{"gwcQuotaConfiguration":{"maxConcurrentCleanUps":"3"}}`,
			wantJSON: strings.Replace(exampleQuotaJSON, `"maxConcurrentCleanUps":5`, `"maxConcurrentCleanUps":3`, 1),
		},
		{
			name:     "GWC root alias XML",
			path:     px,
			body:     `<gwcQuotaConfiguration><maxConcurrentCleanUps>5</maxConcurrentCleanUps></gwcQuotaConfiguration>`,
			wantPut:  exampleQuotaXML,
			wantJSON: exampleQuotaJSON,
		},
		{
			name:     "layer quotas as array",
			path:     pj,
			body:     `{"cacheQuotaConfiguration":{` + exampleLayerQuotaJSON + `}}`,
			wantPut:  withLayerQuotas(lqStates),
			wantJSON: withLayerQuotas(lqStates),
			wantXML:  withLayerQuotasXML(exampleLayerQuotaXML),
		},
		{name: "clear with []", path: pj, body: `{"cacheQuotaConfiguration":{"layerQuotas":[]}}`, wantPut: exampleQuotaPutJSON, wantJSON: exampleQuotaJSON, wantXML: compactXML(exampleQuotaXML)},
		{
			name:     "layer quotas in Jettison form, array",
			path:     pj,
			body:     `{"cacheQuotaConfiguration":{"layerQuotas":{"LayerQuota":[` + lqStates + `,{"layer":"demo:world","expirationPolicyName":"LFU","quota":{"value":2048,"units":"MiB"}}]}}}`,
			wantPut:  withLayerQuotas(lqStates + "," + lqWorld2G),
			wantJSON: withLayerQuotas(lqStates + "," + lqWorld2G),
			wantXML: withLayerQuotasXML(exampleLayerQuotaXML +
				`<LayerQuota><layer>demo:world</layer><expirationPolicyName>LFU</expirationPolicyName><quota><value>2</value><units>GiB</units></quota></LayerQuota>`),
		},
		{name: "clear with <layerQuotas/>", path: px, body: `<cacheQuotaConfiguration><layerQuotas/></cacheQuotaConfiguration>`, wantPut: exampleQuotaXML, wantJSON: exampleQuotaJSON},
		{
			name:     "layer quotas in Jettison form, single object",
			path:     pj,
			body:     `{"cacheQuotaConfiguration":{"layerQuotas":{"LayerQuota":{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}}}}`,
			wantPut:  withLayerQuotas(lqStates),
			wantJSON: withLayerQuotas(lqStates),
		},
		{
			name:     "absent layerQuotas keep theirs",
			path:     pj,
			body:     `{"cacheQuotaConfiguration":{"enabled":true}}`,
			wantPut:  withLayerQuotas(lqStates),
			wantJSON: withLayerQuotas(lqStates),
		},
		{
			name: "layer quotas XML replace the list; quotaStore ignored",
			path: px,
			body: `<cacheQuotaConfiguration><layerQuotas><LayerQuota><layer>demo:world</layer><expirationPolicyName>LFU</expirationPolicyName>` +
				`<quota><value>1536</value><units>MiB</units></quota></LayerQuota></layerQuotas><quotaStore>H2</quotaStore></cacheQuotaConfiguration>`,
			wantJSON: withLayerQuotas(lqWorld1536),
			wantXML:  withLayerQuotasXML(`<LayerQuota><layer>demo:world</layer><expirationPolicyName>LFU</expirationPolicyName><quota><value>1536</value><units>MiB</units></quota></LayerQuota>`),
		},
		{name: "clear with <layerQuotas></layerQuotas>", path: px, body: `<cacheQuotaConfiguration><layerQuotas></layerQuotas></cacheQuotaConfiguration>`, wantPut: exampleQuotaXML, wantJSON: exampleQuotaJSON},
		{
			name:     "numbers and booleans as strings; quota value as number with fraction",
			path:     pj,
			body:     `{"cacheQuotaConfiguration":{"enabled":"false","diskBlockSize":"8192","cacheCleanUpFrequency":"2","cacheCleanUpUnits":"MINUTES","maxConcurrentCleanUps":"4","globalExpirationPolicyName":"LFU","globalQuota":{"value":1.5,"units":"GiB"},"quotaStore":"H2"}}`,
			wantJSON: `{"cacheQuotaConfiguration":{"enabled":false,"diskBlockSize":8192,"cacheCleanUpFrequency":2,"cacheCleanUpUnits":"MINUTES","maxConcurrentCleanUps":4,"globalExpirationPolicyName":"LFU","globalQuota":{"value":"1536","units":"MiB"}}}`,
		},
		{
			name:     "units on output: largest unit dividing exactly",
			path:     px,
			body:     `<cacheQuotaConfiguration><cacheCleanUpUnits>DAYS</cacheCleanUpUnits><globalQuota><value>2048</value><units>MiB</units></globalQuota></cacheQuotaConfiguration>`,
			wantJSON: `{"cacheQuotaConfiguration":{"enabled":false,"diskBlockSize":8192,"cacheCleanUpFrequency":2,"cacheCleanUpUnits":"DAYS","maxConcurrentCleanUps":4,"globalExpirationPolicyName":"LFU","globalQuota":{"value":"2","units":"GiB"}}}`,
		},
		{
			name:     "bytes that are no whole KiB",
			path:     pj,
			body:     `{"cacheQuotaConfiguration":{"cacheCleanUpUnits":"HOURS","globalQuota":{"value":"1000","units":"B"}}}`,
			wantJSON: `{"cacheQuotaConfiguration":{"enabled":false,"diskBlockSize":8192,"cacheCleanUpFrequency":2,"cacheCleanUpUnits":"HOURS","maxConcurrentCleanUps":4,"globalExpirationPolicyName":"LFU","globalQuota":{"value":"1000","units":"B"}}}`,
		},
		{
			name:     "the contract's XML document PUT verbatim",
			path:     px,
			body:     exampleQuotaXML,
			wantPut:  exampleQuotaXML,
			wantJSON: exampleQuotaJSON,
		},
		{
			name:     "the contract's JSON PUT answer PUT verbatim",
			path:     pj,
			body:     exampleQuotaPutJSON,
			wantPut:  exampleQuotaPutJSON,
			wantJSON: exampleQuotaJSON,
		},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			res := a.Do(t, "PUT", s.path, s.body)
			ct := ctJSON
			if s.path == px {
				ct = ctQuotaXML
			}
			wantOK(t, res, ct)
			if s.wantPut != "" && res.Body != s.wantPut {
				t.Errorf("PUT answer:\n got %s\nwant %s", res.Body, s.wantPut)
			}
			if s.path == pj && !strings.Contains(res.Body, `"layerQuotas":[`) {
				t.Errorf("JSON PUT answer %s: got no layerQuotas, want it always present", res.Body)
			}
			get := a.Do(t, "GET", pj, "")
			wantOK(t, get, ctJSON)
			if get.Body != s.wantJSON {
				t.Errorf("GET %s:\n got %s\nwant %s", pj, get.Body, s.wantJSON)
			}
			getX := a.Do(t, "GET", px, "")
			wantOK(t, getX, ctQuotaXML)
			if s.wantXML != "" && compactXML(getX.Body) != s.wantXML {
				t.Errorf("GET %s:\n got %s\nwant %s", px, compactXML(getX.Body), s.wantXML)
			}
			if strings.Contains(get.Body+getX.Body+res.Body, "quotaStore") {
				t.Errorf("quotaStore written: got %s / %s", get.Body, getX.Body)
			}
		})
	}
	t.Run("GET XML is the contract's document", func(t *testing.T) {
		res := a.Do(t, "GET", px, "")
		if res.Body != exampleQuotaXML {
			t.Errorf("GET %s:\n got %s\nwant %s", px, res.Body, exampleQuotaXML)
		}
	})
}

// TestDiskQuotaExampleRoundTrip: PUT the §8.2 example values on a fresh app
// in each format and GET both documents back verbatim.
func TestDiskQuotaExampleRoundTrip(t *testing.T) {
	for _, c := range []struct{ name, path, body, wantPut string }{
		{"XML", "/rest/diskquota.xml", `<cacheQuotaConfiguration><enabled>true</enabled><cacheCleanUpFrequency>5</cacheCleanUpFrequency><maxConcurrentCleanUps>5</maxConcurrentCleanUps><globalExpirationPolicyName>LRU</globalExpirationPolicyName><globalQuota><value>100</value><units>MiB</units></globalQuota></cacheQuotaConfiguration>`, exampleQuotaXML},
		{"JSON", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true,"cacheCleanUpFrequency":5,"maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":100,"units":"MiB"}}}`, exampleQuotaPutJSON},
		{"JSON, GWC root, strings", "/rest/diskquota.json", `{"gwcQuotaConfiguration":{"enabled":"true","cacheCleanUpFrequency":"5","maxConcurrentCleanUps":"5","globalExpirationPolicyName":"LRU","globalQuota":{"value":"0.09765625","units":"GiB"}}}`, exampleQuotaPutJSON},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := apptest.Start(t, apptest.Options{})
			res := a.Do(t, "PUT", c.path, c.body)
			if res.Status != 200 || res.Body != c.wantPut {
				t.Errorf("PUT: got %d\n%s\nwant 200\n%s", res.Status, res.Body, c.wantPut)
			}
			if res := a.Do(t, "GET", "/rest/diskquota.xml", ""); res.Body != exampleQuotaXML {
				t.Errorf("GET XML:\n got %s\nwant %s", res.Body, exampleQuotaXML)
			}
			if res := a.Do(t, "GET", "/rest/diskquota.json", ""); res.Body != exampleQuotaJSON {
				t.Errorf("GET JSON:\n got %s\nwant %s", res.Body, exampleQuotaJSON)
			}
		})
	}
}

// TestPersistenceAcrossRestart: the disk quota configuration (§8.3) and the
// task id sequence (§5.3) survive a restart.
func TestPersistenceAcrossRestart(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	res := a.Do(t, "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true,"cacheCleanUpFrequency":5,"maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":"100","units":"MiB"},`+exampleLayerQuotaJSON+`}}`)
	if res.Status != 200 {
		t.Fatalf("PUT: got %d %q, want 200", res.Status, res.Body)
	}
	wantNextID(t, a, 1)
	a.Stop()

	b := apptest.Start(t, apptest.Options{DataDir: a.DataDir})
	want := withLayerQuotas(`{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}`)
	if res := b.Do(t, "GET", "/rest/diskquota.json", ""); res.Body != want {
		t.Errorf("GET JSON after restart:\n got %s\nwant %s", res.Body, want)
	}
	if res := b.Do(t, "GET", "/rest/diskquota.xml", ""); compactXML(res.Body) != withLayerQuotasXML(exampleLayerQuotaXML) {
		t.Errorf("GET XML after restart:\n got %s\nwant %s", compactXML(res.Body), withLayerQuotasXML(exampleLayerQuotaXML))
	}
	wantNextID(t, b, 2)
}
