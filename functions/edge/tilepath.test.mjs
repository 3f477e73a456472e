// Runs the edge path function's own source (tilepath.js) under Node as
// CloudFront runs it — its import of 'cloudfront' given a key-value store
// that holds the shared case table's grid sets — against every case of
// internal/edgepath/testdata/cases.json, the table the Go mapping passes.
// Then private layers: the store marks one private and holds the keys of
// internal/tiletoken/testdata/vectors.json; its tiles and documents pass
// only with a valid token for it, which leaves the query string.
// Exit status 0 when every case passes; each failure is printed.
import { readFileSync } from 'node:fs';
import crypto from 'node:crypto';
import vm from 'node:vm';

const src = readFileSync(new URL('./tilepath.js', import.meta.url), 'utf8');
const doc = JSON.parse(readFileSync(new URL('../../internal/edgepath/testdata/cases.json', import.meta.url), 'utf8'));

const importLine = /^import cf from 'cloudfront';\nimport crypto from 'crypto';$/m;
if (!importLine.test(src)) {
  console.error('tilepath.js does not import cloudfront and crypto as expected');
  process.exit(1);
}
const tokenSrc = readFileSync(new URL('./tiletoken.js', import.meta.url), 'utf8');
if (!src.includes(tokenSrc)) {
  console.error('tilepath.js does not hold tiletoken.js verbatim: copy it in');
  process.exit(1);
}
const vectors = JSON.parse(readFileSync(new URL('../../internal/tiletoken/testdata/vectors.json', import.meta.url), 'utf8'));
const context = {
  crypto,
  Buffer,
  cf: {
    kvs: () => ({
      get: async (key) => {
        if (!Object.prototype.hasOwnProperty.call(doc.table, key)) {
          throw new Error('key not found');
        }
        return doc.table[key];
      },
    }),
  },
};
vm.createContext(context);
vm.runInContext(src.replace(importLine, '') + '\nglobalThis.handler = handler;\n', context);

let failures = 0;
const fail = (msg) => { failures++; console.error(msg); };
for (const c of doc.cases) {
  const res = await context.handler({ version: '1.0', request: { method: 'GET', uri: c.uri, querystring: {}, headers: {}, cookies: {} } });
  if (c.key === null) {
    if (res.statusCode !== 404) fail(`${c.uri}: got ${JSON.stringify(res)}, want a 404`);
  } else if (res.statusCode !== undefined || res.uri !== c.key) {
    fail(`${c.uri}: got ${JSON.stringify(res)}, want uri ${c.key}`);
  }
}
// Other paths pass unchanged.
for (const uri of ['/demo:world/EPSG:900913/png/default/0/0/0.png', '/index.html', '/tiles/x', '/xyzzy', '/_tilecachex/a', '/a/_tilecache/b']) {
  const res = await context.handler({ version: '1.0', request: { method: 'GET', uri, querystring: {}, headers: {}, cookies: {} } });
  if (res.uri !== uri || res.statusCode !== undefined) fail(`${uri}: got ${JSON.stringify(res)}, want it unchanged`);
}

// Private layers.
doc.table['/private/roads'] = '1';
doc.table['/key/k2'] = vectors.keys.k2;
doc.table['/key/k1'] = vectors.keys.k1;
const b64 = (s) => Buffer.from(s, 'utf8').toString('base64url');
const sign = (kid, secret, exp, layers) => {
  const body = `v1.${kid}.${exp}.${b64(layers.join('\n'))}`;
  return body + '.' + crypto.createHmac('sha256', secret).update(body).digest('base64url');
};
const now = Math.floor(Date.now() / 1000);
const good = sign('k2', vectors.keys.k2, now + 3600, ['parcels', 'roads']);
const tokens = {
  good,
  old: sign('k1', vectors.keys.k1, now + 3600, ['roads']),
  expired: sign('k2', vectors.keys.k2, now - 1, ['roads']),
  other: sign('k2', vectors.keys.k2, now + 3600, ['parcels']),
  unknown: sign('other', vectors.keys.other, now + 3600, ['roads']),
  tampered: good.slice(0, -2) + (good.at(-2) === 'A' ? 'B' : 'A') + good.at(-1),
};
const gs = Object.keys(doc.table).find((k) => !k.startsWith('/') && doc.table[k].split(';').length === 2);
const privatePaths = [
  `/xyz/roads/${gs}/png/default/0/0/0.png`, `/wmts/ro%61ds/${gs}/png/default/0/0/0.png`,
  `/roads/${gs}/png/default/0/0/0.png`, '/roads/WMTSCapabilities.xml', `/roads/${gs}/png/default/tilejson.json`,
  '/ogcapi/collections/roads', '/ogcapi/collections/roads/map/tiles', `/ogcapi/collections/roads/map/tiles/${gs}/0/0/0.png`,
];
const ask = (uri, token, bearer, method = 'GET') => context.handler({
  version: '1.0',
  request: {
    method, uri, querystring: token && !bearer ? { token: { value: token } } : {},
    headers: bearer ? { authorization: { value: 'Bearer ' + token } } : {}, cookies: {},
  },
});
let privateCases = 0;
for (const uri of privatePaths) {
  for (const [name, token, bearer, status, says] of [
    ['no token', '', false, 401, 'is private'], ['expired', tokens.expired, false, 401, 'expired'],
    ['tampered', tokens.tampered, false, 401, 'bad-signature'], ['unknown key', tokens.unknown, false, 401, 'unknown-key'],
    ['malformed', 'v1.x', false, 401, 'malformed'], ["another layer's", tokens.other, false, 403, 'not for layer roads'],
    ['valid', tokens.good, false, 200], ['valid, as Bearer', tokens.good, true, 200], ['by the previous key', tokens.old, false, 200],
  ]) {
    privateCases++;
    const res = await ask(uri, token, bearer);
    if (status !== 200) {
      if (res.statusCode !== status || !res.body?.data?.includes(says) || res.headers?.['cache-control']?.value !== 'no-store') {
        fail(`${uri}, ${name}: got ${JSON.stringify(res)}, want ${status} saying ${says}`);
      }
    } else if (res.statusCode !== undefined || res.querystring.token !== undefined || res.headers['x-tile-token']?.value !== token) {
      fail(`${uri}, ${name}: got ${JSON.stringify(res)}, want the request without ?token=, the token in x-tile-token`);
    }
  }
}
// Public layers and shared documents pass as before, tokens or not.
for (const uri of [`/xyz/demo/${gs}/png/default/0/0/0.png`, '/ogcapi/collections', '/WMTSCapabilities.xml', '/index.json']) {
  for (const token of ['', 'v1.x', tokens.good]) {
    privateCases++;
    const res = await ask(uri, token, false);
    if (res.statusCode !== undefined || res.headers['x-tile-token'] !== undefined) fail(`${uri} with token ${token}: got ${JSON.stringify(res)}, want it passed`);
  }
}
// A CORS preflight carries no token.
const pre = await ask(privatePaths[0], '', false, 'OPTIONS');
if (pre.statusCode !== undefined) fail(`OPTIONS ${privatePaths[0]}: got ${JSON.stringify(pre)}, want it passed`);
console.log(`edge path function: ${doc.cases.length} cases, ${privateCases} private layer cases, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
