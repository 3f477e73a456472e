// Runs an edge function file (tilepath.js, tiletoken.js or ows.js) under node as
// CloudFront runs it — its imports of 'cloudfront' and 'crypto' given:
// a key-value store (edgecases.js's edgeKvs) and node's crypto — with the
// shared driver edgecases.js, on the input read from standard input, and
// prints the driver's outcomes as JSON. The Go tests
// (internal/edgepath/runtimes_test.go) run the same file, driver and input
// under njs and compare.
//   node functions/edge/runtimes.mjs functions/edge/tilepath.js < input.json
import { readFileSync } from 'node:fs';
import crypto from 'node:crypto';
import vm from 'node:vm';

const file = process.argv[2];
const src = readFileSync(file, 'utf8');
const driver = readFileSync(new URL('./edgecases.js', import.meta.url), 'utf8');
const input = JSON.parse(readFileSync(0, 'utf8'));
const imports = /^import cf from 'cloudfront';(\nimport crypto from 'crypto';)?$/m;

const context = { crypto, Buffer };
vm.createContext(context);
vm.runInContext(driver, context, { filename: 'edgecases.js' });
vm.runInContext('var cf = { kvs: edgeKvs };\n' + src.replace(imports, ''), context, { filename: file });
const out = await context.edgeCases(input);
process.stdout.write(JSON.stringify(out) + '\n');
