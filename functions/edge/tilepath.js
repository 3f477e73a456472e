// tilecache edge path function: a CloudFront Function (runtime
// cloudfront-js-2.0, viewer request) that maps the tile paths map clients
// ask for — WMTS RESTful and XYZ, rows counted from the top — to the keys
// the tiles are stored under (rows from the bottom):
//
//   /wmts/{layer}/{gridSet}/{format}/{parametersId}/{TileMatrix}/{TileCol}/{TileRow}.{ext}
//   /xyz/{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{y}.{ext}
//     -> /{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{rows(z)-1-y}.{ext}
//
// The columns and rows of each grid set's levels come from the
// distribution's KeyValueStore (key: the grid set id, value:
// "c0,c1,...;r0,r1,...", written by the service). A path with a number not
// written canonically, a level, column or row outside the grid set, or an
// unknown grid set is answered 404 here and never reaches the bucket.
// Every other path passes unchanged. The same mapping, in Go, is
// internal/edgepath; both pass internal/edgepath/testdata/cases.json.
import cf from 'cloudfront';

var kvs = cf.kvs();
var PREFIXES = ['/wmts/', '/xyz/'];
var CANONICAL = /^(0|[1-9][0-9]{0,14})$/;

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

// levels reads "c0,c1,...;r0,r1,..." (null when malformed).
function levels(value) {
    var halves = String(value).split(';');
    if (halves.length !== 2) {
        return null;
    }
    var cols = numbers(halves[0]);
    var rows = numbers(halves[1]);
    if (cols === null || rows === null || cols.length !== rows.length) {
        return null;
    }
    return { cols: cols, rows: rows };
}

async function handler(event) {
    var request = event.request;
    var uri = request.uri;
    var rest = null;
    for (var i = 0; i < PREFIXES.length; i++) {
        if (uri.startsWith(PREFIXES[i])) {
            rest = uri.slice(PREFIXES[i].length);
        }
    }
    if (rest === null) {
        return request;
    }
    var seg = rest.split('/');
    if (seg.length !== 7) {
        return notFound();
    }
    for (i = 0; i < 4; i++) {
        if (seg[i] === '' || seg[i] === '.' || seg[i] === '..') {
            return notFound();
        }
    }
    var dot = seg[6].indexOf('.');
    if (dot < 0) {
        return notFound();
    }
    var name = seg[6].slice(0, dot);
    var ext = seg[6].slice(dot + 1);
    if (ext === '' || !CANONICAL.test(seg[4]) || !CANONICAL.test(seg[5]) || !CANONICAL.test(name)) {
        return notFound();
    }
    var grid;
    try {
        grid = levels(await kvs.get(seg[1]));
    } catch (e) {
        return notFound(); // no such grid set
    }
    var z = Number(seg[4]);
    var x = Number(seg[5]);
    var y = Number(name);
    if (grid === null || z >= grid.rows.length || x >= grid.cols[z] || y >= grid.rows[z]) {
        return notFound();
    }
    request.uri = '/' + seg.slice(0, 4).join('/') + '/' + seg[4] + '/' + seg[5] + '/' + (grid.rows[z] - 1 - y) + '.' + ext;
    return request;
}
