package gwc

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"tilecache/internal/apperr"
)

func ptr[T any](v T) *T { return &v }

// The two bodies of contract §4.1, verbatim.
const (
	contractSeedXML = `<seedRequest>
  <name>topp:states</name>
  <bounds><coords>
    <double>-124.0</double><double>22.0</double><double>-66.0</double><double>50.0</double>
  </coords></bounds>
  <gridSetId>EPSG:4326</gridSetId>
  <zoomStart>1</zoomStart>
  <zoomStop>12</zoomStop>
  <format>image/png</format>
  <type>seed</type>
  <threadCount>4</threadCount>
  <parameters>
    <entry><string>STYLES</string><string>pophatch</string></entry>
    <entry><string>CQL_FILTER</string><string>TOTPOP &gt; 10000</string></entry>
  </parameters>
</seedRequest>
`
	contractSeedJSON = `{"seedRequest":{
  "name":"topp:states",
  "bounds":{"coords":{"double":["-124.0","22.0","-66.0","50.0"]}},
  "gridSetId":"EPSG:4326",
  "zoomStart":1, "zoomStop":12,
  "format":"image/png", "type":"seed", "threadCount":4,
  "parameters":{"entry":[
    {"string":["STYLES","pophatch"]},
    {"string":["CQL_FILTER","TOTPOP > 10000"]}]}
}}
`
	// contractSeedCurlJSON is the body of the curl example in §4.5.
	contractSeedCurlJSON = `{"seedRequest":{"zoomStart":0,"zoomStop":5,"type":"seed","threadCount":2}}`
)

var contractSeed = SeedRequest{
	GridSetID:    "EPSG:4326",
	HasGridSetID: true,
	Bounds:       &[4]float64{-124, 22, -66, 50},
	ZoomStart:    ptr(1),
	ZoomStop:     ptr(12),
	Format:       "image/png",
	Type:         "seed",
	ThreadCount:  ptr(4),
	Parameters:   [][2]string{{"STYLES", "pophatch"}, {"CQL_FILTER", "TOTPOP > 10000"}},
}

func TestDecodeSeedRequestContractExamples(t *testing.T) {
	x, err := DecodeSeedRequestXML([]byte(contractSeedXML))
	if err != nil {
		t.Fatalf("XML: got error %v", err)
	}
	j, err := DecodeSeedRequestJSON([]byte(contractSeedJSON))
	if err != nil {
		t.Fatalf("JSON: got error %v", err)
	}
	if !reflect.DeepEqual(x, contractSeed) {
		t.Errorf("XML: got %s, want %s", dump(x), dump(contractSeed))
	}
	if !reflect.DeepEqual(j, x) {
		t.Errorf("JSON: got %s, want the XML result %s", dump(j), dump(x))
	}
	c, err := DecodeSeedRequestJSON([]byte(contractSeedCurlJSON))
	if err != nil {
		t.Fatalf("curl example: got error %v", err)
	}
	want := SeedRequest{ZoomStart: ptr(0), ZoomStop: ptr(5), Type: "seed", ThreadCount: ptr(2)}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("curl example: got %s, want %s", dump(c), dump(want))
	}
}

// dump prints a SeedRequest with its pointers followed.
func dump(r SeedRequest) string {
	var b strings.Builder
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		f := v.Field(i)
		b.WriteString(v.Type().Field(i).Name + ":")
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				b.WriteString("nil ")
				continue
			}
			f = f.Elem()
		}
		fmt.Fprintf(&b, "%v ", f.Interface())
	}
	return "{" + strings.TrimSpace(b.String()) + "}"
}

// everySeedField is the request that sets every field.
var everySeedField = SeedRequest{
	GridSetID: "My Grid", HasGridSetID: true, SRS: ptr(4326),
	Bounds: &[4]float64{-1.5, -2, 3e2, 4}, ZoomStart: ptr(0), ZoomStop: ptr(21),
	Format: "image/jpeg", Type: "TRUNCATE", ThreadCount: ptr(-3),
	Parameters: [][2]string{{"STYLES", " pop hatch "}, {"", ""}, {"STYLES", "again"}},
	RetryCount: ptr(-1), RetryWaitMS: ptr(100), MaxFailures: ptr(1000),
}

