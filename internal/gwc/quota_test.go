package gwc

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
)

// The bodies of contract §8.2 and §8.3, verbatim.
const (
	contractQuotaXML = `<?xml version="1.0" encoding="UTF-8"?>
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
	contractQuotaGetJSON = `{"cacheQuotaConfiguration":{"enabled":true,"diskBlockSize":4096,"cacheCleanUpFrequency":5,"cacheCleanUpUnits":"SECONDS","maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":"100","units":"MiB"}}}`
	contractQuotaPutJSON = `{"cacheQuotaConfiguration":{"enabled":true,"diskBlockSize":4096,"cacheCleanUpFrequency":5,"cacheCleanUpUnits":"SECONDS","maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":"100","units":"MiB"},"layerQuotas":[]}}`
	// The layer quota fragments of §8.2.
	contractLayerQuotaXML  = `<LayerQuota><layer>topp:states</layer><expirationPolicyName>LRU</expirationPolicyName><quota><value>10</value><units>MiB</units></quota></LayerQuota>`
	contractLayerQuotaJSON = `"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}]`
)

// contractQuota is the configuration the §8.2 documents show.
var contractQuota = quota.Config{
	Enabled: true, DiskBlockSize: 4096, CleanUpFrequency: 5, CleanUpUnits: "SECONDS",
	MaxConcurrentCleanUps: 5, GlobalPolicy: "LRU", GlobalQuota: 100 << 20,
}

func withLayerQuotas(c quota.Config, lqs ...quota.LayerQuota) quota.Config {
	c.LayerQuotas = lqs
	return c
}

var statesQuota = quota.LayerQuota{Layer: "topp:states", Policy: "LRU", Quota: 10 << 20}

