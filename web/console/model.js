// What the pages share: the layers (from /rest/overview.json, or, on a
// server without it, from /rest/layers, the layers' documents and the
// usage report) and the grid sets' definitions.
import { call, getJSON, enc } from './api.js';
import { parseXML, childText } from './util.js';

let overviewMissing = false;

// loadOverview returns {layers:[{name,title,managedBy,gridSets,formats,usage,quota,tasks,lastFinished}],
// gridSets:[{name,managedBy}], quota, partial}.
export async function loadOverview() {
  if (!overviewMissing) {
    const r = await call('GET', 'overview.json', { ok: [404] });
    if (r.status === 200) return JSON.parse(r.text);
    overviewMissing = true;
  }
  return fallbackOverview();
}

async function fallbackOverview() {
  const [layersDoc, gridDoc, usage] = await Promise.all([
    call('GET', 'layers').then((r) => parseXML(r.text)),
    call('GET', 'gridsets').then((r) => parseXML(r.text)),
    getJSON('diskquota/usage.json', { ok: [404] }).catch(() => null),
  ]);
  const names = [...layersDoc.getElementsByTagName('layer')].map((l) => childText(l, 'name'));
  const gridSets = [...gridDoc.getElementsByTagName('gridSet')].map((g) => ({ name: childText(g, 'name'), managedBy: '' }));
  const byLayer = {};
  for (const u of usage?.diskQuotaUsage?.layers || []) byLayer[u.layer] = u;
  const layers = await Promise.all(names.map(async (name) => {
    const l = { name, title: '', managedBy: '', gridSets: [], formats: [], usage: null, quota: null, tasks: null, lastFinished: null };
    const u = byLayer[name];
    if (u) {
      l.usage = { bytes: u.usedBytes, tiles: u.usedTiles, recountPending: u.recountPending };
      if (u.quota) l.quota = { bytes: quotaBytes(u.quota), policy: u.expirationPolicyName };
    }
    const r = await call('GET', `layers/${enc(name)}.xml`, { ok: [404, 409] });
    if (r.status === 200) {
      const d = parseXML(r.text).documentElement;
      l.title = d.getElementsByTagName('title')[0]?.textContent.trim() || '';
      l.gridSets = [...d.getElementsByTagName('gridSetName')].map((e) => e.textContent.trim());
      const mf = d.getElementsByTagName('mimeFormats')[0];
      if (mf) l.formats = [...mf.children].map((e) => e.textContent.trim());
    }
    return l;
  }));
  const q = usage?.diskQuotaUsage;
  return {
    partial: true, layers, gridSets,
    quota: q ? { enabled: q.enabled, policy: q.globalExpirationPolicyName, globalQuotaBytes: quotaBytes(q.globalQuota),
      usedBytes: q.usedBytes, usedTiles: q.usedTiles, counted: true, lastCleanUp: q.lastCleanUp || null, recountPending: [] } : null,
  };
}

const units = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };
export function quotaBytes(q) {
  if (!q) return null;
  return Math.floor(Number(q.value) * (units[q.units] || 1));
}

const gridCache = new Map();

// gridSet returns a grid set's definition from its document:
// {name, epsg, extent:[minx,miny,maxx,maxy], resolutions, tileWidth, tileHeight, topLeft, metersPerUnit, xml}.
export async function gridSet(name) {
  if (gridCache.has(name)) return gridCache.get(name);
  const p = call('GET', `gridsets/${enc(name)}.xml`).then((r) => {
    const d = parseXML(r.text).documentElement;
    const nums = (parent, tag) => {
      const e = parent.getElementsByTagName(tag)[0];
      return e ? [...e.getElementsByTagName('double')].map((x) => Number(x.textContent)) : [];
    };
    const srs = d.getElementsByTagName('srs')[0];
    const g = {
      name, xml: r.text,
      epsg: srs ? Number(childText(srs, 'number')) : 0,
      extent: nums(d, 'extent'),
      resolutions: nums(d, 'resolutions'),
      scaleDenominators: nums(d, 'scaleDenominators'),
      tileWidth: Number(childText(d, 'tileWidth')) || 256,
      tileHeight: Number(childText(d, 'tileHeight')) || 256,
      topLeft: childText(d, 'alignTopLeft') === 'true',
      metersPerUnit: Number(childText(d, 'metersPerUnit')) || 1,
      pixelSize: Number(childText(d, 'pixelSize')) || 0.00028,
    };
    if (!g.resolutions.length && g.scaleDenominators.length) {
      g.resolutions = g.scaleDenominators.map((s) => (s * g.pixelSize) / g.metersPerUnit);
    }
    return g;
  });
  gridCache.set(name, p);
  p.catch(() => gridCache.delete(name));
  return p;
}
