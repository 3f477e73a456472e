// Reads tiles of a PMTiles archive served over HTTP with the pmtiles
// JavaScript library's browser build and its own fetch source (range
// requests, ETag checks), as a map page does:
//   node pmtiles-fetch.mjs PMTILES_JS URL < "z x y" lines
// Prints "z/x/y sha256-hex" for each tile, or "z/x/y missing".
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { runInThisContext } from "node:vm";

const [lib, url] = process.argv.slice(2);
const { PMTiles } = runInThisContext(`${readFileSync(lib, "utf8")}\n;pmtiles`, { filename: lib });

const p = new PMTiles(url);
const out = [];
for (const line of readFileSync(0, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const [z, x, y] = line.trim().split(/\s+/).map(Number);
  const r = await p.getZxy(z, x, y);
  const id = `${z}/${x}/${y}`;
  out.push(r ? `${id} ${createHash("sha256").update(new Uint8Array(r.data)).digest("hex")}` : `${id} missing`);
}
process.stdout.write(out.join("\n") + "\n");
