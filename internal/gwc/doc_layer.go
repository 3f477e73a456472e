// The layer and grid set documents: this part translates between GeoWebCache's XML representations of
// layers and grid sets (its REST API's bodies and geowebcache.xml) and
// the entries of tilecache's layer file.
//
// Decoding is strict: every element and attribute is either mapped or
// reported by its path (wmsLayer/inMemoryCached), all of them at once, in
// an error of kind [apperr.Invalid] whose message a REST handler can give
// back with a 400. Nothing is dropped silently.
//
// # Mapping a wmsLayer
//
//   - metaInformation/title → title; metaInformation/description →
//     description (free text; tilecache's attribution is a credit, not an
//     abstract, and has its own element, tc:attribution).
//   - wmsUrl: exactly one string. tilecache sends every GetMap to one URL,
//     so several (GeoWebCache's round robin) are refused rather than
//     reduced to the first.
//   - wmsLayers: absent means the layer's name, as in GeoWebCache.
//     transparent: absent means true, as in GeoWebCache (tilecache's own
//     default is false, so the entry always says which).
//   - vendorParameters: a query string (a=1&b=2), decoded into the
//     source's params; a key given twice is an error.
//   - backendTimeout: seconds → the source's timeout. A timeout that is not
//     a whole number of seconds is written as tc:timeout.
//   - wmsVersion (1.1.1 or 1.3.0) → version; httpRequestMode is accepted
//     when it is Get (what tilecache does) and not written.
//   - expireCache/expireClients and their lists → the layer file's keys of
//     the same names (GeoWebCache's special negative values are refused).
//   - parameterFilters: string → a list filter, regex → a regex filter,
//     float and integer → numeric filters (type, values, threshold). Keys
//     are upper-cased by the layer file.
//
// # tilecache's own elements
//
// What GeoWebCache cannot say travels in the namespace [Namespace]
// (prefix tc): tc:id, tc:attribution, tc:cacheControl, tc:private,
// tc:renderOnMiss (enabled, zoomStart, zoomStop), tc:coverage (geometry,
// srs, buffer), and the WMS source's options tc:format (asked of the WMS),
// tc:axisOrder, tc:srs (entry gridSet="…"), tc:timeout, tc:retries,
// tc:retryBackoff, tc:maxConcurrent, tc:headers (header name="…"),
// tc:pngCompression, tc:jpegQuality, tc:skipBlank. They follow
// GeoWebCache's elements.
//
// Only layers with a wms source have a wmsLayer document: [EncodeLayer]
// refuses other sources with [ErrNotWMS].
//
// # Grid sets
//
// A gridSet's description, scaleNames, yCoordinateFirst and, when the
// levels are scale denominators, the denominators, metersPerUnit and
// pixelSize are kept in the layer file's grid set entry, so that a grid
// set is written back as it was given. The levels element (a generated
// grid) is not supported.

package gwc