func TestQuotaConfigXML(t *testing.T) {
	tests := []struct {
		name string
		c    quota.Config
		want string
	}{
		{"contract §8.2", contractQuota, contractQuotaXML},
		{"defaults", quota.Default(), `<?xml version="1.0" encoding="UTF-8"?>
<cacheQuotaConfiguration>
  <enabled>false</enabled>
  <diskBlockSize>4096</diskBlockSize>
  <cacheCleanUpFrequency>10</cacheCleanUpFrequency>
  <cacheCleanUpUnits>SECONDS</cacheCleanUpUnits>
  <maxConcurrentCleanUps>2</maxConcurrentCleanUps>
  <globalExpirationPolicyName>LFU</globalExpirationPolicyName>
  <globalQuota>
    <value>500</value>
    <units>MiB</units>
  </globalQuota>
  <layerQuotas/>
</cacheQuotaConfiguration>`},
		{"layer quotas", withLayerQuotas(contractQuota, statesQuota, quota.LayerQuota{Layer: "a&<b>", Policy: "LFU", Quota: 1536 << 20}),
			`<?xml version="1.0" encoding="UTF-8"?>
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
  <layerQuotas>
    <LayerQuota>
      <layer>topp:states</layer>
      <expirationPolicyName>LRU</expirationPolicyName>
      <quota>
        <value>10</value>
        <units>MiB</units>
      </quota>
    </LayerQuota>
    <LayerQuota>
      <layer>a&amp;&lt;b&gt;</layer>
      <expirationPolicyName>LFU</expirationPolicyName>
      <quota>
        <value>1536</value>
        <units>MiB</units>
      </quota>
    </LayerQuota>
  </layerQuotas>
</cacheQuotaConfiguration>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(QuotaConfigXML(tt.c))
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestQuotaConfigXMLLayerQuotaFragment checks that a layer quota carries the
// elements of the contract's one-line fragment, in its order.
func TestQuotaConfigXMLLayerQuotaFragment(t *testing.T) {
	got := string(QuotaConfigXML(withLayerQuotas(contractQuota, statesQuota)))
	var compact strings.Builder
	for line := range strings.Lines(got) {
		compact.WriteString(strings.TrimSpace(line))
	}
	if !strings.Contains(compact.String(), "<layerQuotas>"+contractLayerQuotaXML+"</layerQuotas>") {
		t.Errorf("got %s, want it to contain %s once whitespace is removed", got, contractLayerQuotaXML)
	}
}

func TestQuotaConfigJSON(t *testing.T) {
	tests := []struct {
		name   string
		c      quota.Config
		always bool
		want   string
	}{
		{"contract §8.2 GET", contractQuota, false, contractQuotaGetJSON},
		{"contract §8.3 PUT", contractQuota, true, contractQuotaPutJSON},
		{"GET with layer quotas", withLayerQuotas(contractQuota, statesQuota), false,
			strings.TrimSuffix(contractQuotaGetJSON, "}}") + "," + contractLayerQuotaJSON + "}}"},
		{"PUT with layer quotas", withLayerQuotas(contractQuota, statesQuota, quota.LayerQuota{Layer: `a"b`, Policy: "LFU", Quota: 0}), true,
			strings.TrimSuffix(contractQuotaGetJSON, "}}") + "," + strings.TrimSuffix(contractLayerQuotaJSON, "]") +
				`,{"layer":"a\"b","expirationPolicyName":"LFU","quota":{"value":"0","units":"B"}}]}}`},
		{"defaults", quota.Default(), false,
			`{"cacheQuotaConfiguration":{"enabled":false,"diskBlockSize":4096,"cacheCleanUpFrequency":10,"cacheCleanUpUnits":"SECONDS","maxConcurrentCleanUps":2,"globalExpirationPolicyName":"LFU","globalQuota":{"value":"500","units":"MiB"}}}`},
		{"2048 MiB is 2 GiB", func() quota.Config { c := contractQuota; c.GlobalQuota = 2048 << 20; return c }(), false,
			strings.Replace(contractQuotaGetJSON, `{"value":"100","units":"MiB"}`, `{"value":"2","units":"GiB"}`, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(QuotaConfigJSON(tt.c, tt.always))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDecodeQuotaPatch(t *testing.T) {
	lq := []quota.LayerQuota{statesQuota}
	two := []quota.LayerQuota{statesQuota, {Layer: "b", Policy: "lfu", Quota: 1536}}
	none := []quota.LayerQuota{}
	tests := []struct {
		name string
		xml  string
		json string
		want quota.Patch
	}{
		{"empty patch",
			`<cacheQuotaConfiguration/>`, `{"cacheQuotaConfiguration":{}}`, quota.Patch{}},
		{"GWC root alias",
			`<gwcQuotaConfiguration><enabled>true</enabled></gwcQuotaConfiguration>`, `{"gwcQuotaConfiguration":{"enabled":true}}`,
			quota.Patch{Enabled: ptr(true)}},
		{"contract GET documents are full patches",
			contractQuotaXML, contractQuotaPutJSON,
			quota.Patch{Enabled: ptr(true), DiskBlockSize: ptr[int64](4096), CleanUpFrequency: ptr[int64](5),
				CleanUpUnits: ptr("SECONDS"), MaxConcurrentCleanUps: ptr[int64](5), GlobalPolicy: ptr("LRU"),
				GlobalQuota: ptr[int64](100 << 20), LayerQuotas: &none}},
		{"numbers and booleans as strings",
			"", `{"cacheQuotaConfiguration":{"enabled":"false","diskBlockSize":"512","maxConcurrentCleanUps":"3","globalQuota":{"value":1.5,"units":"GiB"}}}`,
			quota.Patch{Enabled: ptr(false), DiskBlockSize: ptr[int64](512), MaxConcurrentCleanUps: ptr[int64](3), GlobalQuota: ptr[int64](1536 << 20)}},
		{"enum text passed through trimmed",
			`<cacheQuotaConfiguration><cacheCleanUpUnits> minutes </cacheCleanUpUnits><globalExpirationPolicyName>FIFO</globalExpirationPolicyName></cacheQuotaConfiguration>`,
			`{"cacheQuotaConfiguration":{"cacheCleanUpUnits":" minutes ","globalExpirationPolicyName":"FIFO"}}`,
			quota.Patch{CleanUpUnits: ptr("minutes"), GlobalPolicy: ptr("FIFO")}},
		{"range checks are Apply's",
			`<cacheQuotaConfiguration><maxConcurrentCleanUps>0</maxConcurrentCleanUps></cacheQuotaConfiguration>`,
			`{"cacheQuotaConfiguration":{"maxConcurrentCleanUps":0}}`,
			quota.Patch{MaxConcurrentCleanUps: ptr[int64](0)}},
		{"quotaStore ignored",
			`<cacheQuotaConfiguration><quotaStore>H2</quotaStore></cacheQuotaConfiguration>`,
			`{"cacheQuotaConfiguration":{"quotaStore":"H2"}}`, quota.Patch{}},
		{"quotaStore of any shape ignored",
			`<cacheQuotaConfiguration><quotaStore><x>1</x></quotaStore></cacheQuotaConfiguration>`,
			`{"cacheQuotaConfiguration":{"quotaStore":{"x":[1]}}}`, quota.Patch{}},
		{"layer quotas as array",
			"", `{"cacheQuotaConfiguration":{` + contractLayerQuotaJSON + `}}`, quota.Patch{LayerQuotas: &lq}},
		{"layer quotas, one element",
			`<cacheQuotaConfiguration><layerQuotas>` + contractLayerQuotaXML + `</layerQuotas></cacheQuotaConfiguration>`,
			`{"cacheQuotaConfiguration":{"layerQuotas":{"LayerQuota":{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"10","units":"MiB"}}}}}`,
			quota.Patch{LayerQuotas: &lq}},
		{"layer quotas, two elements",
			`<cacheQuotaConfiguration><layerQuotas>` + contractLayerQuotaXML +
				`<LayerQuota><layer>b</layer><expirationPolicyName>lfu</expirationPolicyName><quota><value>1.5</value><units>KiB</units></quota></LayerQuota>` +
				`</layerQuotas></cacheQuotaConfiguration>`,
			`{"cacheQuotaConfiguration":{"layerQuotas":{"LayerQuota":[{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":10,"units":"MiB"}},` +
				`{"layer":"b","expirationPolicyName":"lfu","quota":{"value":"1.5","units":"KiB"}}]}}}`,
			quota.Patch{LayerQuotas: &two}},
		{"clear layer quotas",
			`<cacheQuotaConfiguration><layerQuotas/></cacheQuotaConfiguration>`, `{"cacheQuotaConfiguration":{"layerQuotas":[]}}`,
			quota.Patch{LayerQuotas: &none}},
		{"clear layer quotas, Jettison forms",
			"<cacheQuotaConfiguration><layerQuotas>\n</layerQuotas></cacheQuotaConfiguration>", `{"cacheQuotaConfiguration":{"layerQuotas":""}}`,
			quota.Patch{LayerQuotas: &none}},
		{"clear layer quotas, empty object",
			"", `{"cacheQuotaConfiguration":{"layerQuotas":{"LayerQuota":[]}}}`, quota.Patch{LayerQuotas: &none}},
		{"null is absent",
			"", `{"cacheQuotaConfiguration":{"enabled":null,"layerQuotas":null}}`, quota.Patch{}},
		{"GWC extra closing brace",
			"", `{"cacheQuotaConfiguration":{"enabled":true}}}`, quota.Patch{Enabled: ptr(true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.xml != "" {
				got, err := DecodeQuotaPatchXML([]byte(tt.xml))
				if err != nil {
					t.Errorf("XML: got error %v", err)
				} else if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("XML: got %s, want %s", dumpPatch(got), dumpPatch(tt.want))
				}
			}
			if tt.json != "" {
				got, err := DecodeQuotaPatchJSON([]byte(tt.json))
				if err != nil {
					t.Errorf("JSON: got error %v", err)
				} else if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("JSON: got %s, want %s", dumpPatch(got), dumpPatch(tt.want))
				}
			}
		})
	}
}

func dumpPatch(p quota.Patch) string {
	var b strings.Builder
	v := reflect.ValueOf(p)
	for i := range v.NumField() {
		f := v.Field(i)
		b.WriteString(v.Type().Field(i).Name + ":")
		if f.IsNil() {
			b.WriteString("nil ")
		} else {
			b.WriteString(strings.TrimSpace(strings.ReplaceAll(fmtAny(f.Elem().Interface()), "\n", " ")) + " ")
		}
	}
	return "{" + strings.TrimSpace(b.String()) + "}"
}

// quotaXML and quotaJSON wrap inner in a disk quota document.
func quotaXML(inner string) string {
	return "<cacheQuotaConfiguration>" + inner + "</cacheQuotaConfiguration>"
}

func quotaJSON(inner string) string { return `{"cacheQuotaConfiguration":{` + inner + `}}` }

// quotaPatchErrorCases are disk quota documents, in XML and JSON, that
// GeoWebCache refuses, with its message ("": any).
var quotaPatchErrorCases = []struct {
	name string
	xml  string
	json string
	want string
}{
	{"wrong type",
		quotaXML(`<maxConcurrentCleanUps>many</maxConcurrentCleanUps>`), quotaJSON(`"maxConcurrentCleanUps":"many"`), "Invalid value for maxConcurrentCleanUps: many"},
	{"wrong boolean",
		quotaXML(`<enabled>yes</enabled>`), quotaJSON(`"enabled":"yes"`), "Invalid value for enabled: yes"},
	{"object for a number",
		"", quotaJSON(`"diskBlockSize":{}`), "Invalid value for diskBlockSize: expected an integer, got an object"},
	{"array for text",
		"", quotaJSON(`"cacheCleanUpUnits":["SECONDS"]`), "Invalid value for cacheCleanUpUnits: expected text, got an array"},
	{"unknown field",
		quotaXML(`<diskblocksize>1</diskblocksize>`), quotaJSON(`"diskblocksize":1`), "Unknown field: diskblocksize"},
	{"unknown field in globalQuota",
		quotaXML(`<globalQuota><value>1</value><units>B</units><bytes>1</bytes></globalQuota>`), quotaJSON(`"globalQuota":{"value":1,"units":"B","bytes":1}`), "Unknown field: bytes"},
	{"unknown field in layerQuotas",
		quotaXML(`<layerQuotas><layerQuota/></layerQuotas>`), quotaJSON(`"layerQuotas":{"layerQuota":{}}`), "Unknown field: layerQuota"},
	{"unknown field in a layer quota",
		quotaXML(`<layerQuotas><LayerQuota><usage/></LayerQuota></layerQuotas>`), quotaJSON(`"layerQuotas":[{"usage":""}]`), "Unknown field: usage"},
	{"duplicate field",
		quotaXML(`<enabled>true</enabled><enabled>false</enabled>`), quotaJSON(`"enabled":true,"enabled":false`), "Duplicate field: enabled"},
	{"unknown units",
		quotaXML(`<globalQuota><value>1</value><units>ZZiB</units></globalQuota>`), quotaJSON(`"globalQuota":{"value":"1","units":"ZZiB"}`), "Unknown units value: ZZiB"},
	{"negative quota",
		quotaXML(`<globalQuota><value>-5</value><units>MiB</units></globalQuota>`), quotaJSON(`"globalQuota":{"value":-5,"units":"MiB"}`), "Invalid quota value: -5"},
	{"non-numeric quota",
		quotaXML(`<globalQuota><value>lots</value><units>MiB</units></globalQuota>`), quotaJSON(`"globalQuota":{"value":"lots","units":"MiB"}`), "Invalid quota value: lots"},
	{"quota too large",
		"", quotaJSON(`"globalQuota":{"value":"8388608","units":"TiB"}`), "Invalid quota value: 8388608 TiB is larger than 9223372036854775807 bytes"},
	{"globalQuota without units",
		quotaXML(`<globalQuota><value>1</value></globalQuota>`), quotaJSON(`"globalQuota":{"value":1}`), "globalQuota units is required"},
	{"globalQuota without value",
		quotaXML(`<globalQuota><units>MiB</units></globalQuota>`), quotaJSON(`"globalQuota":{"units":"MiB"}`), "globalQuota value is required"},
	{"empty globalQuota",
		quotaXML(`<globalQuota/>`), quotaJSON(`"globalQuota":""`), "globalQuota value is required"},
	{"globalQuota as a number",
		"", quotaJSON(`"globalQuota":100`), "Invalid value for globalQuota: expected an object, got 100"},
	{"quota value as object",
		"", quotaJSON(`"globalQuota":{"value":{},"units":"B"}`), "Invalid value for globalQuota value: expected a number, got an object"},
	{"layer quota without quota",
		quotaXML(`<layerQuotas><LayerQuota><layer>a</layer><expirationPolicyName>LRU</expirationPolicyName></LayerQuota></layerQuotas>`),
		quotaJSON(`"layerQuotas":[{"layer":"a","expirationPolicyName":"LRU"}]`), "layerQuotas: quota is required"},
	{"layer quota without layer",
		quotaXML(`<layerQuotas><LayerQuota><expirationPolicyName>LRU</expirationPolicyName><quota><value>1</value><units>B</units></quota></LayerQuota></layerQuotas>`),
		quotaJSON(`"layerQuotas":{"LayerQuota":{"expirationPolicyName":"LRU","quota":{"value":1,"units":"B"}}}`), "layerQuotas: layer is required"},
	{"layer quota with empty layer",
		"", quotaJSON(`"layerQuotas":[{"layer":" ","expirationPolicyName":"LRU","quota":{"value":1,"units":"B"}}]`), "layerQuotas: layer is required"},
	{"layer quota without policy",
		quotaXML(`<layerQuotas><LayerQuota><layer>a</layer><quota><value>1</value><units>B</units></quota></LayerQuota></layerQuotas>`),
		quotaJSON(`"layerQuotas":[{"layer":"a","quota":{"value":1,"units":"B"}}]`), "layerQuotas: expirationPolicyName is required"},
	{"layer quota with bad units",
		"", quotaJSON(`"layerQuotas":[{"layer":"a","expirationPolicyName":"LRU","quota":{"value":1,"units":"ZZiB"}}]`), "Unknown units value: ZZiB"},
	{"layer quota without units",
		"", quotaJSON(`"layerQuotas":[{"layer":"a","expirationPolicyName":"LRU","quota":{"value":1}}]`), "layerQuotas quota units is required"},
	{"empty layer quota",
		quotaXML(`<layerQuotas><LayerQuota/></layerQuotas>`), quotaJSON(`"layerQuotas":[{}]`), "layerQuotas: layer is required"},
	{"layer quota as a string",
		"", quotaJSON(`"layerQuotas":["a"]`), "Invalid value for layerQuotas: expected an object, got a"},
	{"layerQuotas as a number",
		"", quotaJSON(`"layerQuotas":5`), "Invalid value for layerQuotas: expected an object, got 5"},
	{"layerQuotas as text",
		quotaXML(`<layerQuotas>topp:states</layerQuotas>`), "", "Invalid value for layerQuotas: expected elements, got topp:states"},
	{"wrong root",
		`<diskQuota/>`, `{"diskQuota":{}}`, ""},
	{"two roots in JSON",
		"", `{"cacheQuotaConfiguration":{},"gwcQuotaConfiguration":{}}`,
		"The JSON document must be an object with the single key cacheQuotaConfiguration or gwcQuotaConfiguration"},
	{"doctype",
		`<!DOCTYPE cacheQuotaConfiguration><cacheQuotaConfiguration/>`, "",
		"DTDs are not allowed: the body must not contain <!DOCTYPE or other XML directives"},
	{"malformed",
		quotaXML(`<enabled>true</enabled`), quotaJSON(`"enabled":true,`), ""},
	{"trailing data",
		quotaXML("") + "<x/>", quotaJSON("") + "]", ""},
	{"empty body", "", "", ""},
}

func TestDecodeQuotaPatchErrors(t *testing.T) {
	for _, tt := range quotaPatchErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			check := func(format string, decode func([]byte) (quota.Patch, error), body string) {
				got, err := decode([]byte(body))
				if err == nil {
					t.Errorf("%s: got %s, want error %q", format, dumpPatch(got), tt.want)
					return
				}
				checkInvalid(t, err)
				if msg := apperr.Message(err); tt.want != "" && msg != tt.want {
					t.Errorf("%s: got %q, want %q", format, msg, tt.want)
				}
			}
			if tt.xml != "" || tt.name == "empty body" {
				check("XML", DecodeQuotaPatchXML, tt.xml)
			}
			if tt.json != "" || tt.name == "empty body" {
				check("JSON", DecodeQuotaPatchJSON, tt.json)
			}
		})
	}
}

