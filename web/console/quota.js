// The disk quota page: the configuration (PUT /rest/diskquota.json, the
// server's validation errors shown; each layer's quota a row of the form,
// a number and its unit), the usage of each layer against its quota, and
// the coverage map: a tile set's quota pages at one level (by default the
// deepest that holds any), coloured by bytes, tiles, hits or last read
// (the legend in kilobytes, megabytes, tiles), with the pages the clean-up
// would expire next outlined; drawn again as the layer's lanes write
// (live.js).
import Feature from 'ol/Feature.js';
import { fromExtent } from 'ol/geom/Polygon.js';
import { Style, Stroke, Fill } from 'ol/style.js';
import { call, getJSON, enc } from './api.js';
import { el, replace, field, select, setOptions, num, bytes } from './util.js';
import { gridSet, quotaBytes, QUOTA_UNITS, parseQuota, quotaInUnits } from './model.js';
import { GridMap } from './map.js';
import { watch } from './live.js';

let overview = null;
let refresh;
let cfg = {}; // form controls of the configuration
let quotaFields;
let usageBox;
let cov = {}; // coverage controls
let gmap;
export const quotaState = { pages: null };
window.consoleQuota = quotaState;

const COMMON_FORMATS = ['image/png', 'image/jpeg', 'image/png8', 'image/gif', 'image/webp'];

export function init(section, refreshOverview) {
  refresh = refreshOverview;
  cfg = {
    enabled: el('input', { type: 'checkbox', id: 'q-enabled' }),
    diskBlockSize: el('input', { type: 'number', min: 1 }),
    cacheCleanUpFrequency: el('input', { type: 'number', min: 1 }),
    cacheCleanUpUnits: select(['SECONDS', 'MINUTES', 'HOURS', 'DAYS']),
    maxConcurrentCleanUps: el('input', { type: 'number', min: 1 }),
    globalExpirationPolicyName: select(['LFU', 'LRU']),
    quotaValue: el('input', { type: 'text', inputMode: 'decimal' }),
    quotaUnits: select(['B', 'KiB', 'MiB', 'GiB', 'TiB']),
    layerQuotas: el('tbody', { id: 'layer-quota-rows' }),
    result: el('div', { id: 'quota-result', 'aria-live': 'polite' }),
  };
  // One fieldset holds every control: disabled for a role that may not
  // change the quota (a viewer reads it).
  quotaFields = el('fieldset', { id: 'quota-fields', class: 'plain', disabled: true });
  const form = el('form', { id: 'quota-form', novalidate: true, onsubmit: saveConfig }, quotaFields);
  quotaFields.append(el('legend', { class: 'sr-only', text: 'The disk quota\'s configuration' }),
    el('div', { class: 'radio' }, cfg.enabled, el('label', { htmlFor: 'q-enabled', text: 'Enforce the quota (clean up when over it)' })),
    el('div', { class: 'row' }, field('Global quota', cfg.quotaValue), field('Units', cfg.quotaUnits), field('Policy', cfg.globalExpirationPolicyName)),
    el('div', { class: 'row' }, field('Clean up every', cfg.cacheCleanUpFrequency), field('Units', cfg.cacheCleanUpUnits)),
    el('div', { class: 'row' }, field('Concurrent clean-ups', cfg.maxConcurrentCleanUps), field('Disk block size (bytes)', cfg.diskBlockSize)),
    el('fieldset', { id: 'layer-quotas' }, el('legend', { text: 'Layer quotas' }),
      el('p', { class: 'hint', text: 'A layer with a quota of its own is cleaned up against it, by its own policy; the others share the global quota.' }),
      el('table', {}, el('caption', { class: 'sr-only', text: 'Layer quotas' }),
        el('thead', {}, el('tr', {}, ['Layer', 'Quota', 'Unit', 'Policy', 'Actions'].map((h) => el('th', { scope: 'col', text: h })))), cfg.layerQuotas),
      el('p', { 'data-needs': 'quota' }, el('button', { type: 'button', id: 'layer-quota-add', text: 'Add a layer quota', onclick: () => addLayerQuota() }))),
    el('p', { 'data-needs': 'quota' }, el('button', { type: 'submit', id: 'quota-save', text: 'Save the configuration' })));
  form.append(cfg.result);
  const role = () => { quotaFields.disabled = !(document.body.dataset.may || '').split(' ').includes('quota'); };
  document.addEventListener('console-role', role);
  role();
  usageBox = el('div', { id: 'usage' });
  cov = {
    layer: select([]), gridSet: select([]), format: select([]),
    zoom: el('input', { type: 'number', min: 0, id: 'coverage-zoom', placeholder: 'the deepest stored' }),
    colour: select([['bytes', 'bytes'], ['tiles', 'tiles'], ['hits', 'hits'], ['lastAccess', 'last read']]),
    next: el('input', { type: 'number', min: 0, value: 10 }),
    show: el('button', { type: 'submit', id: 'coverage-show', text: 'Show the pages' }),
    info: el('div', { id: 'coverage-info', 'aria-live': 'polite' }),
    table: el('div', { id: 'coverage-table' }),
  };
  const mapDiv = el('div', { id: 'coverage-map', class: 'map' });
  const covForm = el('form', { id: 'coverage-form', onsubmit: (e) => { e.preventDefault(); showPages(); } },
    el('div', { class: 'row' }, field('Layer', cov.layer), field('Grid set', cov.gridSet), field('Format', cov.format)),
    el('div', { class: 'row' }, field('Level', cov.zoom, 'Empty: the deepest level holding tiles'), field('Colour by', cov.colour), field('Mark the pages expiring next (count)', cov.next)),
    el('p', {}, cov.show));
  replace(section,
    el('h2', { id: 'h-quota', text: 'Disk quota' }),
    el('h3', { text: 'Usage' }), usageBox,
    el('h3', { text: 'Configuration' }), form,
    el('h3', { text: 'Coverage map' }),
    el('p', { class: 'hint', text: 'The quota counts tiles in pages of 64×64 tiles; each page of the level is drawn where it lies.' }),
    covForm, mapDiv, cov.info, cov.table);
  gmap = new GridMap(mapDiv, 'Coverage map of the quota pages');
  quotaState.source = gmap.source;
  cov.layer.addEventListener('change', covLayerChanged);
  for (const c of [cov.gridSet, cov.format]) c.addEventListener('change', autoZoom);
  cov.zoom.addEventListener('input', () => { delete cov.zoom.dataset.auto; });
  cov.colour.addEventListener('change', () => quotaState.pages && drawPages(quotaState.pages));
  cov.next.addEventListener('change', () => quotaState.pages && drawPages(quotaState.pages));
}

