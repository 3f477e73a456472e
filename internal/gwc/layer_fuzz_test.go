package gwc_test

import (
	"reflect"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
)

// layerSeeds are wmsLayer documents of the package's tests: GeoWebCache's
// samples, every element, and documents each refused for one reason.
var layerSeeds = []string{
	`<wmsLayer><name>a</name><blobStoreId>x</blobStoreId><gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName><extra/></gridSubset></gridSubsets>` +
		`<parameterFilters><stringParameterFilter><key>S</key><values><string>a</string></values></stringParameterFilter><fooParameterFilter/></parameterFilters>` +
		`<expireClientsList><expirationRule minZoom="0" expiration="1" when="now"/></expireClientsList><other:thing xmlns:other="urn:x"/>` +
		`<tc:nope xmlns:tc="https://tilecache.dev/xml/1"/><wmsUrl><string>http://h/wms</string></wmsUrl></wmsLayer>`,
	`<wmsLayer><name>a</name>`,
	`<gridSet/>`,
	`<wmsLayer><name>a</name><gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName><extent><coords><double>1</double><double>0</double><double>2</double><double>3</double></coords></extent><zoomStart>1</zoomStart><zoomStop>3</zoomStop></gridSubset></gridSubsets><mimeFormats><string>image/png</string></mimeFormats><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`,
	`<wmsLayer><name>a</name><metaWidthHeight><int>1</int><int>2</int></metaWidthHeight><gutter>8</gutter><transparent>false</transparent><mimeFormats><string>image/jpeg</string></mimeFormats><gridSubsets><gridSubset><gridSetName>EPSG:900913</gridSetName></gridSubset></gridSubsets><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`,
	`<wmsLayer><name>a</name><expireCache>1</expireCache><expireCacheList><expirationRule minZoom="0" expiration="1"/></expireCacheList><wmsUrl><string>http://h/</string></wmsUrl></wmsLayer>`,
	`<wmsLayer><name>a</name><wmsUrl><string>http://h/</string></wmsUrl><vendorParameters>A=1&amp;B=2</vendorParameters><backendTimeout>12</backendTimeout><httpRequestMode>Get</httpRequestMode><mimeFormats><string>image/png</string></mimeFormats><gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName></gridSubset></gridSubsets></wmsLayer>`,
	`<!DOCTYPE x [<!ENTITY e "x">]><wmsLayer/>`,
}

// FuzzDecodeLayer: a wmsLayer document is decoded or refused with an
// Invalid error, never a panic; a layer the layer file accepts is written
// back to a document that decodes to the same layer and is written again
// byte for byte.
func FuzzDecodeLayer(f *testing.F) {
	for _, name := range []string{"full.xml", "gwc_wmslayer.xml", "gwc_wmslayer_minimal.xml"} {
		f.Add(mustRead(f, name))
	}
	for _, s := range layerSeeds {
		f.Add([]byte(s))
	}
	c, err := layer.Parse([]byte(roundTripFile), "x")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range c.Names() {
		l, _ := c.Layer(name)
		doc, err := gwc.EncodeLayer(l)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec, err := gwc.DecodeLayer(data)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("error of kind %v, want Invalid: %v", apperr.KindOf(err), err)
			}
			return
		}
		c, err := gwc.Catalogue(nil, []gwc.Layer{dec})
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("layer file refused with an error of kind %v, want Invalid: %v", apperr.KindOf(err), err)
			}
			return
		}
		l, ok := c.Layer(dec.Name)
		if !ok {
			t.Fatalf("the catalogue has no layer %q", dec.Name)
		}
		doc, err := gwc.EncodeLayer(l)
		if err != nil {
			t.Fatalf("encode a decoded layer: %v", err)
		}
		again, err := gwc.DecodeLayer(doc)
		if err != nil {
			t.Fatalf("decode the encoded layer: %v\n%s", err, doc)
		}
		c2, err := gwc.Catalogue(nil, []gwc.Layer{again})
		if err != nil {
			t.Fatalf("the layer file refuses the layer decoded again: %v\n%s", err, doc)
		}
		back, _ := c2.Layer(again.Name)
		if got, want := view(t, back), view(t, l); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\ngot  %+v\nwant %+v\n%s", got, want, doc)
		}
		doc2, err := gwc.EncodeLayer(back)
		if err != nil || string(doc2) != string(doc) {
			t.Fatalf("second encoding differs (%v):\n%s\n---\n%s", err, doc2, doc)
		}
	})
}