func TestDecodeQuotaPatchMessages(t *testing.T) {
	tests := []struct {
		name   string
		decode func([]byte) (quota.Patch, error)
		body   string
		want   string
	}{
		{"XML wrong root", DecodeQuotaPatchXML, `<diskQuota/>`, "Unknown root element diskQuota: expected cacheQuotaConfiguration or gwcQuotaConfiguration"},
		{"JSON wrong root", DecodeQuotaPatchJSON, `{"diskQuota":{}}`, "Unknown root key diskQuota: expected cacheQuotaConfiguration or gwcQuotaConfiguration"},
		{"XML empty", DecodeQuotaPatchXML, ``, "Empty request body: expected a cacheQuotaConfiguration document"},
		{"JSON empty", DecodeQuotaPatchJSON, ``, "Empty request body: expected a JSON object with the single key cacheQuotaConfiguration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.decode([]byte(tt.body))
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			if msg := apperr.Message(err); msg != tt.want {
				t.Errorf("got %q, want %q", msg, tt.want)
			}
		})
	}
}

// TestQuotaPatchApply runs the contract's PUT flow: decode, then Apply, with
// the contract's error texts coming out of Apply.
func TestQuotaPatchApply(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // error text; "" for success
	}{
		{"success", `{"cacheQuotaConfiguration":{"enabled":true,"cacheCleanUpFrequency":5,"maxConcurrentCleanUps":5,"globalExpirationPolicyName":"LRU","globalQuota":{"value":"100","units":"MiB"}}}`, ""},
		{"diskBlockSize", `{"cacheQuotaConfiguration":{"diskBlockSize":0}}`, "diskBlockSize shall be a positive integer: 0"},
		{"cacheCleanUpFrequency", `{"cacheQuotaConfiguration":{"cacheCleanUpFrequency":"0"}}`, "cacheCleanUpFrequency shall be a positive integer: 0"},
		{"cacheCleanUpUnits", `{"cacheQuotaConfiguration":{"cacheCleanUpUnits":"FORTNIGHTS"}}`, "Unknown cacheCleanUpUnits value: FORTNIGHTS"},
		{"maxConcurrentCleanUps -1", `{"cacheQuotaConfiguration":{"maxConcurrentCleanUps":-1}}`, "maxConcurrentCleanUps shall be a positive integer: -1"},
		{"maxConcurrentCleanUps 0", `{"cacheQuotaConfiguration":{"maxConcurrentCleanUps":0}}`, "maxConcurrentCleanUps shall be a positive integer: 0"},
		{"policy", `{"cacheQuotaConfiguration":{"globalExpirationPolicyName":"FIFO"}}`, "Unknown expiration policy: FIFO"},
		{"layer policy", `{"cacheQuotaConfiguration":{"layerQuotas":[{"layer":"a","expirationPolicyName":"FIFO","quota":{"value":1,"units":"B"}}]}}`, "Unknown expiration policy: FIFO"},
		{"all or nothing", `{"cacheQuotaConfiguration":{"enabled":true,"maxConcurrentCleanUps":0}}`, "maxConcurrentCleanUps shall be a positive integer: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodeQuotaPatchJSON([]byte(tt.body))
			if err != nil {
				t.Fatalf("decode: got error %v", err)
			}
			c, err := quota.Default().Apply(p)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("apply: got error %v", err)
				}
				if got := string(QuotaConfigJSON(c, true)); got != contractQuotaPutJSON {
					t.Errorf("got %s, want %s", got, contractQuotaPutJSON)
				}
				return
			}
			if err == nil {
				t.Fatalf("apply: got %+v, want error %q", c, tt.want)
			}
			if msg := apperr.Message(err); msg != tt.want {
				t.Errorf("got %q, want %q", msg, tt.want)
			}
		})
	}
}