// seedRequestCases are seed requests, in XML or JSON or both, and what they
// decode to.
var seedRequestCases = []struct {
	name string
	xml  string // "" when the case is JSON only
	json string // "" when the case is XML only
	want SeedRequest
}{
	{
		name: "empty request",
		xml:  `<seedRequest/>`,
		json: `{"seedRequest":{}}`,
		want: SeedRequest{},
	},
	{
		name: "every field",
		xml: `<seedRequest><name> topp:states </name><gridSetId>My Grid</gridSetId><srs><number>4326</number></srs>
			<bounds><coords><double>-1.5</double><double>-2</double><double>3e2</double><double>+4</double></coords></bounds>
			<zoomStart>0</zoomStart><zoomStop> 21 </zoomStop><format>image/jpeg</format><type>TRUNCATE</type>
			<threadCount>-3</threadCount>
			<parameters><entry><string>STYLES</string><string> pop hatch </string></entry><entry><string/><string></string></entry>
			<entry><string>STYLES</string><string>again</string></entry></parameters>
			<tileFailureRetryCount>-1</tileFailureRetryCount><tileFailureRetryWaitTime>100</tileFailureRetryWaitTime>
			<totalFailuresBeforeAborting>1000</totalFailuresBeforeAborting><filterUpdate>true</filterUpdate></seedRequest>`,
		json: `{"seedRequest":{"name":" topp:states ","gridSetId":"My Grid","srs":{"number":4326},
			"bounds":{"coords":{"double":[-1.5,"-2",3e2,"+4"]}},"zoomStart":0,"zoomStop":" 21 ","format":"image/jpeg","type":"TRUNCATE",
			"threadCount":-3,"parameters":{"entry":[{"string":["STYLES"," pop hatch "]},{"string":["",""]},{"string":["STYLES","again"]}]},
			"tileFailureRetryCount":-1,"tileFailureRetryWaitTime":"100","totalFailuresBeforeAborting":1000,"filterUpdate":true}}`,
		want: everySeedField,
	},
	{
		name: "GWC's extra closing brace",
		json: `{"seedRequest":{"zoomStart":1,"zoomStop":2}}}`,
		want: SeedRequest{ZoomStart: ptr(1), ZoomStop: ptr(2)},
	},
	{
		name: "numbers and booleans as strings",
		xml:  `<seedRequest><zoomStart>1</zoomStart><zoomStop>2</zoomStop><threadCount>3</threadCount><srs><number>900913</number></srs><filterUpdate>FALSE</filterUpdate></seedRequest>`,
		json: `{"seedRequest":{"zoomStart":"1","zoomStop":"2","threadCount":"3","srs":{"number":"900913"},"filterUpdate":"FALSE"}}`,
		want: SeedRequest{ZoomStart: ptr(1), ZoomStop: ptr(2), ThreadCount: ptr(3), SRS: ptr(900913)},
	},
	{
		name: "single parameters entry object",
		xml:  `<seedRequest><parameters><entry><string>STYLES</string><string>pophatch</string></entry></parameters></seedRequest>`,
		json: `{"seedRequest":{"parameters":{"entry":{"string":["STYLES","pophatch"]}}}}`,
		want: SeedRequest{Parameters: [][2]string{{"STYLES", "pophatch"}}},
	},
	{
		name: "empty parameters",
		xml:  `<seedRequest><parameters/></seedRequest>`,
		json: `{"seedRequest":{"parameters":{"entry":[]}}}`,
		want: SeedRequest{},
	},
	{
		name: "empty parameters as Jettison empty string",
		json: `{"seedRequest":{"parameters":""}}`,
		want: SeedRequest{},
	},
	{
		name: "numeric parameter value becomes text",
		json: `{"seedRequest":{"parameters":{"entry":{"string":["ELEVATION",100]}}}}`,
		want: SeedRequest{Parameters: [][2]string{{"ELEVATION", "100"}}},
	},
	{
		name: "null members are absent",
		json: `{"seedRequest":{"zoomStart":null,"gridSetId":null,"bounds":null,"parameters":null}}`,
		want: SeedRequest{},
	},
	{
		name: "single-quoted strings",
		json: `{'seedRequest':{'gridSetId':'EPSG:4326','zoomStart':'3'}}`,
		want: SeedRequest{GridSetID: "EPSG:4326", HasGridSetID: true, ZoomStart: ptr(3)},
	},
	{
		name: "empty format and type are absent",
		xml:  `<seedRequest><format/><type></type></seedRequest>`,
		json: `{"seedRequest":{"format":"","type":""}}`,
		want: SeedRequest{},
	},
	{
		name: "namespaced and with attributes",
		xml:  `<seedRequest xmlns="urn:x" class="x"><zoomStart unit="level">4</zoomStart></seedRequest>`,
		want: SeedRequest{ZoomStart: ptr(4)},
	},
}

