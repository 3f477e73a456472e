package wmscaps_test

import (
	"slices"
	"strings"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/wmscaps"
)

// FuzzParse: a capabilities document is read or refused with an Invalid
// error, never a panic; what is read is proposed as layers (each name
// once, in order), each with grid subsets and a source the layer file
// takes, or refused with an Invalid error; and the layer file of the
// proposals is written or refused with an Invalid error, as `tilecache
// layers from-capabilities` does.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		caps111, caps130,
		`<ServiceExceptionReport><ServiceException>bad map</ServiceException></ServiceExceptionReport>`,
		`<html><body>proxy error</body></html>`,
		`<WMS_Capabilities><Capability>`,
		strings.ReplaceAll(strings.ReplaceAll(caps111, "<Format>image/png</Format>", ""), "<Format>image/tiff</Format>", ""),
		`<WMS_Capabilities version="1.3.0"><Capability><Request><GetMap><Format>image/png</Format></GetMap></Request>` +
			`<Layer><Name>a</Name><EX_GeographicBoundingBox><westBoundLongitude>170</westBoundLongitude><eastBoundLongitude>-170</eastBoundLongitude>` +
			`<southBoundLatitude>-95</southBoundLatitude><northBoundLatitude>NaN</northBoundLatitude></EX_GeographicBoundingBox>` +
			`<Layer><Name>a</Name></Layer><Layer><Title>t</Title><Layer><Name>b &amp; c</Name></Layer></Layer></Layer></Capability></WMS_Capabilities>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := wmscaps.Parse(data)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("error of kind %v, want Invalid: %v", apperr.KindOf(err), err)
			}
			return
		}
		for _, l := range c.Layers {
			if l.Name == "" || l.Name != strings.TrimSpace(l.Name) {
				t.Fatalf("layer name %q: want it non-empty and trimmed", l.Name)
			}
			if got, ok := c.Layer(l.Name); !ok || got.Name != l.Name {
				t.Fatalf("Layer(%q) = %+v, %v", l.Name, got, ok)
			}
		}
		for _, near := range []bool{false, true} {
			if format, ok := c.UpstreamFormat(near); ok && !strings.HasPrefix(format, "image/") {
				t.Fatalf("upstream format %q", format)
			}
		}
		ps, err := wmscaps.Propose(c, nil, wmscaps.Options{URL: "http://127.0.0.1/wms"})
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("Propose: error of kind %v, want Invalid: %v", apperr.KindOf(err), err)
			}
			return
		}
		var names []string
		for _, l := range c.Layers {
			if !slices.Contains(names, l.Name) {
				names = append(names, l.Name)
			}
		}
		if len(ps) != len(names) {
			t.Fatalf("%d proposals for the %d names %q", len(ps), len(names), names)
		}
		for i, p := range ps {
			if p.Name != names[i] || p.Source.Layers != p.Name || len(p.GridSubsets) != 2 {
				t.Fatalf("proposal %d: %+v for layer %q", i, p, names[i])
			}
			// Whatever the server's names and boxes, the grid subsets and
			// the source are ones the layer file takes.
			p.Name, p.Title, p.Source.Layers = "x", "", "x"
			if err := gwc.Check(nil, []gwc.Layer{p}); err != nil {
				t.Fatalf("proposal %d (%s, box %v): %v", i, names[i], c.Layers[slices.IndexFunc(c.Layers, func(l wmscaps.Layer) bool { return l.Name == names[i] })].BBox, err)
			}
		}
		if _, err := gwc.LayerFile(nil, ps); err != nil && !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("layer file of the proposals: error of kind %v, want Invalid: %v", apperr.KindOf(err), err)
		}
	})
}