export function setOverview(o) {
  overview = o;
  setOptions(cov.layer, o.layers.map((l) => l.name));
  covLayerChanged();
}

let shown = false;
let visible = false;
export function show(on) {
  visible = on;
  if (!on) return;
  if (!shown) { shown = true; loadConfig(); }
  loadUsage();
  if (gmap) gmap.attach();
}

function covLayerChanged() {
  const l = overview?.layers.find((x) => x.name === cov.layer.value);
  if (!l) return;
  setOptions(cov.gridSet, l.gridSets.length ? l.gridSets : overview.gridSets.map((g) => g.name));
  setOptions(cov.format, l.formats.length ? l.formats : COMMON_FORMATS);
  autoZoom();
}

// autoZoom empties a level the page chose (the deepest of another tile
// set): the next map opens at the deepest of this one.
function autoZoom() {
  if (cov.zoom.dataset.auto) { cov.zoom.value = ''; delete cov.zoom.dataset.auto; }
}

// deepestLevel finds the deepest level of a tile set holding quota pages
// (-1: none), asking levels from the deepest up, a few at once, one page
// each.
export async function deepestLevel(levels, has, batch = 6) {
  for (let top = levels - 1; top >= 0; top -= batch) {
    const zs = [];
    for (let z = top; z > top - batch && z >= 0; z--) zs.push(z);
    const found = await Promise.all(zs.map(has));
    const i = found.indexOf(true);
    if (i >= 0) return zs[i];
  }
  return -1;
}