func TestDecodeSeedRequest(t *testing.T) {
	for _, tt := range seedRequestCases {
		t.Run(tt.name, func(t *testing.T) {
			if tt.xml != "" {
				got, err := DecodeSeedRequestXML([]byte(tt.xml))
				if err != nil {
					t.Errorf("XML: got error %v", err)
				} else if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("XML: got %s, want %s", dump(got), dump(tt.want))
				}
			}
			if tt.json != "" {
				got, err := DecodeSeedRequestJSON([]byte(tt.json))
				if err != nil {
					t.Errorf("JSON: got error %v", err)
				} else if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("JSON: got %s, want %s", dump(got), dump(tt.want))
				}
			}
		})
	}
}

// seedRequestErrorCases are seed requests, in XML and JSON, that GeoWebCache
// refuses, with its message.
var seedRequestErrorCases = []struct {
	name string
	xml  string
	json string
	want string
}{
	{"unknown field, keys are case-sensitive",
		`<seedRequest><zoomstop>1</zoomstop></seedRequest>`, `{"seedRequest":{"zoomstop":1}}`, "Unknown field: zoomstop"},
	{"unknown nested field",
		`<seedRequest><bounds><coords/><crs/></bounds></seedRequest>`, `{"seedRequest":{"bounds":{"coords":{},"crs":1}}}`, "Unknown field: crs"},
	{"unknown field in coords",
		`<seedRequest><bounds><coords><float>1</float></coords></bounds></seedRequest>`, `{"seedRequest":{"bounds":{"coords":{"float":[1]}}}}`, "Unknown field: float"},
	{"unknown field in srs",
		`<seedRequest><srs><code>1</code></srs></seedRequest>`, `{"seedRequest":{"srs":{"code":1}}}`, "Unknown field: code"},
	{"unknown field in parameters",
		`<seedRequest><parameters><param/></parameters></seedRequest>`, `{"seedRequest":{"parameters":{"param":[]}}}`, "Unknown field: param"},
	{"unknown field in an entry",
		`<seedRequest><parameters><entry><key>a</key></entry></parameters></seedRequest>`, `{"seedRequest":{"parameters":{"entry":{"key":"a"}}}}`, "Unknown field: key"},
	{"duplicate field",
		`<seedRequest><zoomStart>1</zoomStart><zoomStart>2</zoomStart></seedRequest>`, `{"seedRequest":{"zoomStart":1,"zoomStart":2}}`, "Duplicate field: zoomStart"},
	{"integer not an integer",
		`<seedRequest><zoomStart>abc</zoomStart></seedRequest>`, `{"seedRequest":{"zoomStart":"abc"}}`, "Invalid value for zoomStart: abc"},
	{"fractional zoom",
		`<seedRequest><zoomStop>1.0</zoomStop></seedRequest>`, `{"seedRequest":{"zoomStop":1.0}}`, "Invalid value for zoomStop: 1.0"},
	{"empty threadCount",
		`<seedRequest><threadCount/></seedRequest>`, `{"seedRequest":{"threadCount":""}}`, `Invalid value for threadCount: ""`},
	{"integer overflow",
		`<seedRequest><tileFailureRetryCount>99999999999999999999</tileFailureRetryCount></seedRequest>`,
		`{"seedRequest":{"tileFailureRetryCount":99999999999999999999}}`,
		"Invalid value for tileFailureRetryCount: 99999999999999999999 is out of range"},
	{"boolean",
		`<seedRequest><filterUpdate>yes</filterUpdate></seedRequest>`, `{"seedRequest":{"filterUpdate":1}}`, ""},
	{"object where a number is expected",
		"", `{"seedRequest":{"zoomStart":{"value":1}}}`, "Invalid value for zoomStart: expected an integer, got an object"},
	{"element where a number is expected",
		`<seedRequest><zoomStart><value>1</value></zoomStart></seedRequest>`, "", "Invalid value for zoomStart: expected an integer, got element <value>"},
	{"array where a number is expected",
		"", `{"seedRequest":{"zoomStart":[1]}}`, "Invalid value for zoomStart: expected an integer, got an array"},
	{"array where text is expected",
		"", `{"seedRequest":{"format":["image/png"]}}`, "Invalid value for format: expected text, got an array"},
	{"text where elements are expected",
		`<seedRequest><bounds>1,2,3,4</bounds></seedRequest>`, `{"seedRequest":{"bounds":"1,2,3,4"}}`, ""},
	{"srs as a bare number",
		"", `{"seedRequest":{"srs":4326}}`, "Invalid value for srs: expected an object, got 4326"},
	{"srs without number",
		`<seedRequest><srs/></seedRequest>`, `{"seedRequest":{"srs":{}}}`, "srs: number is required"},
	{"srs not a number",
		`<seedRequest><srs><number>EPSG:4326</number></srs></seedRequest>`, `{"seedRequest":{"srs":{"number":"EPSG:4326"}}}`, "Invalid value for srs: EPSG:4326"},
	{"empty gridSetId",
		`<seedRequest><gridSetId> </gridSetId></seedRequest>`, `{"seedRequest":{"gridSetId":""}}`, "gridSetId must not be empty"},
	{"three coordinates",
		`<seedRequest><bounds><coords><double>1</double><double>2</double><double>3</double></coords></bounds></seedRequest>`,
		`{"seedRequest":{"bounds":{"coords":{"double":[1,2,3]}}}}`,
		"Invalid bounds: expected 4 coordinates (minx, miny, maxx, maxy), got 3"},
	{"five coordinates",
		"", `{"seedRequest":{"bounds":{"coords":{"double":[1,2,3,4,5]}}}}`,
		"Invalid bounds: expected 4 coordinates (minx, miny, maxx, maxy), got 5"},
	{"no coords",
		`<seedRequest><bounds/></seedRequest>`, `{"seedRequest":{"bounds":{}}}`,
		"Invalid bounds: expected 4 coordinates (minx, miny, maxx, maxy), got 0"},
	{"one coordinate, Jettison style",
		"", `{"seedRequest":{"bounds":{"coords":{"double":1}}}}`,
		"Invalid bounds: expected 4 coordinates (minx, miny, maxx, maxy), got 1"},
	{"coordinate not a number",
		`<seedRequest><bounds><coords><double>1</double><double>x</double><double>3</double><double>4</double></coords></bounds></seedRequest>`,
		`{"seedRequest":{"bounds":{"coords":{"double":[1,"x",3,4]}}}}`, "Invalid value for bounds: x"},
	{"null coordinate",
		"", `{"seedRequest":{"bounds":{"coords":{"double":[1,null,3,4]}}}}`, "Invalid value for bounds: expected a number, got null"},
	{"NaN",
		`<seedRequest><bounds><coords><double>NaN</double><double>2</double><double>3</double><double>4</double></coords></bounds></seedRequest>`,
		`{"seedRequest":{"bounds":{"coords":{"double":["NaN",2,3,4]}}}}`, "Invalid bounds: NaN is not a finite number"},
	{"infinity",
		"", `{"seedRequest":{"bounds":{"coords":{"double":[1,2,"-Infinity",4]}}}}`, "Invalid bounds: -Infinity is not a finite number"},
	{"overflow to infinity",
		"", `{"seedRequest":{"bounds":{"coords":{"double":[1,2,1e999,4]}}}}`, "Invalid bounds: 1e999 is not a finite number"},
	{"hex float",
		"", `{"seedRequest":{"bounds":{"coords":{"double":["0x1p3",2,3,4]}}}}`, "Invalid value for bounds: 0x1p3"},
	{"minx equals maxx",
		"", `{"seedRequest":{"bounds":{"coords":{"double":[1,2,1,4]}}}}`, "Invalid bounds: minx 1 is not less than maxx 1"},
	{"minx above maxx",
		`<seedRequest><bounds><coords><double>-66.0</double><double>22.0</double><double>-124.0</double><double>50.0</double></coords></bounds></seedRequest>`,
		`{"seedRequest":{"bounds":{"coords":{"double":["-66.0","22.0","-124.0","50.0"]}}}}`,
		"Invalid bounds: minx -66 is not less than maxx -124"},
	{"miny above maxy",
		"", `{"seedRequest":{"bounds":{"coords":{"double":[1,5.5,3,4]}}}}`, "Invalid bounds: miny 5.5 is not less than maxy 4"},
	{"entry with one string",
		`<seedRequest><parameters><entry><string>STYLES</string></entry></parameters></seedRequest>`,
		`{"seedRequest":{"parameters":{"entry":{"string":["STYLES"]}}}}`,
		"Invalid parameters entry: expected 2 strings (name, value), got 1"},
	{"entry with a bare string",
		"", `{"seedRequest":{"parameters":{"entry":{"string":"STYLES"}}}}`,
		"Invalid parameters entry: expected 2 strings (name, value), got 1"},
	{"entry with three strings",
		"", `{"seedRequest":{"parameters":{"entry":[{"string":["a","b","c"]}]}}}`,
		"Invalid parameters entry: expected 2 strings (name, value), got 3"},
	{"entry with a null value",
		"", `{"seedRequest":{"parameters":{"entry":{"string":["STYLES",null]}}}}`,
		"Invalid value for parameters entry: expected a string, got null"},
	{"entry as an array of arrays",
		"", `{"seedRequest":{"parameters":{"entry":[["STYLES","x"]]}}}`,
		"Invalid value for parameters entry: expected an object, got an array"},
	{"wrong root",
		`<seedRequests/>`, `{"seedRequests":{}}`, ""},
	{"root not an object",
		`<seedRequest>seed</seedRequest>`, `{"seedRequest":"seed"}`, ""},
	{"empty body", ``, ``, ""},
	{"doctype",
		`<!DOCTYPE seedRequest [<!ENTITY z "1">]><seedRequest><zoomStart>&z;</zoomStart></seedRequest>`, "",
		"DTDs are not allowed: the body must not contain <!DOCTYPE or other XML directives"},
	{"malformed",
		`<seedRequest><zoomStart>1</zoomStart>`, `{"seedRequest":{"zoomStart":1}`, ""},
	{"trailing garbage",
		`<seedRequest/>x`, `{"seedRequest":{}}x`, ""},
	{"JSON with two root keys",
		"", `{"seedRequest":{},"other":{}}`, "The JSON document must be an object with the single key seedRequest"},
	{"JSON array document",
		"", `[{"seedRequest":{}}]`, "The JSON document must be an object with the single key seedRequest"},
	{"unknown field with a newline is quoted",
		"", `{"seedRequest":{"zoom\nStop":1}}`, `Unknown field: "zoom\nStop"`},
	{"long unknown field is cut",
		"", `{"seedRequest":{"` + strings.Repeat("x", 200) + `":1}}`, "Unknown field: " + strings.Repeat("x", 100) + "…"},
}

