// Runs the edge's tile token code (tiletoken.js) under Node as CloudFront
// Functions run it — crypto and Buffer given, nothing else — against every
// vector of internal/tiletoken/testdata/vectors.json, the table the Go
// origin passes. Exit status 0 when every case gives its outcome.
import { readFileSync } from 'node:fs';
import crypto from 'node:crypto';
import vm from 'node:vm';

const src = readFileSync(new URL('./tiletoken.js', import.meta.url), 'utf8');
const doc = JSON.parse(readFileSync(new URL('../../internal/tiletoken/testdata/vectors.json', import.meta.url), 'utf8'));

const context = { crypto, Buffer };
vm.createContext(context);
vm.runInContext(src + '\nglobalThis.parse = tileTokenParse; globalThis.check = tileTokenCheck;\n', context);

let failures = 0;
for (const c of doc.cases) {
  const t = context.parse(c.token);
  let got = t;
  if (typeof t !== 'string') {
    const secret = c.ring.includes(t.kid) && Object.prototype.hasOwnProperty.call(doc.keys, t.kid) ? doc.keys[t.kid] : null;
    got = context.check(t, secret, c.layer, c.now);
  }
  if (got !== c.want) {
    failures++;
    console.error(`${c.name}: ${got}, want ${c.want}`);
  }
}
console.log(`edge tile tokens: ${doc.cases.length} vectors, ${failures} failures`);
process.exit(failures === 0 ? 0 : 1);
