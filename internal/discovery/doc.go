// Package discovery writes the documents that tell map clients where a
// layer's tiles are and how they are gridded. They are stored in the tile
// store beside the tiles, so whatever serves the tiles (a CDN in front of
// the bucket, the local program) serves them too.
//
// For each tile set — a layer, grid set, format and parameters id that has
// tiles — the tile set's directory holds:
//
//   - tilemapresource.xml, an OSGeo TMS 1.0.0 TileMap resource (read by
//     GDAL, and by tools that take TMS): SRS, the tiled extent, the
//     bottom-left origin of the tile rows, and one TileSet per zoom level
//     whose href is the level's directory, so tile (x, y) is href/x/y.ext;
//   - tilejson.json, a TileJSON 3.0.0 document (read by MapLibre), for
//     grid sets that are the usual Web Mercator pyramid only.
//
// At the root of the store (under the key prefix), index.json lists every
// tile set that has documents, with what a map page needs to show it, and
// tms.xml is a TMS TileMapService listing the TileMap resources.
// WMTSCapabilities.xml, at the root and under each layer's id, is the
// WMTS 1.0.0 capabilities (RESTful, rows from the top on the CDN's /wmts/
// paths), and ogcapi.json with the documents under ogcapi/ is the OGC API –
// Tiles landing page, conformance, collections, tile sets and tile matrix
// sets (see ogcapi.go; the edge maps their extensionless paths to these
// keys).
//
// The documents are pure functions of the layer file (see describe), so a
// [Publisher] can tell whether a stored document is current by reading it
// back: it writes only what differs, and reports the keys it changed so the
// caller can invalidate them in a CDN.
//
// Tile numbering is the store's: y counts rows from the bottom (TMS order).
// A grid set whose levels do not share one bottom-left origin (an
// alignTopLeft grid whose extent is not a whole number of tiles at every
// level) cannot be described in TMS terms; such tile sets get no documents.
package discovery