func TestDecodeSeedRequestErrors(t *testing.T) {
	for _, tt := range seedRequestErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			check := func(format string, decode func([]byte) (SeedRequest, error), body string) {
				got, err := decode([]byte(body))
				if err == nil {
					t.Errorf("%s: got %s, want error %q", format, dump(got), tt.want)
					return
				}
				checkInvalid(t, err)
				if msg := apperr.Message(err); tt.want != "" && msg != tt.want {
					t.Errorf("%s: got %q, want %q", format, msg, tt.want)
				}
			}
			if tt.xml != "" || tt.name == "empty body" {
				check("XML", DecodeSeedRequestXML, tt.xml)
			}
			if tt.json != "" || tt.name == "empty body" {
				check("JSON", DecodeSeedRequestJSON, tt.json)
			}
		})
	}
}

// TestDecodeSeedRequestMessages pins the texts of errors whose wording depends
// on the format.
func TestDecodeSeedRequestMessages(t *testing.T) {
	tests := []struct {
		name   string
		decode func([]byte) (SeedRequest, error)
		body   string
		want   string
	}{
		{"XML wrong root", DecodeSeedRequestXML, `<seedRequests/>`, "Unknown root element seedRequests: expected seedRequest"},
		{"JSON wrong root", DecodeSeedRequestJSON, `{"seedRequests":{}}`, "Unknown root key seedRequests: expected seedRequest"},
		{"XML empty", DecodeSeedRequestXML, ``, "Empty request body: expected a seedRequest document"},
		{"JSON empty", DecodeSeedRequestJSON, "\n", "Empty request body: expected a JSON object with the single key seedRequest"},
		{"XML truncated", DecodeSeedRequestXML, `<seedRequest><zoomStart>1</zoomStart>`, "Malformed XML: unexpected EOF"},
		{"JSON truncated", DecodeSeedRequestJSON, `{"seedRequest":{"zoomStart":1}`, "Malformed JSON: unexpected end of input"},
		{"XML trailing", DecodeSeedRequestXML, `<seedRequest/>x`, "Malformed XML: text outside the root element"},
		{"JSON trailing", DecodeSeedRequestJSON, `{"seedRequest":{}}x`, "Malformed JSON: trailing data after the document at offset 18"},
		{"XML text root", DecodeSeedRequestXML, `<seedRequest>seed</seedRequest>`, "Invalid value for seedRequest: expected elements, got seed"},
		{"JSON text root", DecodeSeedRequestJSON, `{"seedRequest":"seed"}`, "Invalid value for seedRequest: expected an object, got seed"},
		{"XML bounds as text", DecodeSeedRequestXML, `<seedRequest><bounds>1,2,3,4</bounds></seedRequest>`, "Invalid value for bounds: expected elements, got 1,2,3,4"},
		{"XML boolean", DecodeSeedRequestXML, `<seedRequest><filterUpdate>yes</filterUpdate></seedRequest>`, "Invalid value for filterUpdate: yes"},
		{"JSON boolean", DecodeSeedRequestJSON, `{"seedRequest":{"filterUpdate":1}}`, "Invalid value for filterUpdate: 1"},
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