// TestQuotaRoundTrip checks that every encoded configuration decodes to a
// patch that rebuilds it, in both formats.
func TestQuotaRoundTrip(t *testing.T) {
	configs := map[string]quota.Config{
		"contract":     contractQuota,
		"defaults":     quota.Default(),
		"layer quotas": withLayerQuotas(contractQuota, statesQuota, quota.LayerQuota{Layer: "a&<b> \"c\"", Policy: "LFU", Quota: 1}),
	}
	for name, c := range configs {
		t.Run(name, func(t *testing.T) {
			from := quota.Config{DiskBlockSize: 1, CleanUpFrequency: 1, CleanUpUnits: "DAYS", MaxConcurrentCleanUps: 1, GlobalPolicy: "LFU",
				LayerQuotas: []quota.LayerQuota{{Layer: "old", Policy: "LRU"}}}
			for format, body := range map[string][]byte{"XML": QuotaConfigXML(c), "JSON": QuotaConfigJSON(c, true)} {
				decode := DecodeQuotaPatchJSON
				if format == "XML" {
					decode = DecodeQuotaPatchXML
				}
				p, err := decode(body)
				if err != nil {
					t.Fatalf("%s: decode %s: %v", format, body, err)
				}
				got, err := from.Apply(p)
				if err != nil {
					t.Fatalf("%s: apply: %v", format, err)
				}
				if !reflect.DeepEqual(got, c) {
					t.Errorf("%s: got %+v, want %+v", format, got, c)
				}
			}
		})
	}
}

func fmtAny(v any) string { return fmt.Sprintf("%+v", v) }
