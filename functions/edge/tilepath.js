// tilecache edge path function: a CloudFront Function (runtime
// cloudfront-js-2.0, viewer request) that maps the paths map clients ask
// for — WMTS RESTful, XYZ and OGC API - Tiles, rows counted from the top —
// to the keys the tiles are stored under (rows from the bottom):
//
//   /wmts/{layer}/{gridSet}/{format}/{parametersId}/{TileMatrix}/{TileCol}/{TileRow}.{ext}
//   /xyz/{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{y}.{ext}
//   /ogcapi/collections/{layer}/map/tiles/{tileMatrixSetId}/{z}/{y}/{x}.{format}
//   /ogcapi/collections/{layer}/tiles/{tileMatrixSetId}/{z}/{y}/{x}.{vector format}
//     -> /{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{rows(z)-1-y}.{ext}
//
// The columns and rows of each grid set's levels come from the
// distribution's KeyValueStore (key: the grid set id, or the registered
// tile matrix set id it is published as, value: "c0,c1,...;r0,r1,..."
// and, for the latter, ";{gridSetId}"; written by the service). A path
// with a number not written canonically, a level, column or row outside
// the grid set, or an unknown grid set is answered 404 here and never
// reaches the bucket; so is one with a segment that decodes to nothing,
// . or .., or holds %2F, a tile of the layer _tilecache, a known format
// with another extension, or a key longer than MAX_KEY. Paths under
// /_tilecache/ (the service's own objects) are answered 404 too. The
// other /ogcapi paths are the OGC API documents, stored as /ogcapi.json
// and /ogcapi/{path}.json. Every other path passes unchanged. The same mapping, in Go, is internal/edgepath;
// both pass internal/edgepath/testdata/cases.json.
import cf from 'cloudfront';

var kvs = cf.kvs();
var CANONICAL = /^(0|[1-9][0-9]{0,14})$/;
var OGC_TILES = '/ogcapi/collections/';
// EXT: the file extension of each format short name (tilestore.formats).
var EXT = { png: 'png', jpeg: 'jpeg', gif: 'gif', png8: 'png', png24: 'png', png_24: 'png', tiff: 'tiff', 'mapbox-vectortile': 'pbf', geojson: 'geojson' };
// VECTOR: the vector formats, the only ones of the OGC vector tiles path.
var VECTOR = { 'mapbox-vectortile': 'pbf', geojson: 'geojson' };

function notFound() {
    return {
        statusCode: 404,
        statusDescription: 'Not Found',
        headers: {
            'content-type': { value: 'text/plain; charset=utf-8' },
            'cache-control': { value: 'public, max-age=86400' }
        },
        body: { encoding: 'text', data: 'Not found: no such tile\n' }
    };
}

function numbers(s) {
    var parts = s.split(',');
    var out = [];
    for (var i = 0; i < parts.length; i++) {
        if (!CANONICAL.test(parts[i]) || parts[i] === '0') {
            return null;
        }
        out.push(Number(parts[i]));
    }
    return out;
}

// levels reads "c0,c1,...;r0,r1,...[;gridSetId]" (null when malformed).
function levels(value) {
    var parts = String(value).split(';');
    if (parts.length !== 2 && !(parts.length === 3 && parts[2] !== '')) {
        return null;
    }
    var cols = numbers(parts[0]);
    var rows = numbers(parts[1]);
    if (cols === null || rows === null || cols.length !== rows.length) {
        return null;
    }
    return { cols: cols, rows: rows, gridSet: parts[2] };
}

// MAX_KEY: the longest key path served, escapes included (S3's longest
// key; edgepath.MaxKey).
var MAX_KEY = 1024;

// segment returns a path segment percent-decoded as the bucket decodes it,
// or null when it does not decode or decodes to '', '.', '..' or something
// with a '/' (%2F): no key has such a segment (edgepath's segment).
function segment(s) {
    var d;
    try {
        d = decodeURIComponent(s);
    } catch (e) {
        return null;
    }
    return d === '' || d === '.' || d === '..' || d.indexOf('/') >= 0 ? null : d;
}

