// Runs the edge path function's own source (tilepath.js) under Node as
// CloudFront runs it — its import of 'cloudfront' given a key-value store
// that holds the shared case table's grid sets — against every case of
// internal/edgepath/testdata/cases.json, the table the Go mapping passes.
// Exit status 0 when every case passes; each failure is printed.
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const src = readFileSync(new URL('./tilepath.js', import.meta.url), 'utf8');
const doc = JSON.parse(readFileSync(new URL('../../internal/edgepath/testdata/cases.json', import.meta.url), 'utf8'));

const importLine = /^import cf from 'cloudfront';$/m;
if (!importLine.test(src)) {
  console.error('tilepath.js does not import cloudfront as expected');
  process.exit(1);
}
const context = {
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
console.log(`edge path function: ${doc.cases.length} cases, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