async function loadConfig() {
  try {
    const c = (await getJSON('diskquota.json')).cacheQuotaConfiguration;
    cfg.enabled.checked = !!c.enabled;
    for (const k of ['diskBlockSize', 'cacheCleanUpFrequency', 'maxConcurrentCleanUps']) cfg[k].value = c[k];
    cfg.cacheCleanUpUnits.value = c.cacheCleanUpUnits;
    cfg.globalExpirationPolicyName.value = c.globalExpirationPolicyName;
    cfg.quotaValue.value = c.globalQuota?.value ?? '';
    cfg.quotaUnits.value = c.globalQuota?.units ?? 'MiB';
    replace(cfg.layerQuotas);
    for (const lq of c.layerQuotas || []) addLayerQuota(lq);
  } catch (e) {
    replace(cfg.result, el('p', { class: 'error', text: 'Configuration: ' + e.message }));
  }
}

async function saveConfig(ev) {
  ev.preventDefault();
  const layerQuotas = [];
  for (const tr of cfg.layerQuotas.children) {
    const [layer, value, units, policy] = ['layer', 'value', 'units', 'policy'].map((k) => tr.querySelector(`[data-q=${k}]`).value);
    const q = parseQuota(value, units);
    if (q.error) {
      replace(cfg.result, el('p', { class: 'error', role: 'alert', text: `Not saved: the quota of ${layer || 'a layer'}: ${q.error}.` }));
      tr.querySelector('[data-q=value]').focus();
      return;
    }
    layerQuotas.push({ layer, expirationPolicyName: policy, quota: { value: q.value, units: q.units } });
  }
  const intOrText = (v) => (/^-?\d+$/.test(v.trim()) ? Number(v) : v);
  const body = { cacheQuotaConfiguration: {
    enabled: cfg.enabled.checked,
    diskBlockSize: intOrText(cfg.diskBlockSize.value),
    cacheCleanUpFrequency: intOrText(cfg.cacheCleanUpFrequency.value),
    cacheCleanUpUnits: cfg.cacheCleanUpUnits.value,
    maxConcurrentCleanUps: intOrText(cfg.maxConcurrentCleanUps.value),
    globalExpirationPolicyName: cfg.globalExpirationPolicyName.value,
    globalQuota: { value: cfg.quotaValue.value.trim(), units: cfg.quotaUnits.value },
    layerQuotas,
  } };
  try {
    await call('PUT', 'diskquota.json', { body: JSON.stringify(body), type: 'application/json' });
    replace(cfg.result, el('p', { text: 'Saved.' }));
    await loadConfig();
    loadUsage();
    refresh();
  } catch (e) {
    replace(cfg.result, el('p', { class: 'error', role: 'alert', text: 'Not saved: ' + e.message }));
  }
}

let lqUID = 0;

// addLayerQuota adds a row to the layer quotas: a layer (one of the
// overview's, or the one the configuration names), a number, its unit and
// a policy.
function addLayerQuota(lq) {
  const n = ++lqUID;
  const names = (overview?.layers || []).map((l) => l.name);
  if (lq?.layer && !names.includes(lq.layer)) names.push(lq.layer);
  const used = new Set([...cfg.layerQuotas.querySelectorAll('[data-q=layer]')].map((s) => s.value));
  const layer = select(names, lq?.layer ?? names.find((x) => !used.has(x)));
  // Shown in the largest unit that keeps a number of at least 1 (the
  // server may keep 1.5 GiB as 1536 MiB).
  const shownAs = lq?.quota ? quotaInUnits(quotaBytes(lq.quota)) : { value: '100', units: 'MiB' };
  const value = el('input', { type: 'text', inputMode: 'decimal', size: 8, value: shownAs.value });
  const units = select(QUOTA_UNITS, shownAs.units);
  const policy = select(['LFU', 'LRU'], lq?.expirationPolicyName ?? 'LFU');
  const controls = { layer, value, units, policy };
  for (const [k, c] of Object.entries(controls)) {
    c.dataset.q = k;
    c.id = `lq-${k}-${n}`;
  }
  const tr = el('tr', { class: 'layer-quota' },
    el('td', {}, el('label', { htmlFor: layer.id, class: 'sr-only', text: `Layer of quota ${n}` }), layer),
    el('td', {}, el('label', { htmlFor: value.id, class: 'sr-only', text: `Quota ${n}` }), value),
    el('td', {}, el('label', { htmlFor: units.id, class: 'sr-only', text: `Unit of quota ${n}` }), units),
    el('td', {}, el('label', { htmlFor: policy.id, class: 'sr-only', text: `Policy of quota ${n}` }), policy),
    el('td', { 'data-needs': 'quota' }, el('button', { type: 'button', class: 'small', text: 'Remove', 'aria-label': `Remove quota ${n}`, onclick: () => tr.remove() })));
  const sync = () => { tr.dataset.layer = layer.value; };
  layer.addEventListener('change', sync);
  sync();
  cfg.layerQuotas.append(tr);
  return tr;
}

