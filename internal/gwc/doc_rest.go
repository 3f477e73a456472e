// The REST bodies: the byte-level codecs of the REST contract
// (shared/contract/REST-CONTRACT.md): seed requests, task lists, mass
// truncation and the disk-quota configuration, in XML and JSON.
//
// # Decoding
//
// Both formats are first parsed into one small element tree, the way
// GeoWebCache reads JSON through Jettison's "mapped" convention: a JSON
// object is an element whose members are child elements, a JSON array is the
// element repeated, and a scalar is element text. The document decoders then
// walk that tree once for both formats, so XML and JSON accept the same
// requests and reject them with the same messages.
//
// Rules shared by every decoder (contract §1):
//
//   - JSON is RFC 8259 with two tolerances: after the value only whitespace
//     and stray '}' characters may follow (GeoWebCache's own examples carry one
//     '}' too many), and strings may be single-quoted as GeoWebCache's parser
//     allows. A leading UTF-8 byte order mark is skipped in both formats.
//   - Wherever a number or boolean is expected, the JSON number/boolean or a
//     string holding it is accepted ("4", "true"); booleans are
//     case-insensitive. Wherever text is expected, a JSON number or boolean is
//     accepted as its literal text. Numbers, booleans and single-valued text
//     fields are trimmed of surrounding whitespace (XML indentation is not
//     data); seed parameter names and values are kept verbatim.
//   - A JSON null member is the same as an absent member. An empty string
//     (JSON "") or empty element (<x/>) where elements are expected is an
//     empty element, as Jettison maps it.
//   - Keys and element names are case-sensitive. An unknown one is rejected
//     with "Unknown field: name"; a field given twice is rejected too
//     ("Duplicate field: name"), except the repeated list elements (double,
//     entry, string, LayerQuota).
//   - XML: any <!DOCTYPE or other directive is rejected before parsing,
//     attributes and namespaces are ignored, malformed input gives
//     "Malformed XML: <decoder message>", e.g. "Malformed XML: unexpected EOF".
//
// Every decode error is an *apperr.Error of kind apperr.Invalid whose message
// is one line of English that can be shown to the client as is; client text
// quoted in it is cut to 100 bytes and Go-quoted when it holds control
// characters.
//
// # Encoding
//
// Encoders return the exact bytes of the contract's examples: no XML
// declaration or whitespace in task lists, the indented document with a
// declaration for the disk-quota XML, compact JSON, and no trailing newline.

package gwc