// gridSetSeeds are gridSet documents of the package's tests.
var gridSetSeeds = []string{
	`<gridSet><name>D</name><srs><number>4326</number></srs><extent><coords><double>-180</double><double>-90</double><double>180</double><double>90</double></coords></extent>` +
		`<scaleDenominators><double>279541132.0143589</double><double>139770566.00717944</double></scaleDenominators></gridSet>`,
	`<gridSet><name>G</name><description>d &amp; e</description><srs><number>3035</number></srs><extent><coords><double>0</double><double>0</double><double>4096</double><double>2048</double></coords></extent>` +
		`<alignTopLeft>true</alignTopLeft><resolutions><double>8</double><double>4</double><double>1.5</double></resolutions><scaleNames><string>a</string><string>b</string><string>c</string></scaleNames>` +
		`<tileHeight>512</tileHeight><tileWidth>256</tileWidth><yCoordinateFirst>true</yCoordinateFirst></gridSet>`,
	`<gridSet><srs><number>1</number></srs><extent><coords><double>0</double><double>0</double><double>1</double><double>1</double></coords></extent><resolutions><double>1</double></resolutions></gridSet>`,
	`<gridSet><name>G</name><srs><number>1</number></srs><extent><coords><double>0</double><double>0</double><double>1</double><double>1</double></coords></extent><levels>5</levels><yCoordinateFirst>maybe</yCoordinateFirst><tileWidth>w</tileWidth><foo/></gridSet>`,
	`<gridSet><name>G</gridSet>`,
	`<gridSet><name>g</name><description>a<!---->b<![CDATA[<c>]]>&#x41;</description></gridSet>`,
}

// FuzzDecodeGridSet: a gridSet document is decoded or refused with an
// Invalid error, never a panic; a grid set the layer file accepts is
// written back to a document that decodes to the same grid set (and what
// the layer file keeps of it) and is written again byte for byte.
func FuzzDecodeGridSet(f *testing.F) {
	f.Add(mustRead(f, "gwc_gridset.xml"))
	for _, s := range gridSetSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := gwc.DecodeGridSet(data)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("error of kind %v, want Invalid: %v", apperr.KindOf(err), err)
			}
			return
		}
		c, err := gwc.Catalogue([]gwc.GridSet{g}, []gwc.Layer{user(g.ID)})
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("layer file refused with an error of kind %v, want Invalid: %v", apperr.KindOf(err), err)
			}
			return
		}
		gs, info, ok := c.GridSet(g.ID)
		if !ok {
			t.Fatalf("the catalogue has no grid set %q", g.ID)
		}
		doc, err := gwc.EncodeGridSet(gs, info)
		if err != nil {
			t.Fatalf("encode a decoded grid set: %v", err)
		}
		again, err := gwc.DecodeGridSet(doc)
		if err != nil {
			t.Fatalf("decode the encoded grid set: %v\n%s", err, doc)
		}
		c2, err := gwc.Catalogue([]gwc.GridSet{again}, []gwc.Layer{user(again.ID)})
		if err != nil {
			t.Fatalf("the layer file refuses the grid set decoded again: %v\n%s", err, doc)
		}
		gs2, info2, _ := c2.GridSet(again.ID)
		if !reflect.DeepEqual(gs2, gs) || !reflect.DeepEqual(info2, info) {
			t.Fatalf("round trip:\ngot  %+v %+v\nwant %+v %+v\n%s", gs2, info2, gs, info, doc)
		}
		doc2, err := gwc.EncodeGridSet(gs2, info2)
		if err != nil || string(doc2) != string(doc) {
			t.Fatalf("second encoding differs (%v):\n%s\n---\n%s", err, doc2, doc)
		}
	})
}

// user is a layer of grid set id, for the layer file to check the grid set.
func user(id string) gwc.Layer {
	return gwc.Layer{Name: "a", GridSubsets: []gwc.Subset{{GridSet: id}}, Formats: []string{"image/png"},
		Source: gwc.WMSSource{Type: "wms", URL: "http://h/", Layers: "a"}}
}