function bar(used, of, label) {
  const frac = of > 0 ? Math.min(used / of, 1) : 0;
  const inner = el('span');
  inner.style.width = (frac * 100).toFixed(2) + '%';
  return el('span', { class: 'bar' + (of > 0 && used > of ? ' over' : ''), role: 'img', 'aria-label': label }, inner);
}

async function loadUsage() {
  let u;
  try {
    u = await getJSON('diskquota/usage.json', { ok: [404] });
  } catch (e) {
    replace(usageBox, el('p', { class: 'error', text: e.message }));
    return;
  }
  if (!u) { replace(usageBox, el('p', { text: 'This server does not count disk usage.' })); return; }
  const q = u.diskQuotaUsage;
  const global = quotaBytes(q.globalQuota);
  const rows = (q.layers || []).map((l) => {
    const lq = quotaBytes(l.quota);
    const of = lq ?? global;
    const label = `${l.layer}: ${bytes(l.usedBytes)} of ${bytes(of)} (${lq ? 'its own quota' : 'the global quota'})`;
    return el('tr', { class: 'usage-row', dataset: { layer: l.layer, bytes: l.usedBytes, tiles: l.usedTiles, quota: of } },
      el('th', { scope: 'row', text: l.layer }),
      el('td', {}, bar(l.usedBytes, of, label)),
      el('td', { class: 'n', text: `${bytes(l.usedBytes)} of ${bytes(of)}` }),
      el('td', { class: 'n', text: num(l.usedTiles) }),
      el('td', { text: (l.expirationPolicyName || q.globalExpirationPolicyName) + (l.recountPending ? ', recount pending' : '') }));
  });
  replace(usageBox,
    el('p', { id: 'usage-global', dataset: { bytes: q.usedBytes, quota: global } },
      bar(q.usedBytes, global, `All layers: ${bytes(q.usedBytes)} of ${bytes(global)}`), ' ',
      `All layers: ${bytes(q.usedBytes)} (${num(q.usedTiles)} tiles) of ${bytes(global)}; quota ${q.enabled ? 'enforced' : 'not enforced'}, policy ${q.globalExpirationPolicyName}` +
      `; last clean-up ${q.lastCleanUp ? new Date(q.lastCleanUp).toLocaleString() : 'never'}${q.recountPending ? '; recount pending' : ''}`),
    el('table', { id: 'usage-table' },
      el('caption', { class: 'sr-only', text: 'Usage per layer' }),
      el('thead', {}, el('tr', {}, ['Layer', 'Usage', 'Bytes', 'Tiles', 'Policy'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, rows)));
}

let unwatch = null;
let shownKey = '';

// showPages draws the pages of the tile set chosen at the level chosen
// (the deepest stored when none is), and follows the layer: its pages are
// read again as its lanes write (refit only when the tile set changed).
async function showPages(again) {
  const layer = cov.layer.value;
  const base = { gridSet: cov.gridSet.value, format: cov.format.value };
  const url = (zoom, limit) => `diskquota/pages/${enc(layer)}.json?${new URLSearchParams({ ...base, zoom: String(zoom), limit: String(limit) })}`;
  if (!again) replace(cov.info, el('p', { text: 'Loading…' }));
  try {
    const g = await gridSet(cov.gridSet.value);
    if (cov.zoom.value === '') {
      // Levels up to the layer's last in the grid set (the overview's subsets).
      const sub = overview?.layers.find((x) => x.name === layer)?.subsets?.find((x) => x.gridSet === g.name);
      const levels = sub ? sub.zoomStop + 1 : g.resolutions.length;
      const z = await deepestLevel(levels, (zz) => getJSON(url(zz, 1)).then((p) => p.pages.length > 0));
      cov.zoom.value = String(Math.max(z, 0));
      cov.zoom.dataset.auto = '1';
    }
    const p = await getJSON(url(cov.zoom.value, 10000));
    gmap.attach();
    gmap.setGridSet(g);
    quotaState.pages = p;
    drawPages(p);
    const key = [layer, base.gridSet, base.format, p.zoom].join('|');
    if (p.pages.length && (!again || key !== shownKey)) gmap.fit(gmap.source.getExtent());
    shownKey = key;
    if (unwatch) unwatch();
    unwatch = watch(layer, () => { if (visible) showPages(true); });
  } catch (e) {
    replace(cov.info, el('p', { class: 'error', text: e.message }));
  }
}

function ramp(t) {
  // light yellow → dark red
  const a = [255, 237, 160];
  const b = [189, 0, 38];
  return a.map((v, i) => Math.round(v + (b[i] - v) * t));
}

// legendLabel writes a value of the colour's measure in human units.
export function legendLabel(key) {
  switch (key) {
    case 'lastAccess': return (v) => (isFinite(v) ? new Date(v).toLocaleString() : '–');
    case 'bytes': return (v) => bytes(v);
    case 'tiles': return (v) => `${num(v)} tile${v === 1 ? '' : 's'}`;
    case 'hits': return (v) => `${num(v)} hit${v === 1 ? '' : 's'}`;
    default: return num;
  }
}

function drawPages(p) {
  const key = cov.colour.value;
  const nextN = Number(cov.next.value) || 0;
  const value = (pg) => (key === 'lastAccess' ? (pg.lastAccess ? Date.parse(pg.lastAccess) : null) : pg[key]);
  const vals = p.pages.map(value).filter((v) => v !== null);
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  gmap.source.clear();
  const feats = p.pages.map((pg) => {
    const v = value(pg);
    const c = v === null ? [200, 200, 200] : ramp(hi > lo ? (v - lo) / (hi - lo) : 1);
    const marked = pg.rank > 0 && pg.rank <= nextN;
    const f = new Feature({ geometry: fromExtent(pg.bounds), page: pg, marked });
    f.setStyle(new Style({ fill: new Fill({ color: [...c, 0.7] }), stroke: new Stroke({ color: marked ? '#0000ff' : '#555', width: marked ? 3 : 1 }) }));
    return f;
  });
  gmap.source.addFeatures(feats);
  const marked = p.pages.filter((pg) => pg.rank > 0 && pg.rank <= nextN).length;
  const lab = legendLabel(key);
  replace(cov.info,
    el('p', { dataset: { pages: p.pages.length, marked } },
      `${p.pageCount ?? `over ${p.pages.length}`} pages at level ${p.zoom} of ${p.layer} ${p.gridSet} ${p.format} (${p.layerPageCount ?? `over ${p.rankedPages}`} in the layer), policy ${p.policy} (${p.quotaScope} quota, ${p.enabled ? 'enforced' : 'not enforced'})` +
      `${p.truncated ? `; ${p.pages.length} shown` : ''}; ${marked} of them among the ${nextN} pages the clean-up would expire next (thick blue outline).`),
    el('p', { class: 'legend', id: 'coverage-legend' }, `Colour by ${cov.colour.selectedOptions[0].textContent}: `,
      el('span', { class: 'swatch sw-lo' }), ` ${vals.length ? lab(lo) : '–'} `, el('span', { class: 'swatch sw-hi' }), ` ${vals.length ? lab(hi) : '–'}`,
      key === 'lastAccess' ? [' ', el('span', { class: 'swatch sw-none' }), ' never read'] : null));
  replace(cov.table, el('details', {}, el('summary', { text: 'The pages as a table' }),
    el('table', { id: 'pages-table' },
      el('thead', {}, el('tr', {}, ['Rank', 'Page', 'Tiles', 'Bytes', 'Hits', 'Last read'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, p.pages.slice(0, 500).map((pg) => el('tr', {},
        el('td', { class: 'n', text: pg.rank ? String(pg.rank) : `> ${p.rankedPages}` }), el('td', { text: `${pg.x},${pg.y} (tiles ${pg.tileRange.join(', ')})` }),
        el('td', { class: 'n', text: num(pg.tiles) }), el('td', { class: 'n', text: bytes(pg.bytes) }), el('td', { class: 'n', text: num(pg.hits) }),
        el('td', { text: pg.lastAccess ? new Date(pg.lastAccess).toLocaleString() : 'never' })))))));
}
