// The edge functions' shared test driver: run on the edge code loaded
// beside it, unchanged, under node (runtimes.mjs) and under njs, the
// engine of CloudFront Functions' runtime (the Go test composes one njs
// script of the edge file, this driver and its input). It is edge-runtime
// JavaScript itself (var, function, async/await, no await inside a call's
// arguments), so that it runs wherever the edge code does.
//
// edgeCases(input) resolves to [[name, outcome], ...], one for each of
// input.tokens ({name, token, ring, layer, now}: tileTokenParse and
// tileTokenCheck with input.keys), of input.requests ({name, method,
// uri, token, bearer}: handler, the key-value store holding input.store)
// and of input.ows ({name, uri}: ows.js's handler, see edgeOWSOutcome).
// An outcome is a token's code, or what the handler did with a request:
// "pass {uri} querystring {json} x-tile-token {value|none}" or
// "status {code} {cache-control} {body}".
async function edgeCases(input) {
    var out = [];
    var i, c, t, res;
    globalThis.edgeStore = input.store || {};
    for (i = 0; i < (input.tokens || []).length; i++) {
        c = input.tokens[i];
        t = tileTokenParse(c.token);
        if (typeof t !== 'string') {
            t = tileTokenCheck(t, c.ring.indexOf(t.kid) >= 0 && Object.prototype.hasOwnProperty.call(input.keys, t.kid) ? input.keys[t.kid] : null, c.layer, c.now);
        }
        out.push([c.name, t]);
    }
    for (i = 0; i < (input.requests || []).length; i++) {
        c = input.requests[i];
        res = await handler({
            version: '1.0',
            request: {
                method: c.method || 'GET',
                uri: c.uri,
                querystring: c.token && !c.bearer ? { token: { value: c.token } } : {},
                headers: c.bearer ? { authorization: { value: 'Bearer ' + c.token } } : {},
                cookies: {}
            }
        });
        out.push([c.name, edgeOutcome(res)]);
    }
    for (i = 0; i < (input.ows || []).length; i++) {
        c = input.ows[i];
        res = await handler({
            version: '1.0',
            request: { method: 'GET', uri: c.uri.split('?')[0], querystring: edgeQuery(c.uri), headers: {}, cookies: {} }
        });
        out.push([c.name, edgeOWSOutcome(res)]);
    }
    return out;
}

// edgeQuery: the querystring object CloudFront gives a function for the
// query of uri: each name as written with its value as written, a name
// given again a multiValue (value the first); no prototype, so that a
// name such as __proto__ is a name like any.
function edgeQuery(uri) {
    var q = Object.create(null);
    var at = uri.indexOf('?');
    var parts = at < 0 ? [] : uri.slice(at + 1).split('&');
    for (var i = 0; i < parts.length; i++) {
        if (parts[i] === '') {
            continue;
        }
        var eq = parts[i].indexOf('=');
        var k = eq < 0 ? parts[i] : parts[i].slice(0, eq);
        var v = { value: eq < 0 ? '' : parts[i].slice(eq + 1) };
        if (Object.prototype.hasOwnProperty.call(q, k)) {
            q[k].multiValue = (q[k].multiValue || [{ value: q[k].value }]).concat([v]);
        } else {
            q[k] = v;
        }
    }
    return q;
}

// edgeOWSOutcome: "pass {uri} querystring {json}" or "status {code}
// {content-type} {cache-control} {body}" (ows.js's requests).
function edgeOWSOutcome(res) {
    if (res.statusCode === undefined) {
        return 'pass ' + res.uri + ' querystring ' + JSON.stringify(res.querystring);
    }
    return 'status ' + res.statusCode + ' ' + res.headers['content-type'].value + ' ' + res.headers['cache-control'].value + ' ' + res.body.data;
}

function edgeOutcome(res) {
    if (res.statusCode !== undefined) {
        var cc = res.headers && res.headers['cache-control'];
        return 'status ' + res.statusCode + ' ' + (cc ? cc.value : '-') + ' ' + (res.body && res.body.data);
    }
    var tok = res.headers['x-tile-token'];
    return 'pass ' + res.uri + ' querystring ' + JSON.stringify(res.querystring) + ' x-tile-token ' + (tok ? tok.value : 'none');
}

// edgeKvs: the key-value store of cf.kvs() under node, holding
// globalThis.edgeStore; get rejects a key it lacks, as CloudFront's does
// (njs/cloudfront is the same under njs).
function edgeKvs() {
    return {
        get: function (key) {
            var s = globalThis.edgeStore;
            if (Object.prototype.hasOwnProperty.call(s, key)) {
                return Promise.resolve(s[key]);
            }
            return Promise.reject(new Error('key not found'));
        }
    };
}
