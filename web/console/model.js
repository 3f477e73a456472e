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

// The tasks page's and the layers page's reckonings, kept apart from the
// DOM (web/test/model.test.js).

// readableReason shortens a failure reason: an upstream URL's query,
// every value of which the server replaced by REDACTED
// (SERVICE=REDACTED&BBOX=REDACTED&…), says nothing and is dropped, as is
// a run of the same text repeated; what failed and how is kept.
export function readableReason(reason) {
  let r = String(reason || '');
  // A query whose values are all redacted: keep the address, drop it.
  r = r.replace(/\?(?:[^\s=&?#]*=(?:REDACTED)?&?)+(#REDACTED)?(?=[\s:;,)\]]|$)/g, (q) => (/REDACTED/.test(q) ? '' : q));
  // Any other redacted pair left: K=REDACTED runs become one "…".
  r = r.replace(/(?:[A-Za-z_][\w.-]*=REDACTED[&;, ]*){2,}/g, '… ');
  return r.replace(/\s{2,}/g, ' ').trim();
}

// groupFailures folds failures ({id, job, layer, type, reason, at}) whose
// readable reasons are the same but for their numbers (which tiles, how
// many failures so far): [{reason, full, count, ids, layers, at}], most
// recent first, each with the text of its most recent failure.
export function groupFailures(failures) {
  const by = new Map();
  for (const f of failures) {
    const reason = readableReason(f.reason).replace(/^job \d+ aborted: /, '');
    const key = reason.replace(/\d+/g, '#');
    let g = by.get(key);
    if (!g) {
      g = { reason, full: f.reason, count: 0, ids: [], layers: [], at: f.at };
      by.set(key, g);
    }
    g.count++;
    g.ids.push(f.id);
    g.ids.sort((x, y) => x - y);
    if (!g.layers.includes(f.layer)) g.layers.push(f.layer);
    if (f.at > g.at) Object.assign(g, { at: f.at, reason, full: f.reason });
  }
  return [...by.values()].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
}

// Rate keeps the last samples of a count ([time ms, count]) over window
// ms and tells the rate per second between the first and the last.
export class Rate {
  constructor(window = 10000) { this.window = window; this.samples = []; }
  add(t, n) {
    const s = this.samples;
    if (s.length && n < s[s.length - 1][1]) s.length = 0; // counted again from less
    s.push([t, n]);
    while (s.length > 2 && t - s[0][0] > this.window) s.shift();
  }
  perSecond() {
    const s = this.samples;
    if (s.length < 2) return NaN;
    const [t0, n0] = s[0];
    const [t1, n1] = s[s.length - 1];
    return t1 > t0 ? ((n1 - n0) * 1000) / (t1 - t0) : NaN;
  }
}

// thumbBox places bounds within extent on a w×h picture (y down):
// {x, y, width, height}, at least one unit wide and high so that a small
// area still shows.
export function thumbBox(bounds, extent, w, h) {
  const [ex0, ey0, ex1, ey1] = extent;
  const sx = w / (ex1 - ex0);
  const sy = h / (ey1 - ey0);
  const clamp = (v, lo, hi) => Math.min(Math.max(v, lo), hi);
  const x0 = clamp((bounds[0] - ex0) * sx, 0, w);
  const x1 = clamp((bounds[2] - ex0) * sx, 0, w);
  const y0 = clamp((ey1 - bounds[3]) * sy, 0, h);
  const y1 = clamp((ey1 - bounds[1]) * sy, 0, h);
  const round = (v) => Math.round(v * 10) / 10;
  return { x: round(Math.min(x0, w - 1)), y: round(Math.min(y0, h - 1)), width: round(Math.max(x1 - x0, 1)), height: round(Math.max(y1 - y0, 1)) };
}

// seedLink is the address of the seed form prefilled with a request:
// #seed?layer=…&gridSet=…&format=…&type=seed|reseed|truncate&zoomStart=…&zoomStop=…
// (and bounds=minx,miny,maxx,maxy when given); fields not given are left out.
export function seedLink(r) {
  const q = new URLSearchParams();
  for (const k of ['layer', 'gridSet', 'format', 'type', 'zoomStart', 'zoomStop']) {
    if (r[k] !== undefined && r[k] !== null && r[k] !== '') q.set(k, String(k === 'type' ? String(r[k]).toLowerCase() : r[k]));
  }
  if (r.bounds) q.set('bounds', r.bounds.map((v) => +Number(v).toPrecision(10)).join(','));
  return '#seed?' + q.toString();
}

// The units of a quota, as the server names them.
export const QUOTA_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
const unitBytes = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };

// quotaInUnits shows bytes in the largest unit that keeps the value at
// least 1: {value: '1.5', units: 'GiB'} (at most three decimals).
export function quotaInUnits(n) {
  let units = 'B';
  for (const u of QUOTA_UNITS) if (n >= unitBytes[u]) units = u;
  return { value: String(+(n / unitBytes[units]).toFixed(3)), units };
}

// parseQuota reads a quota typed in a form: a positive number (a decimal
// point or comma) in units; an error message names what is wrong.
export function parseQuota(value, units) {
  const v = String(value).trim().replace(',', '.');
  if (!/^\d+(\.\d+)?$/.test(v)) return { error: `"${value}" is not a positive number` };
  if (!unitBytes[units]) return { error: `unknown unit ${units}` };
  return { value: v, units, bytes: Math.floor(Number(v) * unitBytes[units]) };
}

// requestOrder sorts the requests of the tasks page: running, then
// pending, then finished most recent first (by job id within each).
export function requestOrder(a, b) {
  const rank = (r) => (r.status === 'RUNNING' ? 0 : r.status === 'PENDING' ? 1 : 2);
  return rank(a) - rank(b) || b.job - a.job;
}

// levelsText words a request's levels: "z3" or "z0–8".
export function levelsText(a, b) {
  if (a === undefined || a === null) return '–';
  return a === b ? `z${a}` : `z${a}–${b}`;
}
