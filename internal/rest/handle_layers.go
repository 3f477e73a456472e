package rest

import (
	"errors"
	"maps"
	"net/http"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
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
	// GridSetVersion fingerprints a custom grid set ("" for a built-in).
	GridSetVersion(id string) string
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
	whole := func(what string) handlerFunc {
		return func(http.ResponseWriter, *http.Request) error {
			return apperr.Invalidf("Give the %s to delete: DELETE /rest/%s/{name}.xml", what, what+"s")
		}
	}
	switch path {
	case "/rest/layers", "/rest/layers.xml":
		return route{kindLayers, map[string]handlerFunc{http.MethodGet: h.listLayers, http.MethodDelete: whole("layer")}}, true
	case "/rest/gridsets", "/rest/gridsets.xml":
		return route{kindGridSets, map[string]handlerFunc{http.MethodGet: h.listGridSets, http.MethodDelete: whole("gridset")}}, true
	}
	for _, res := range []struct {
		prefix string
		kind   routeKind
		get    func(name string) handlerFunc
		writes func(name string) map[string]handlerFunc
	}{
		{"/rest/layers/", kindLayer, h.getLayer, func(name string) map[string]handlerFunc {
			return map[string]handlerFunc{http.MethodPut: h.putLayer(name, true), http.MethodPost: h.putLayer(name, false), http.MethodDelete: h.deleteLayer(name)}
		}},
		{"/rest/gridsets/", kindGridSet, h.getGridSet, func(name string) map[string]handlerFunc {
			return map[string]handlerFunc{http.MethodPut: h.putGridSet(name), http.MethodDelete: h.deleteGridSet(name)}
		}},
	} {
		raw, ok := strings.CutPrefix(path, res.prefix)
		if !ok {
			continue
		}
		raw, f := splitSuffix(raw)
		name, ok := layerSegment(raw)
		// A name is one path segment, decoded: "a%2F..%2Fb" is not one.
		if !ok || strings.Contains(raw, "/") || strings.ContainsAny(name, "/\\") || f == formatNone {
			return route{}, false
		}
		if f == formatJSON {
			refuse := xmlOnly(strings.TrimSuffix(res.prefix, "/") + "/" + raw)
			methods := map[string]handlerFunc{http.MethodGet: refuse}
			if h.svc.Editor != nil {
				for m := range res.writes(name) {
					methods[m] = refuse
				}
			}
			return route{res.kind, methods}, true
		}
		methods := map[string]handlerFunc{http.MethodGet: res.get(name)}
		if h.svc.Editor != nil {
			// Without a configuration store, the layer file is all there
			// is: PUT, POST and DELETE answer 405.
			maps.Copy(methods, res.writes(name))
		}
		return route{res.kind, methods}, true
	}
	return route{}, false
}

// serviceURL is the service's root as the client addressed it (the
// request's URL without its path): the base of the documents' links.
func (h *Handler) serviceURL(r *http.Request) string {
	return strings.TrimSuffix(h.selfURL(r), r.URL.EscapedPath())
}

func (h *Handler) listLayers(w http.ResponseWriter, r *http.Request) error {
	writeBody(w, "application/xml", gwc.EncodeLayerList(h.svc.Layers.Names(), h.serviceURL(r)))
	return nil
}

func (h *Handler) listGridSets(w http.ResponseWriter, r *http.Request) error {
	writeBody(w, "application/xml", gwc.EncodeGridSetList(h.svc.Layers.GridSetIDs(), h.serviceURL(r)))
	return nil
}

// getLayer answers a layer's wmsLayer document.
func (h *Handler) getLayer(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		l, ok := h.svc.Layers.Layer(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown layer: %s", name)
		}
		doc, err := gwc.EncodeLayer(l)
		if errors.Is(err, gwc.ErrNotWMS) {
			return apperr.New(apperr.Conflict, "Layer %s has a %s source: GeoWebCache's wmsLayer document describes WMS layers only", name, l.SourceType)
		}
		if err != nil {
			return err
		}
		w.Header().Set("ETag", etag(l.Version))
		writeBody(w, "application/xml", doc)
		return nil
	}
}

// getGridSet answers a grid set's gridSet document.
func (h *Handler) getGridSet(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		g, info, ok := h.svc.Layers.GridSet(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown grid set: %s", name)
		}
		doc, err := gwc.EncodeGridSet(g, info)
		if err != nil {
			return err
		}
		if v := h.svc.Layers.GridSetVersion(name); v != "" {
			w.Header().Set("ETag", etag(v))
		}
		writeBody(w, "application/xml", doc)
		return nil
	}
}
