package rest

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/source/upstream"
)

// xmlOnly refuses the JSON form of the layer and grid set documents:
// GeoWebCache itself advises XML for them (its JSON cannot carry the
// parameter filters).
func xmlOnly(resource string) handlerFunc {
	return func(http.ResponseWriter, *http.Request) error {
		return apperr.Invalidf("The %s representation is XML only: ask for %s.xml", resource, resource)
	}
}

// refuseJSON refuses the JSON form of the document under prefix.
func refuseJSON(prefix string) func(target) handlerFunc {
	return func(t target) handlerFunc { return xmlOnly(prefix + t.raw) }
}

// etag quotes a definition's version as an entity tag.
func etag(version string) string { return `"` + version + `"` }

// layersResource serves /rest/layers and /rest/gridsets: GeoWebCache's
// layer and grid set documents, read from the catalogue and written
// through the editor, and the proposal of layers from a WMS's
// capabilities.
type layersResource struct {
	layers   Layers
	editor   LayerEditor // nil: 405, the layer file is all there is
	planner  Planner     // the orphans a write leaves
	tasks    Tasks       // a deleted layer's truncation; the active tasks a write checks
	upstream upstream.AddressPolicy
	basePath string
	log      *slog.Logger
}

// deleteWhole refuses a DELETE of the whole list of layers or grid sets.
func deleteWhole(what string) handlerFunc {
	return func(http.ResponseWriter, *http.Request) error {
		return apperr.Invalidf("Give the %s to delete: DELETE /rest/%s/{name}.xml", what, what+"s")
	}
}

// serviceURL is the service's root as the client addressed it (the
// request's URL without its path): the base of the documents' links.
func (lr layersResource) serviceURL(r *http.Request) string {
	return strings.TrimSuffix(selfURL(r, lr.basePath), r.URL.EscapedPath())
}

func (lr layersResource) listLayers(w http.ResponseWriter, r *http.Request) error {
	writeBody(w, "application/xml", gwc.EncodeLayerList(lr.layers.Names(), lr.serviceURL(r)))
	return nil
}

func (lr layersResource) listGridSets(w http.ResponseWriter, r *http.Request) error {
	writeBody(w, "application/xml", gwc.EncodeGridSetList(lr.layers.GridSetIDs(), lr.serviceURL(r)))
	return nil
}

// getLayer answers a layer's wmsLayer document.
func (lr layersResource) getLayer(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		l, ok := lr.layers.Layer(name)
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
func (lr layersResource) getGridSet(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		g, info, ok := lr.layers.GridSet(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown grid set: %s", name)
		}
		doc, err := gwc.EncodeGridSet(g, info)
		if err != nil {
			return err
		}
		if v := lr.layers.GridSetVersion(name); v != "" {
			w.Header().Set("ETag", etag(v))
		}
		writeBody(w, "application/xml", doc)
		return nil
	}
}
