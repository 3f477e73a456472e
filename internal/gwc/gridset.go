package gwc

import (
	"fmt"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
)

// DecodeGridSet reads a GeoWebCache <gridSet> document. Every unsupported
// element and malformed value is reported in one apperr.Invalid error.
// Scale denominators are kept as such (the layer file converts them to
// resolutions as GeoWebCache does); the grid itself is checked by [Check].
func DecodeGridSet(data []byte) (GridSet, error) {
	root, err := parseTree(data)
	if err != nil {
		return GridSet{}, apperr.Wrap(apperr.Invalid, err, "invalid grid set document: %v", err)
	}
	if !root.is("gridSet") {
		return GridSet{}, apperr.Invalidf("invalid grid set document: the root element is %s, not gridSet", root.label())
	}
	var d decoder
	g := d.gridSet(root, "gridSet")
	if p := d.err(); len(p) > 0 {
		return GridSet{}, invalid(fmt.Sprintf("grid set %s", apperr.Show(g.ID)), p)
	}
	return g, nil
}

func (d *decoder) gridSet(e *node, path string) GridSet {
	var g GridSet
	if s := d.trimmed(e, path, "name"); s != nil && *s != "" {
		g.ID = *s
	} else {
		d.fail(path+"/name", "a grid set name is required")
	}
	if s := d.str(e, path, "description"); s != nil {
		g.Description = *s
	}
	if srs := d.one(e, path, "srs"); srs != nil {
		if n := d.integer(srs, path+"/srs", "number"); n != nil {
			g.EPSG = *n
		} else {
			d.fail(path+"/srs/number", "an EPSG code is required")
		}
		d.leftovers(srs, path+"/srs")
	} else {
		d.fail(path+"/srs", "an srs is required")
	}
	if g.Extent = d.coords(e, path); g.Extent == nil && d.one(e, path, "extent") == nil {
		d.fail(path+"/extent", "an extent is required")
	}
	if b := d.boolean(e, path, "alignTopLeft"); b != nil {
		g.AlignTopLeft = *b
	}
	g.Resolutions = d.numbers(e, path, "resolutions")
	g.ScaleDenominators = d.numbers(e, path, "scaleDenominators")
	switch {
	case g.Resolutions != nil && g.ScaleDenominators != nil:
		d.fail(path, "give either resolutions or scaleDenominators, not both")
	case g.Resolutions == nil && g.ScaleDenominators == nil:
		d.fail(path, "resolutions or scaleDenominators are required")
	}
	g.MetersPerUnit = d.number(e, path, "metersPerUnit")
	g.PixelSize = d.number(e, path, "pixelSize")
	g.ScaleNames = d.list(e, path, "scaleNames", "string")
	for name, dst := range map[string]*int{"tileWidth": &g.TileWidth, "tileHeight": &g.TileHeight} {
		if n := d.integer(e, path, name); n != nil {
			*dst = *n
		}
	}
	if b := d.boolean(e, path, "yCoordinateFirst"); b != nil {
		g.YCoordinateFirst = *b
	}
	d.leftovers(e, path)
	return g
}

// EncodeGridSet returns the <gridSet> document of a grid set, with what
// its layer file entry says beyond the grid (info; the zero value for a
// built-in grid set), in GeoWebCache's element order. The levels are
// written as they were given: scale denominators or resolutions.
func EncodeGridSet(g *grid.GridSet, info layer.GridSetInfo) ([]byte, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("encode grid set: %w", err)
	}
	w := &writer{}
	w.open("gridSet")
	w.leaf("name", g.ID)
	if info.Description != "" {
		w.leaf("description", info.Description)
	}
	w.open("srs")
	w.leaf("number", strconv.Itoa(g.EPSG))
	w.close("srs")
	writeExtent(w, []float64{g.Extent.MinX, g.Extent.MinY, g.Extent.MaxX, g.Extent.MaxY})
	w.leaf("alignTopLeft", strconv.FormatBool(g.TopLeft))
	levels, name := g.Resolutions, "resolutions"
	if info.ScaleDenominators != nil {
		levels, name = info.ScaleDenominators, "scaleDenominators"
	}
	w.open(name)
	for _, x := range levels {
		w.leaf("double", formatFloat(x))
	}
	w.close(name)
	if info.MetersPerUnit != 0 {
		w.leaf("metersPerUnit", formatFloat(info.MetersPerUnit))
	}
	if info.PixelSize != 0 {
		w.leaf("pixelSize", formatFloat(info.PixelSize))
	}
	if info.ScaleNames != nil {
		writeList(w, "scaleNames", "string", info.ScaleNames)
	}
	w.leaf("tileHeight", strconv.Itoa(g.TileHeight))
	w.leaf("tileWidth", strconv.Itoa(g.TileWidth))
	w.leaf("yCoordinateFirst", strconv.FormatBool(info.YCoordinateFirst))
	w.close("gridSet")
	return w.b.Bytes(), nil
}

// Check builds a layer file of the given grid sets and layers and parses
// it with the layer package's rules (the built-in grid sets are always
// there); the error, of kind apperr.Invalid, names every problem. With no
// layers, only the grid sets are checked.
func Check(gridSets []GridSet, layers []Layer) error {
	if len(layers) == 0 {
		// A layer file needs a layer; this one uses a built-in grid set.
		layers = []Layer{{Name: "grid-set-check", GridSubsets: []Subset{{GridSet: grid.EPSG4326}}, Formats: []string{"image/png"},
			Source: WMSSource{Type: "wms", URL: "http://localhost/", Layers: "x"}}}
	}
	_, err := Catalogue(gridSets, layers)
	return err
}

// Catalogue parses the layer file of gridSets and layers; a problem is an
// apperr.Invalid error naming it.
func Catalogue(gridSets []GridSet, layers []Layer) (*layer.Catalogue, error) {
	_, c, err := layerFile(gridSets, layers)
	return c, err
}

// LayerFile writes gridSets and layers as a layer file (YAML), after
// checking it parses; a problem is an apperr.Invalid error naming it.
func LayerFile(gridSets []GridSet, layers []Layer) ([]byte, error) {
	data, _, err := layerFile(gridSets, layers)
	return data, err
}

func layerFile(gridSets []GridSet, layers []Layer) ([]byte, *layer.Catalogue, error) {
	doc := struct {
		GridSets []GridSet `yaml:"gridSets,omitempty"`
		Layers   []Layer   `yaml:"layers"`
	}{slices.Clip(gridSets), layers}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("write layer file: %w", err)
	}
	c, err := layer.Parse(data, "(from XML)")
	if err != nil {
		return nil, nil, apperr.Wrap(apperr.Invalid, err, "%v", err)
	}
	return data, c, nil
}
