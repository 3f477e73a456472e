// Package accesslog turns access logs of the tile bucket and of the CDN in
// front of it into reads of tile pages, so that the disk quota's LRU and
// LFU policies see the reads the CDN served as well as those the program
// served itself.
//
// The pieces are streamed one into the next, and each can be used alone:
//
//   - A Reader parses a log (plain or gzip-compressed) into Records: the
//     request's method, key or URL path, status and time. It knows three
//     formats (Format): CloudFront standard logs (the legacy W3C format,
//     columns read from each "#Fields:" header), Amazon S3 server access
//     logs, and the combined log format of nginx and Apache. It reads
//     through a large buffer and does not allocate per line; a Record's
//     byte slices are valid until the next call. Lines it cannot parse are
//     counted by reason and skipped; only an I/O error or a corrupt gzip
//     stream ends the read with an error.
//   - A Mapper keeps the successful reads (GET or HEAD answered 2xx or
//     304) of tile keys of known layers and maps each to its Page, the unit
//     the quota keeps statistics for, saying why it drops the others
//     (Outcome).
//   - An Aggregator counts hits and the latest read per page, handing a
//     batch to a flush callback whenever it holds its maximum number of
//     pages, so memory stays bounded for logs of any size.
//   - Ingest runs the three over one log and returns its Stats.
//
// # Keys and encodings
//
// Each log escapes what it writes, and what it writes was often escaped
// by the client already; each layer is undone exactly once. CloudFront
// percent-encodes field values (RFC 1738: "%" itself becomes "%25"), so a
// viewer's "/topp%3Astates/..." is logged as "/topp%253Astates/...". S3
// logs give the key URL-encoded; in practice the encoded form of the path
// the client sent, so it too carries two layers for requests whose path
// was percent-encoded. A Reader undoes the log's own layer, giving the
// path or key as the client sent it; the Mapper undoes the client's layer
// as the bucket does when it turns a request path into a key. A key with a
// literal "%" therefore maps right when the log carries both layers, and
// tile keys (ids, numbers, an extension) never hold one.
//
// Combined logs write the request line as received (nginx and Apache
// escape only quotes, backslashes and control bytes, as \xHH), so their
// paths carry the client's layer alone.
package accesslog