// tile maps a tile whose row counts from the top to its stored key's
// path, or answers 404.
async function tile(request, layer, gridSet, format, params, zs, xs, ys, ext) {
    var plain = [layer, gridSet, format, params, ext].map(segment);
    if (plain.indexOf(null) >= 0 || plain[0] === '_tilecache' ||
        (Object.prototype.hasOwnProperty.call(EXT, plain[2]) && EXT[plain[2]] !== plain[4]) ||
        !CANONICAL.test(zs) || !CANONICAL.test(xs) || !CANONICAL.test(ys)) {
        return notFound();
    }
    var grid;
    try {
        // The store knows grid sets by their ids; a client may have
        // escaped one (EPSG%3A4326).
        grid = levels(await kvs.get(plain[1]));
    } catch (e) {
        return notFound(); // no such grid set
    }
    var z = Number(zs);
    var x = Number(xs);
    var y = Number(ys);
    if (grid === null || z >= grid.rows.length || x >= grid.cols[z] || y >= grid.rows[z]) {
        return notFound();
    }
    var uri = '/' + layer + '/' + (grid.gridSet || gridSet) + '/' + format + '/' + params + '/' +
        zs + '/' + xs + '/' + (grid.rows[z] - 1 - y) + '.' + ext;
    if (uri.length > MAX_KEY) {
        return notFound();
    }
    request.uri = uri;
    return request;
}

// name splits "{name}.{ext}" at its first dot (null without one).
function name(s) {
    var dot = s.indexOf('.');
    return dot < 0 ? null : [s.slice(0, dot), s.slice(dot + 1)];
}

// reserved reports whether a path names one of the service's own objects
// (_tilecache/: the prepared areas of seed requests), percent-decoded as
// the bucket decodes it, leading slashes aside (edgepath.Reserved).
function reserved(uri) {
    var p = uri;
    try {
        p = decodeURIComponent(uri);
    } catch (e) {
        // a malformed escape: the path as written
    }
    while (p.charAt(0) === '/') {
        p = p.slice(1);
    }
    return p === '_tilecache' || p.startsWith('_tilecache/');
}

async function handler(event) {
    var request = event.request;
    var uri = request.uri;
    var seg, n;
    if (reserved(uri)) {
        return notFound();
    }
    if (uri === '/ogcapi' || uri === '/ogcapi/') {
        request.uri = '/ogcapi.json';
        return request;
    }
    if (uri.startsWith('/wmts/') || uri.startsWith('/xyz/')) {
        seg = uri.slice(uri.indexOf('/', 1) + 1).split('/');
        n = seg.length === 7 ? name(seg[6]) : null;
        if (n === null) {
            return notFound();
        }
        return tile(request, seg[0], seg[1], seg[2], seg[3], seg[4], seg[5], n[0], n[1]);
    }
    if (!uri.startsWith('/ogcapi/')) {
        return request;
    }
    seg = uri.slice(OGC_TILES.length).split('/');
    if (uri.startsWith(OGC_TILES) && seg.length === 7 && seg[1] === 'map' && seg[2] === 'tiles') {
        n = name(seg[6]);
        if (n === null || !Object.prototype.hasOwnProperty.call(EXT, n[1])) {
            return notFound();
        }
        return tile(request, seg[0], seg[3], n[1], 'default', seg[4], n[0], seg[5], EXT[n[1]]);
    }
    if (uri.startsWith(OGC_TILES) && seg.length === 6 && seg[1] === 'tiles') {
        n = name(seg[5]);
        if (n === null || !Object.prototype.hasOwnProperty.call(VECTOR, n[1])) {
            return notFound();
        }
        return tile(request, seg[0], seg[2], n[1], 'default', seg[3], n[0], seg[4], VECTOR[n[1]]);
    }
    var rest = uri.slice('/ogcapi/'.length);
    if (rest.endsWith('/')) {
        rest = rest.slice(0, -1);
    }
    seg = rest.split('/');
    for (var i = 0; i < seg.length; i++) {
        if (segment(seg[i]) === null) {
            return notFound();
        }
    }
    var doc = '/ogcapi/' + rest + (rest.endsWith('.json') ? '' : '.json');
    if (doc.length > MAX_KEY) {
        return notFound();
    }
    request.uri = doc;
    return request;
}
