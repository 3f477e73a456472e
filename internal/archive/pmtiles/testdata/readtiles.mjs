// Reads tiles of a PMTiles archive with the pmtiles JavaScript library's
// browser build, the one map pages load:
//   node readtiles.mjs PMTILES_JS ARCHIVE < "z x y" lines
// Prints "z/x/y sha256-hex" for each tile, or "z/x/y missing".
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { runInThisContext } from "node:vm";

const [lib, archive] = process.argv.slice(2);
const { PMTiles } = runInThisContext(`${readFileSync(lib, "utf8")}\n;pmtiles`, { filename: lib });

const file = await open(archive, "r");
const source = {
  getKey: () => archive,
  getBytes: async (offset, length) => {
    const buf = Buffer.alloc(length);
    const { bytesRead } = await file.read(buf, 0, length, offset);
    const data = buf.buffer.slice(buf.byteOffset, buf.byteOffset + bytesRead);
    return { data };
  },
};
const p = new PMTiles(source);
const out = [];
for (const line of readFileSync(0, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const [z, x, y] = line.trim().split(/\s+/).map(Number);
  const r = await p.getZxy(z, x, y);
  const id = `${z}/${x}/${y}`;
  out.push(r ? `${id} ${createHash("sha256").update(new Uint8Array(r.data)).digest("hex")}` : `${id} missing`);
}
const md = await p.getMetadata();
out.push(`metadata ${JSON.stringify(md)}`);
await file.close();
process.stdout.write(out.join("\n") + "\n");
