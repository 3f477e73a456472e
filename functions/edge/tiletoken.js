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
