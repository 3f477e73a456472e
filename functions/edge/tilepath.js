// tilecache edge function (cloudfront-js-2.0, viewer request): WMTS, XYZ
// and OGC API - Tiles paths to stored keys, as internal/edgepath documents
// (both pass its testdata/cases.json); a private layer's objects only with
// a valid tile token (?token= or Bearer, moved to x-tile-token). The
// KeyValueStore holds grid sets by id, /private/{layer id}, /key/{kid}.
import cf from 'cloudfront';
import crypto from 'crypto';

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

// MAX_KEY: the longest key path served (edgepath.MaxKey).
var MAX_KEY = 1024;

// segment: a path segment percent-decoded, null when no key has it
// (edgepath's segment).
function segment(s) {
    var d;
    try {
        d = decodeURIComponent(s);
    } catch (e) {
        return null;
    }
    return d === '' || d === '.' || d === '..' || d.indexOf('/') >= 0 ? null : d;
}

// tile maps a tile (rows from the top) to its key's path, or a 404.
async function tile(request, layer, gridSet, format, params, zs, xs, ys, ext) {
    var plain = [layer, gridSet, format, params, ext].map(segment);
    if (plain.indexOf(null) >= 0 || plain[0] === '_tilecache' ||
        (Object.prototype.hasOwnProperty.call(EXT, plain[2]) && EXT[plain[2]] !== plain[4]) ||
        !CANONICAL.test(zs) || !CANONICAL.test(xs) || !CANONICAL.test(ys)) {
        return notFound();
    }
    var grid;
    try {
        // by id, unescaped (EPSG%3A4326); no await in a call's arguments
        // (njs, the edge's engine, refuses or crashes on it)
        grid = await kvs.get(plain[1]);
    } catch (e) {
        return notFound(); // no such grid set
    }
    grid = levels(grid);
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

// reserved: whether a path names the service's own objects
// (edgepath.Reserved).
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

async function route(event) {
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

// Tile tokens v1.{kid}.{exp}.{layers}.{sig}: the twin of internal/tiletoken
// (both pass its testdata/vectors.json); tilepath.js holds this verbatim.
var TT_MAX = 2048;
var TT_B64 = /^[A-Za-z0-9_-]+$/;
var TT_KID = /^[A-Za-z0-9_-]{1,32}$/;
var TT_EXP = /^[1-9][0-9]{0,11}$/;

// tileTokenParse: the token's fields, or the outcome (a string).
function tileTokenParse(s) {
    if (!s) {
        return 'missing';
    }
    if (s.length > TT_MAX) {
        return 'malformed';
    }
    var f = s.split('.');
    if (f.length !== 5 || f[0] !== 'v1' || !TT_KID.test(f[1]) || !TT_EXP.test(f[2]) ||
        !TT_B64.test(f[3]) || f[4].length !== 43 || !TT_B64.test(f[4])) {
        return 'malformed';
    }
    return { kid: f[1], exp: Number(f[2]), layers: f[3], body: s.slice(0, s.length - 44), sig: f[4] };
}

// tileTokenCheck: the outcome of a parsed token for layer at now (Unix
// seconds) given its key's secret (null: unknown), checked in Go's order.
function tileTokenCheck(t, secret, layer, now) {
    if (secret === null || secret === undefined) {
        return 'unknown-key';
    }
    var sig = crypto.createHmac('sha256', secret).update(t.body).digest('base64url');
    var diff = sig.length ^ t.sig.length;
    for (var i = 0; i < sig.length && i < t.sig.length; i++) {
        diff |= sig.charCodeAt(i) ^ t.sig.charCodeAt(i);
    }
    if (diff !== 0) {
        return 'bad-signature';
    }
    if (now >= t.exp) {
        return 'expired';
    }
    var raw = Buffer.from(t.layers, 'base64url');
    var text = raw.toString('utf8');
    // Only canonical base64url of UTF-8 encodes back to itself.
    if (Buffer.from(text, 'utf8').toString('base64url') !== t.layers) {
        return 'malformed';
    }
    var ids = text.split('\n');
    for (var j = 0; j < ids.length; j++) {
        if (ids[j] === layer) {
            return 'ok';
        }
    }
    return 'wrong-layer';
}

function refuse(status, msg) {
    return {
        statusCode: status,
        headers: {
            'content-type': { value: 'text/plain; charset=utf-8' },
            'cache-control': { value: 'no-store' },
            'access-control-allow-origin': { value: '*' }
        },
        body: { encoding: 'text', data: msg + '\n' }
    };
}

// guard: a private layer's keys and OGC API collection only with a valid
// tile token for it (tiletoken.Guard).
async function guard(request) {
    var seg = request.uri.split('/');
    var id = seg[1] === 'ogcapi' && seg[2] === 'collections' && seg.length > 3 ?
        (seg.length === 4 ? seg[3].replace(/\.json$/, '') : seg[3]) : seg[1];
    id = request.method === 'OPTIONS' ? null : segment(id || '');
    if (id === null) {
        return request;
    }
    try {
        await kvs.get('/private/' + id);
    } catch (e) {
        return request; // a public layer
    }
    var q = request.querystring.token;
    var a = request.headers.authorization;
    var tok = q && q.value ? q.value : (a && a.value.startsWith('Bearer ') ? a.value.slice(7).trim() : '');
    var t = tileTokenParse(tok);
    if (typeof t !== 'string') {
        var secret = null;
        try {
            secret = await kvs.get('/key/' + t.kid);
        } catch (e) {
            // unknown key
        }
        t = tileTokenCheck(t, secret, id, Math.floor(Date.now() / 1000));
    }
    if (t === 'ok') {
        delete request.querystring.token;
        request.headers['x-tile-token'] = { value: tok };
        return request;
    }
    if (t === 'wrong-layer') {
        return refuse(403, 'Forbidden: the tile token is not for layer ' + id);
    }
    if (t === 'missing') {
        return refuse(401, 'Unauthorized: layer ' + id + ' is private: a tile token for it is needed');
    }
    return refuse(401, t === 'expired' ? 'Unauthorized: the tile token has expired' : 'Unauthorized: the tile token is not valid (' + t + ')');
}

async function handler(event) {
    var res = await route(event);
    return res.statusCode === undefined ? guard(res) : res;
}
