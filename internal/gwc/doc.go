// Package gwc is GeoWebCache's contract in one place: every byte a
// GeoWebCache client, a GeoWebCache configuration or GeoWebCache itself
// reads from or writes to tilecache, encoded and decoded here and nowhere
// else.
//
//   - The REST bodies (doc_rest.go): seed requests and the estimate of
//     one (seeddocs.go), task lists, mass truncation, the disk-quota
//     configuration and usage, in XML and JSON, read through one
//     format-neutral tree (node.go) so that both formats accept and refuse
//     the same requests with the same messages.
//   - The layer and grid set documents (doc_layer.go): GeoWebCache's
//     <wmsLayer> and <gridSet> (its REST bodies and geowebcache.xml) to and
//     from the entries of the layer file, strictly (decoder.go).
//   - The blob store's metadata (meta.go): the objects GeoWebCache's S3
//     blob store keeps beside the tiles, in java.util.Properties form.
//
// XML is read by one strict reader (xmlread.go) into the tree of nodes
// that the REST bodies' decoders and the documents' decoder both walk.
// The package imports no engine, handler or store: the seed engine, the
// REST handler and the command line import it.
package gwc
