package rest

import (
	"errors"
	"net/http"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/gwcxml"
	"tilecache/internal/layer"
)

// LayerCatalogue is what the layer and grid set resources read: the
// configured layers and grid sets (layer.Catalogue has it).
type LayerCatalogue interface {
	// Names lists the layers in configuration order.
	Names() []string
	// Layer returns the layer called name.
	Layer(name string) (*layer.Layer, bool)
	// GridSetIDs lists every grid set, built in or configured.
	GridSetIDs() []string
	// GridSet returns a grid set and what its entry says beyond the grid.
	GridSet(id string) (*grid.GridSet, layer.GridSetInfo, bool)
}

// xmlOnly refuses the JSON form of the layer and grid set documents:
// GeoWebCache itself advises XML for them (its JSON cannot carry the
// parameter filters).
func xmlOnly(resource string) handlerFunc {
	return func(http.ResponseWriter, *http.Request) error {
		return apperr.Invalidf("The %s representation is XML only: ask for %s.xml", resource, resource)
	}
}

// layerRoute routes /rest/layers and /rest/layers/{name}.xml (GET).
func (h *Handler) layerRoute(path string) (route, bool) {
	switch path {
	case "/rest/layers", "/rest/layers.xml":
		return route{map[string]handlerFunc{http.MethodGet: h.listLayers}}, true
	case "/rest/gridsets", "/rest/gridsets.xml":
		return route{map[string]handlerFunc{http.MethodGet: h.listGridSets}}, true
	}
	for _, res := range []struct {
		prefix string
		get    func(name string) handlerFunc
	}{{"/rest/layers/", h.getLayer}, {"/rest/gridsets/", h.getGridSet}} {
		raw, ok := strings.CutPrefix(path, res.prefix)
		if !ok {
			continue
		}
		raw, f := splitSuffix(raw)
		name, ok := layerSegment(raw)
		if !ok || strings.Contains(raw, "/") || f == formatNone {
			return route{}, false
		}
		if f == formatJSON {
			return route{map[string]handlerFunc{http.MethodGet: xmlOnly(strings.TrimSuffix(res.prefix, "/") + "/" + raw)}}, true
		}
		return route{map[string]handlerFunc{http.MethodGet: res.get(name)}}, true
	}
	return route{}, false
}

// serviceURL is the service's root as the client addressed it (the
// request's URL without its path): the base of the documents' links.
func (h *Handler) serviceURL(r *http.Request) string {
	return strings.TrimSuffix(h.selfURL(r), r.URL.EscapedPath())
}

func (h *Handler) listLayers(w http.ResponseWriter, r *http.Request) error {
	writeBody(w, "application/xml", gwcxml.EncodeLayerList(h.svc.Catalogue.Names(), h.serviceURL(r)))
	return nil
}

func (h *Handler) listGridSets(w http.ResponseWriter, r *http.Request) error {
	writeBody(w, "application/xml", gwcxml.EncodeGridSetList(h.svc.Catalogue.GridSetIDs(), h.serviceURL(r)))
	return nil
}

// getLayer answers a layer's wmsLayer document.
func (h *Handler) getLayer(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		l, ok := h.svc.Catalogue.Layer(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown layer: %s", name)
		}
		doc, err := gwcxml.EncodeLayer(l)
		if errors.Is(err, gwcxml.ErrNotWMS) {
			return apperr.New(apperr.Conflict, "Layer %s has a %s source: GeoWebCache's wmsLayer document describes WMS layers only", name, l.SourceType)
		}
		if err != nil {
			return err
		}
		writeBody(w, "application/xml", doc)
		return nil
	}
}

// getGridSet answers a grid set's gridSet document.
func (h *Handler) getGridSet(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		g, info, ok := h.svc.Catalogue.GridSet(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown grid set: %s", name)
		}
		doc, err := gwcxml.EncodeGridSet(g, info)
		if err != nil {
			return err
		}
		writeBody(w, "application/xml", doc)
		return nil
	}
}
