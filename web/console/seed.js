// The seed page: a seed, reseed or truncate request built from a form and
// an area drawn on the map (a box or a polygon, in the grid set's own
// coordinates), uploaded (GeoJSON, WKT or KML, read here and drawn in the
// grid set's CRS) or given as a tile list; the estimate (POST
// /rest/estimate) follows the form as it changes. The area is kept,
// carried to the new CRS, when the grid set changes; a request whose area
// leaves the grid set or whose levels exceed the layer's is refused here,
// with the reason. Under the map, the stored tiles of the layer (or of
// another as background) are drawn again as lanes write them
// (live.js), and the estimate is asked again so that it learns the
// layer's measured rate and tile size.
import Draw, { createBox } from 'ol/interaction/Draw.js';
import GeoJSON from 'ol/format/GeoJSON.js';
import Feature from 'ol/Feature.js';
import { fromExtent } from 'ol/geom/Polygon.js';
import { call, enc } from './api.js';
import { el, replace, field, select, setOptions, num, debounce, say, parseXML, childText } from './util.js';
import { gridSet } from './model.js';
import { GridMap, projectionOf, baseMapURL } from './map.js';
import { remember } from './tasks.js';
import { parseArea, asFeatureCollection, reproject, extentOf, checkArea, parsePlace, transformer } from './geo.js';
import { watch, kick, setOverview as liveOverview } from './live.js';
import { backend, estimateRows } from './estimate.js';

let f; // the form's controls
let gmap;
let draw = null;
let overview = null;
let upload = null; // {text, name, kind, geometries, srid} of the geometry file (see geo.parseArea), or {name, error}
let tileList = null; // {text, name} of the tile list
let estimateSeq = 0;
let built = false;
export const seedState = { lastEstimateRequest: null, lastEstimate: null };
window.consoleSeed = seedState;

export function init(section) {
  f = {
    layer: select([]), gridSet: select([]), format: select([]),
    params: el('fieldset', { id: 'param-fields', class: 'sub', hidden: true }),
    base: el('input', { type: 'checkbox', checked: true, id: 'base-tiles' }),
    bgLayer: Object.assign(select([]), { id: 'bg-layer' }),
    baseMap: el('input', { type: 'checkbox', id: 'base-map' }),
    place: el('input', { type: 'text', id: 'goto-place', spellcheck: false, autocomplete: 'off', placeholder: 'x, y  or  minx, miny, maxx, maxy' }),
    placeCRS: Object.assign(select([]), { id: 'goto-crs' }),
    gotoBtn: el('button', { type: 'button', id: 'goto', text: 'Go' }),
    extentBtn: el('button', { type: 'button', id: 'goto-layer', text: 'The layer\'s extent' }),
    graticule: el('input', { type: 'checkbox', id: 'graticule' }),
    zoomStart: el('input', { type: 'number', min: 0, value: 0, required: true }),
    zoomStop: el('input', { type: 'number', min: 0, value: 3, required: true }),
    type: select([['seed', 'seed'], ['reseed', 'reseed'], ['truncate', 'truncate'],
      ['export:pmtiles', 'export to PMTiles'], ['export:mbtiles', 'export to MBTiles'], ['export:gpkg', 'export to GeoPackage'],
      ['publish:pmtiles', 'publish as the tile set\'s PMTiles']]),
    threads: el('input', { type: 'number', min: 1, max: 128, value: 2 }),
    bounds: ['minx', 'miny', 'maxx', 'maxy'].map(() => el('input', { type: 'number', step: 'any' })),
    geomFile: el('input', { type: 'file', accept: '.json,.geojson,.wkt,.txt,.kml' }),
    buffer: el('input', { type: 'number', min: 0, step: 'any' }),
    inGridCRS: el('input', { type: 'checkbox' }),
    listFile: el('input', { type: 'file', accept: '.list,.txt,.gz' }),
    xyz: el('input', { type: 'checkbox', checked: true }),
    parentsTo: el('input', { type: 'number', min: 0 }),
    childrenTo: el('input', { type: 'number', min: 0 }),
    submit: el('button', { type: 'submit', id: 'seed-submit', text: 'Submit', 'data-needs': 'seed' }),
  };
  const areaKinds = [['whole', 'The layer\'s whole coverage'], ['box', 'A box (draw it, or type its bounds)'], ['polygon', 'A polygon (draw it)'],
    ['file', 'A geometry file (GeoJSON, WKT or KML)'], ['list', 'A tile list (z/x/y lines)']];
  const radios = areaKinds.map(([v, t], i) => el('div', { class: 'radio' },
    el('input', { type: 'radio', name: 'area', value: v, id: 'area-' + v, checked: i === 0, onchange: areaChanged }),
    el('label', { htmlFor: 'area-' + v, text: t })));
  const mapDiv = el('div', { id: 'seed-map', class: 'map' });
  const cursor = el('p', { id: 'seed-cursor', class: 'hint map-cursor' });
  const boundsBox = el('fieldset', { id: 'area-box-fields', class: 'sub' }, el('legend', { text: 'Bounds, in the grid set\'s coordinates' }),
    f.bounds.map((b, i) => field(['min x', 'min y', 'max x', 'max y'][i], b)));
  const fileBox = el('fieldset', { id: 'area-file-fields', class: 'sub', hidden: true }, el('legend', { text: 'Geometry file' }),
    field('GeoJSON, WKT or KML file', f.geomFile), field('Buffer (metres, for lines and points)', f.buffer),
    el('div', { class: 'radio' }, f.inGridCRS, el('label', { htmlFor: (f.inGridCRS.id = 'in-grid-crs'), text: 'Coordinates are in the grid set\'s CRS (else longitude, latitude)' })));
  const listBox = el('fieldset', { id: 'area-list-fields', class: 'sub', hidden: true }, el('legend', { text: 'Tile list' }),
    field('Tile list file (z/x/y per line)', f.listFile),
    el('div', { class: 'radio' }, f.xyz, el('label', { htmlFor: (f.xyz.id = 'list-xyz'), text: 'Rows count from the top (as osm2pgsql and imposm write them)' })),
    field('Parents up to level', f.parentsTo), field('Children down to level', f.childrenTo));
  const form = el('form', { id: 'seed-form', novalidate: true, onsubmit: submit },
    el('div', { class: 'cols' },
      el('div', { class: 'col' },
        field('Layer', f.layer), field('Grid set', f.gridSet), field('Format', f.format),
        f.params,
        el('div', { class: 'row' }, field('From level', f.zoomStart), field('To level', f.zoomStop)),
        el('div', { class: 'row' }, field('Type', f.type), field('Threads', f.threads)),
        el('fieldset', { id: 'area-kind' }, el('legend', { text: 'Area' }), radios),
        boundsBox, fileBox, listBox),
      el('div', { class: 'col wide' },
        el('div', { class: 'row goto' }, field('Go to', f.place, 'A coordinate or a bounding box'), field('In', f.placeCRS),
          el('p', { class: 'buttons' }, f.gotoBtn, ' ', f.extentBtn)),
        mapDiv, cursor,
        el('div', { class: 'radio' }, f.graticule, el('label', { htmlFor: 'graticule', text: 'Show a graticule (meridians and parallels)' })),
        el('div', { class: 'radio' }, f.base, el('label', { htmlFor: 'base-tiles', text: 'Show the tiles already stored (read from the cache only: nothing is rendered), of' })),
        field('Background layer', f.bgLayer),
        baseMapURL() ? el('div', { class: 'radio' }, f.baseMap, el('label', { htmlFor: 'base-map', text: 'Show the base map (the operator\'s)' })) : null,
        el('p', { class: 'hint', id: 'draw-hint', text: 'Whole coverage: nothing to draw.' }),
        el('section', { id: 'estimate', 'aria-labelledby': 'h-estimate', 'aria-live': 'polite' }, el('h3', { id: 'h-estimate', text: 'Estimate' }), el('p', { text: '…' })),
        el('p', {}, f.submit))));
  replace(section, el('h2', { id: 'h-seed', text: 'Seed on a map' }), form);
  gmap = new GridMap(mapDiv, 'Map of the grid set: draw the area to seed here', cursor);
  seedState.map = gmap.map;
  seedState.gridMap = gmap; // read by the tests
  gmap.source.on('addfeature', () => later());
  f.layer.addEventListener('change', layerChanged);
  f.format.addEventListener('change', baseChanged);
  f.gridSet.addEventListener('change', gridChanged);
  f.base.addEventListener('change', baseChanged);
  f.bgLayer.addEventListener('change', () => { baseChanged(); follow(); });
  f.baseMap.addEventListener('change', () => gmap.setBaseMap(f.baseMap.checked));
  f.gotoBtn.addEventListener('click', goTo);
  f.place.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); goTo(); } });
  f.extentBtn.addEventListener('click', goToLayer);
  f.graticule.addEventListener('change', () => gmap.setGraticule(f.graticule.checked));
  for (const c of [f.format, f.zoomStart, f.zoomStop, f.type, f.threads, ...f.bounds, f.buffer, f.inGridCRS, f.xyz, f.parentsTo, f.childrenTo]) {
    c.addEventListener('input', later);
    c.addEventListener('change', later);
  }
  for (const b of f.bounds) b.addEventListener('change', boundsTyped);
  f.geomFile.addEventListener('change', async () => { upload = readArea(await readFile(f.geomFile)); showUpload(); later(); });
  f.inGridCRS.addEventListener('change', showUpload);
  f.listFile.addEventListener('change', async () => { tileList = await readFile(f.listFile, true); later(); });
  built = true;
}

// setOverview gives the page the layers and grid sets to offer.
export function setOverview(o) {
  overview = o;
  if (!built) return;
  setOptions(f.layer, o.layers.map((l) => l.name));
  setOptions(f.bgLayer, [['', 'the layer being seeded'], ...o.layers.map((l) => [l.name, l.name])]);
  const changed = layerChanged();
  liveOverview(o);
  if (pending) { const q = pending; pending = null; changed?.then(() => prefill(q)); }
}

export function show(on) {
  if (!on || !gmap) return;
  const first = !gmap.map.getTarget();
  gmap.attach();
  if (first && gmap.grid) gmap.map.getView().fit(gmap.grid.extent, { size: gmap.map.getSize() });
  const q = prefillQuery(location.hash);
  if (!q) return;
  // Asked once: the address goes back to #seed, so that following the
  // same link again fills the form again.
  history.replaceState(null, '', location.pathname + location.search + '#seed');
  if (overview && built) prefill(q); else pending = q;
}

// The seed form prefilled from its address (model.seedLink):
// #seed?layer=…&gridSet=…&format=…&type=…&zoomStart=…&zoomStop=…&bounds=….
let pending = null;
export function prefillQuery(hash) {
  const i = hash.indexOf('?');
  if (!/^#seed(\?|$)/.test(hash) || i < 0) return null;
  return new URLSearchParams(hash.slice(i + 1));
}

async function prefill(q) {
  const offered = (sel, v) => [...sel.options].some((o) => o.value === v);
  const refused = [];
  const layer = q.get('layer');
  if (layer !== null) {
    if (!offered(f.layer, layer)) {
      say(`The seed form was asked for layer ${layer}, which this account is not offered.`, true);
      return;
    }
    if (f.layer.value !== layer) { f.layer.value = layer; await layerChanged(); }
  }
  const g = q.get('gridSet');
  if (g !== null && g !== f.gridSet.value) {
    if (offered(f.gridSet, g)) { f.gridSet.value = g; await gridChanged(); } else refused.push(`grid set ${g}`);
  }
  for (const [k, sel] of [['format', f.format], ['type', f.type]]) {
    const v = q.get(k);
    if (v === null) continue;
    if (offered(sel, v)) sel.value = v; else refused.push(`${k} ${v}`);
  }
  for (const k of ['zoomStart', 'zoomStop']) {
    const v = q.get(k);
    if (v !== null && /^\d+$/.test(v)) f[k].value = v;
  }
  const b = (q.get('bounds') || '').split(',').map(Number);
  if (b.length === 4 && b.every(isFinite)) {
    document.querySelector('input[name=area][value=box]').checked = true;
    areaChanged();
    b.forEach((v, i) => { f.bounds[i].value = v; });
    boundsTyped();
    if (gmap.map.getTarget()) gmap.map.getView().fit(b, { size: gmap.map.getSize(), padding: [20, 20, 20, 20] });
  }
  if (refused.length) say(`The seed form was filled, but for ${refused.join(', ')}: not offered for ${f.layer.value}.`, true);
  later();
}

function layerInfo() { return overview?.layers.find((l) => l.name === f.layer.value); }

function layerChanged() {
  const l = layerInfo();
  if (!l) return;
  paramFields(l);
  const grids = l.gridSets.length ? l.gridSets : overview.gridSets.map((g) => g.name);
  setOptions(f.gridSet, grids);
  setOptions(f.format, [['', 'the layer\'s first format'], ...l.formats.map((x) => [x, x])]);
  const changed = gridChanged();
  follow();
  return changed;
}

// Layers' grid subsets where the overview does not list them (a server
// without them), from the layers' documents (GET /rest/layers/{name}.xml):
// name → Promise of {gridSet → {extent (or null: the grid set's), zoomStart, zoomStop (or null)}}.
const details = new Map();
function layerDetail(name) {
  if (overview?.layers.find((l) => l.name === name)?.subsets) return Promise.resolve({});
  if (details.has(name)) return details.get(name);
  const p = call('GET', `layers/${enc(name)}.xml`, { ok: [404, 409] }).then((r) => {
    const out = {};
    if (r.status !== 200) return out;
    for (const s of parseXML(r.text).getElementsByTagName('gridSubset')) {
      const ext = s.getElementsByTagName('extent')[0];
      const nums = ext ? [...ext.getElementsByTagName('double')].map((x) => Number(x.textContent)) : [];
      const int = (tag) => { const v = childText(s, tag); return v === '' || v === null || v === undefined ? null : Number(v); };
      out[childText(s, 'gridSetName')] = { extent: nums.length === 4 ? nums : null, zoomStart: int('zoomStart'), zoomStop: int('zoomStop') };
    }
    return out;
  });
  details.set(name, p);
  p.catch(() => details.delete(name));
  return p;
}
// subsetOf is the layer's subset of grid set g: {extent, levels: {min,
// max}}, from the overview, else from its document once read (detailNow:
// the form's checks do not wait for it), else the whole grid set.
const detailNow = {};
function subsetOf(layer, g) {
  const d = overview?.layers.find((l) => l.name === layer)?.subsets?.find((x) => x.gridSet === g.name) || detailNow[layer]?.[g.name] || {};
  return {
    extent: d.extent || g.extent,
    levels: { min: d.zoomStart ?? 0, max: d.zoomStop ?? g.resolutions.length - 1 },
  };
}

async function gridChanged() {
  try {
    const g = await gridSet(f.gridSet.value);
    const layer = f.layer.value;
    detailNow[layer] = await layerDetail(layer).catch(() => ({}));
    const { levels } = subsetOf(layer, g);
    f.zoomStart.min = f.zoomStop.min = levels.min;
    f.zoomStart.max = f.zoomStop.max = levels.max;
    if (gmap.grid?.name === g.name) { later(); baseChanged(); return; }
    const old = gmap.grid;
    const kept = old ? keptArea() : null;
    gmap.setGridSet(g);
    gmap.setGraticule(f.graticule.checked);
    if (gmap.map.getTarget()) gmap.map.getView().fit(g.extent, { size: gmap.map.getSize() });
    placeOptions();
    if (old) carryArea(kept, old, g); else areaChanged();
    seedState.gridSet = g.name;
    baseChanged();
  } catch (e) {
    say('Grid set ' + f.gridSet.value + ': ' + e.message, true);
  }
}

// keptArea is the drawn area before a change of grid set: the typed box,
// or the drawn polygon (GeoJSON), in the old grid set's CRS.
function keptArea() {
  const a = area();
  if (a === 'box') return typedBounds();
  if (a === 'polygon') {
    const feat = gmap.source.getFeatures()[0];
    return feat ? new GeoJSON().writeGeometryObject(feat.getGeometry()) : null;
  }
  return null;
}

// carryArea draws the kept area again in grid set g's CRS (an uploaded
// file is read again in it), or says why it cannot.
function carryArea(kept, old, g) {
  const a = area();
  if (a === 'file') { showUpload(); later(); return; }
  if (!kept || (a !== 'box' && a !== 'polygon')) { later(); return; }
  const from = projectionOf(old);
  const to = projectionOf(g);
  if (a === 'box') {
    // The box's sides, densified, so that a parallel's curve is held.
    const t = reproject([densify(kept)], from, to);
    if (!t) { cannotCarry(old, g); return; }
    fillBounds(extentOf(t));
    boundsTyped();
  } else {
    const t = reproject([kept], from, to);
    if (!t) { cannotCarry(old, g); return; }
    gmap.source.clear();
    gmap.source.addFeature(new Feature(new GeoJSON().readGeometry(t[0])));
  }
  seedState.carried = (seedState.carried || 0) + 1;
  later();
}

// densify is the outline of box b with 16 points a side.
function densify([x0, y0, x1, y1]) {
  const pts = [];
  for (let i = 0; i < 16; i++) pts.push([x0 + ((x1 - x0) * i) / 16, y0]);
  for (let i = 0; i < 16; i++) pts.push([x1, y0 + ((y1 - y0) * i) / 16]);
  for (let i = 0; i < 16; i++) pts.push([x1 - ((x1 - x0) * i) / 16, y1]);
  for (let i = 0; i < 16; i++) pts.push([x0, y1 - ((y1 - y0) * i) / 16]);
  pts.push([x0, y0]);
  return { type: 'Polygon', coordinates: [pts] };
}

function cannotCarry(old, g) {
  gmap.source.clear();
  for (const b of f.bounds) b.value = '';
  say(`The area drawn in ${old.name} cannot be carried to ${g.name} (no transformation between their CRSs here): draw it again.`, true);
  later();
}

// placeOptions offers the CRSs "go to" reads: longitude and latitude
// where the grid set's CRS is reached from them, and the grid set's own.
function placeOptions() {
  const g = gmap.grid;
  const own = g.epsg ? 'EPSG:' + g.epsg : g.name;
  const opts = g.epsg === 4326 ? [['grid', 'longitude, latitude (EPSG:4326)']]
    : [...(gmap.lonLat ? [['lonlat', 'longitude, latitude']] : []), ['grid', own]];
  setOptions(f.placeCRS, opts);
}

// goTo shows the coordinate or box typed (in the CRS chosen).
function goTo() {
  const p = parsePlace(f.place.value);
  if (!p) { say('Go to: type x, y or minx, miny, maxx, maxy (numbers; the min before the max).', true); return; }
  const g = gmap.grid;
  const t = f.placeCRS.value === 'lonlat' ? transformer('EPSG:4326', projectionOf(g)) : (c) => c;
  const view = gmap.map.getView();
  if (p.point) {
    const c = t(p.point);
    if (c[0] < g.extent[0] || c[0] > g.extent[2] || c[1] < g.extent[1] || c[1] > g.extent[3]) {
      say(`Go to: ${f.place.value} is outside grid set ${g.name}.`, true);
      return;
    }
    view.setCenter(c);
    view.setZoom(Math.max(view.getZoom() || 0, Math.min(g.resolutions.length - 1, 8)));
  } else {
    const b = p.box;
    const e = f.placeCRS.value === 'lonlat' ? extentOf(reproject([densify(b)], 'EPSG:4326', projectionOf(g))) : b;
    gmap.fit(e);
  }
  say(`Shown: ${f.place.value}.`);
}

// goToLayer shows the layer's extent in the grid set.
async function goToLayer() {
  const layer = f.layer.value;
  detailNow[layer] = await layerDetail(layer).catch(() => ({}));
  const { extent } = subsetOf(layer, gmap.grid);
  gmap.fit(extent);
  say(`Shown: the extent of ${layer} in ${gmap.grid.name}.`);
}

// paramFields offers the layer's parameter filters: a choice among a
// list or numeric filter's values, free text for a regex filter (any
// value matching it), each empty for the filter's default.
let paramControls = [];
function paramFields(l) {
  const ps = l.parameters || [];
  paramControls = ps.map((p) => {
    const dflt = `default${p.default !== '' ? ' (' + p.default + ')' : ''}`;
    let c;
    let hint;
    if (p.kind === 'regex') {
      c = el('input', { type: 'text', placeholder: dflt, dataset: { param: p.key }, spellcheck: false, autocomplete: 'off' });
      hint = 'Any value matching ' + p.regex;
      let re = null;
      try { re = new RegExp('^(?:' + p.regex + ')$', 'u'); } catch { /* the server checks */ }
      c.addEventListener('input', () => {
        const bad = re && c.value !== '' && !re.test(c.value);
        c.setCustomValidity(bad ? 'Does not match ' + p.regex : '');
        if (bad) c.setAttribute('aria-invalid', 'true'); else c.removeAttribute('aria-invalid');
      });
    } else {
      c = select([['', dflt], ...(p.values || []).filter((v) => v !== p.default).map((v) => [v, v])]);
      c.dataset.param = p.key;
      if (p.kind !== 'list') hint = `A ${p.kind}: a value within ${p.threshold} of one of these is taken as it`;
    }
    c.addEventListener('change', () => { later(); baseChanged(); });
    c.addEventListener('input', later);
    return { key: p.key, control: c, fieldEl: field(p.key, c, hint) };
  });
  replace(f.params, el('legend', { text: 'Parameters' }), paramControls.map((x) => x.fieldEl));
  f.params.hidden = !ps.length;
}

// paramValues are the chosen parameters: [[KEY, value]], defaults left out.
function paramValues() {
  return paramControls.filter((x) => x.control.value !== '').map((x) => [x.key, x.control.value]);
}

const IMAGE = /^image\/(png|jpeg|gif|png8|png24)/;

// baseChanged shows the stored tiles of the chosen tile set under the
// map: the layer being seeded (its format and parameters as chosen), or
// the background layer (its first image format, default parameters) when
// it has the grid set.
function baseChanged() {
  if (!gmap?.grid) return;
  const l = layerInfo();
  if (!f.base.checked || !l) { gmap.setBase(null); return; }
  const bg = f.bgLayer.value && overview.layers.find((x) => x.name === f.bgLayer.value);
  if (bg && bg.name !== l.name) {
    const has = !bg.gridSets.length || bg.gridSets.includes(gmap.grid.name);
    const format = bg.formats.find((x) => IMAGE.test(x));
    if (!has || !format) {
      gmap.setBase(null);
      say(`${bg.name} has ${has ? 'no image format' : 'no tiles in ' + gmap.grid.name}: no background drawn.`, true);
      return;
    }
    gmap.setBase({ layer: bg.name, format, query: '' });
    return;
  }
  const q = paramValues().map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&');
  gmap.setBase({ layer: l.name, format: f.format.value || l.formats[0], query: q ? '?' + q : '' });
}

// follow watches the layers drawn (the one being seeded, the
// background): as their lanes write, the stored tiles are read again;
// the estimate is asked again every ESTIMATE_EVERY and when they end.
const ESTIMATE_EVERY = 10000;
let unwatch = [];
let lastLiveEstimate = 0;
function follow() {
  for (const u of unwatch) u();
  const names = [...new Set([f.layer.value, f.bgLayer.value].filter(Boolean))];
  unwatch = names.map((n) => watch(n, (ev) => {
    seedState.liveTicks = (seedState.liveTicks || 0) + 1;
    if (f.base.checked && gmap.baseArg?.layer === n) gmap.refreshBase();
    if (n !== f.layer.value) return;
    const now = Date.now();
    if (!ev.running || now - lastLiveEstimate > ESTIMATE_EVERY) { lastLiveEstimate = now; estimate(); }
  }));
}

function area() { return document.querySelector('input[name=area]:checked').value; }

function areaChanged() {
  const a = area();
  document.getElementById('area-box-fields').hidden = a !== 'box';
  document.getElementById('area-file-fields').hidden = a !== 'file';
  document.getElementById('area-list-fields').hidden = a !== 'list';
  if (draw) gmap.map.removeInteraction(draw);
  draw = null;
  gmap.source.clear();
  const hints = {
    whole: 'Whole coverage: nothing to draw.',
    box: 'Click on the map for one corner and again for the opposite one (dragging pans the map), or type the bounds.',
    polygon: 'Click on the map for each corner; click the first corner (or double-click) to close the polygon.',
    file: 'Choose a file; its outline is shown on the map.',
    list: 'Choose a tile list file.',
  };
  document.getElementById('draw-hint').textContent = hints[a];
  if (a === 'box' || a === 'polygon') {
    draw = a === 'box'
      ? new Draw({ source: gmap.source, type: 'Circle', geometryFunction: createBox() })
      : new Draw({ source: gmap.source, type: 'Polygon' });
    draw.on('drawstart', () => gmap.source.clear());
    draw.on('drawend', (e) => { if (a === 'box') fillBounds(e.feature.getGeometry().getExtent()); });
    gmap.map.addInteraction(draw);
    boundsTyped();
  }
  if (a === 'file') showUpload();
  later();
}

function fillBounds(ext) {
  const digits = gmap.grid.epsg === 4326 ? 6 : 2;
  f.bounds.forEach((b, i) => { b.value = Number(ext[i].toFixed(digits)); });
}

function typedBounds() {
  const v = f.bounds.map((b) => b.value === '' ? NaN : Number(b.value));
  return v.every(isFinite) ? v : null;
}

function boundsTyped() {
  const b = typedBounds();
  if (area() !== 'box' || !b || b[0] >= b[2] || b[1] >= b[3]) return;
  gmap.source.clear();
  gmap.source.addFeature(new Feature(fromExtent(b)));
}

async function readFile(input, binary) {
  const file = input.files[0];
  if (!file) return null;
  if (binary) return { name: file.name, blob: file, gzip: /\.gz$/.test(file.name) };
  return { name: file.name, text: await file.text() };
}

// readArea parses an uploaded file (geo.parseArea): {name, text, kind,
// geometries, srid}, or {name, error}.
function readArea(file) {
  if (!file) return null;
  try {
    return { name: file.name, text: file.text, ...parseArea(file.text, file.name) };
  } catch (e) {
    return { name: file.name, error: e.message };
  }
}

// uploadProjection is the projection of the uploaded area's coordinates:
// the grid set's when ticked so, the one the file names, else longitude
// and latitude.
function uploadProjection() {
  const g = gmap.grid;
  if (f.inGridCRS.checked) return projectionOf(g);
  if (upload.srid) return upload.srid === g.epsg ? projectionOf(g) : 'EPSG:' + upload.srid;
  return 'EPSG:4326';
}

// showUpload draws the uploaded area in the grid set's CRS.
function showUpload() {
  gmap.source.clear();
  seedState.upload = null;
  if (!upload || !gmap.grid) return;
  if (upload.error) { say(`${upload.name}: ${upload.error}`, true); return; }
  const geoms = reproject(upload.geometries, uploadProjection(), projectionOf(gmap.grid));
  if (!geoms) {
    say(`${upload.name}: its coordinates (${uploadProjection()}) cannot be drawn in ${gmap.grid.name} here; the server still reads it.`, true);
    return;
  }
  const fmt = new GeoJSON();
  gmap.source.addFeatures(geoms.map((g) => new Feature(fmt.readGeometry(g))));
  upload.shown = { grid: gmap.grid.name, extent: extentOf(geoms) };
  seedState.upload = { kind: upload.kind, geometries: upload.geometries.length, extent: upload.shown.extent };
  gmap.fit(upload.shown.extent);
}

function intOr(input) { return input.value === '' ? undefined : Number(input.value); }

// request returns the request the form describes:
// {json: {seedRequest}} or {list: {query, blob, gzip}}, or {error}.
export function request() {
  // An export ("export:pmtiles", …, or "publish:pmtiles", the tile set's
  // served archive) is estimated as the seed of its tiles.
  const [kind, archive] = /^(export|publish):/.test(f.type.value) ? f.type.value.split(':') : ['', ''];
  const r = { gridSetId: f.gridSet.value, zoomStart: intOr(f.zoomStart), zoomStop: intOr(f.zoomStop), type: archive ? 'seed' : f.type.value, threadCount: intOr(f.threads) };
  if (f.format.value) r.format = f.format.value;
  const params = paramValues().map((kv) => ({ string: kv }));
  if (params.length) r.parameters = { entry: params };
  const g = gmap.grid;
  if (!g) return { error: 'The grid set is loading.' };
  let extent = null; // the area's, in the grid set's CRS
  switch (area()) {
    case 'box': {
      const b = typedBounds();
      if (!b) return { error: 'Draw a box on the map or type its bounds.' };
      if (b[0] >= b[2] || b[1] >= b[3]) return { error: 'The box\'s min x must be below its max x, and min y below max y.' };
      r.bounds = { coords: { double: b } };
      extent = b;
      break;
    }
    case 'polygon': {
      const feat = gmap.source.getFeatures()[0];
      if (!feat) return { error: 'Draw a polygon on the map.' };
      r.geometry = { type: 'Polygon', coordinates: feat.getGeometry().getCoordinates() };
      if (g.epsg && g.epsg !== 4326) r.srs = { number: g.epsg };
      extent = feat.getGeometry().getExtent();
      break;
    }
    case 'file':
      if (!upload) return { error: 'Choose a geometry file.' };
      if (upload.error) return { error: `${upload.name}: ${upload.error}` };
      // KML is read here; the server reads it as the GeoJSON it became.
      r.geometry = upload.kind === 'kml' ? JSON.stringify(asFeatureCollection(upload.geometries)) : upload.text;
      if (f.inGridCRS.checked && g.epsg) r.srs = { number: g.epsg };
      if (f.buffer.value !== '') r.buffer = Number(f.buffer.value);
      if (upload.shown?.grid === g.name) extent = upload.shown.extent;
      break;
    case 'list': {
      if (archive) return { error: 'An export takes the layer\'s coverage, a box or a polygon, not a tile list.' };
      if (!tileList) return { error: 'Choose a tile list file.' };
      if (params.length) return { error: 'A tile list request seeds the default parameters only: set every parameter to its default.' };
      const refusal = checkArea({ extent: null, zoomStart: r.zoomStart, zoomStop: r.zoomStop, g, levels: subsetOf(f.layer.value, g).levels });
      if (refusal) return { error: refusal, refused: true };
      const q = new URLSearchParams({ type: r.type, gridSetId: r.gridSetId, xyz: String(f.xyz.checked) });
      if (r.format) q.set('format', r.format);
      if (r.threadCount) q.set('threadCount', r.threadCount);
      if (f.zoomStart.value !== '') q.set('zoomStart', f.zoomStart.value);
      if (f.zoomStop.value !== '') q.set('zoomStop', f.zoomStop.value);
      if (f.parentsTo.value !== '') q.set('parentsTo', f.parentsTo.value);
      if (f.childrenTo.value !== '') q.set('childrenTo', f.childrenTo.value);
      return { list: { query: q.toString(), blob: tileList.blob, gzip: tileList.gzip } };
    }
  }
  const refusal = checkArea({ extent, zoomStart: r.zoomStart, zoomStop: r.zoomStop, g, levels: subsetOf(f.layer.value, g).levels });
  if (refusal) return { error: refusal, refused: true };
  return { json: { seedRequest: r }, archive, publish: kind === 'publish' };
}

// exportRequest is the export request of the form's seed request r
// (an export reads what is stored, in one lane: no type, no threads).
function exportRequest(r, archive, publish) {
  const out = { ...r, archive };
  if (publish) out.publish = true;
  delete out.type;
  delete out.threadCount;
  return { exportRequest: out };
}

async function send(kind, req) {
  const layer = f.layer.value;
  if (req.list) {
    return call('POST', `${kind}/${enc(layer)}.json?${req.list.query}`, {
      body: req.list.blob, type: 'text/x-tile-list', headers: req.list.gzip ? { 'Content-Encoding': 'gzip' } : {},
    }).then((r) => JSON.parse(r.text));
  }
  return call('POST', `${kind}/${enc(layer)}.json`, { body: JSON.stringify(req.json), type: 'application/json' }).then((r) => JSON.parse(r.text));
}

// later asks the estimate again once the form has stopped changing for
// 300 ms; seedState.queued tells (the tests) that one is still to be asked.
const asked = debounce(() => { seedState.queued = false; estimate(); }, 300);
function later() { seedState.queued = true; asked(); }

async function estimate() {
  const box = document.getElementById('estimate');
  const req = request();
  const seq = ++estimateSeq;
  if (req.error) {
    replace(box, el('h3', { id: 'h-estimate', text: 'Estimate' }), el('p', { class: req.refused ? 'error refused' : '', text: req.error }));
    box.removeAttribute('data-tiles');
    seedState.refused = req.refused ? req.error : '';
    return;
  }
  seedState.refused = '';
  seedState.lastEstimateRequest = req.json || { list: req.list.query };
  box.setAttribute('aria-busy', 'true');
  try {
    const e = await send('estimate', req);
    if (seq !== estimateSeq) return;
    seedState.lastEstimate = e;
    renderEstimate(box, e);
  } catch (err) {
    if (seq !== estimateSeq) return;
    box.removeAttribute('data-tiles');
    replace(box, el('h3', { id: 'h-estimate', text: 'Estimate' }), el('p', { class: 'error', text: err.message }));
  } finally {
    if (seq === estimateSeq) box.removeAttribute('aria-busy');
  }
}

function renderEstimate(box, e) {
  const rows = estimateRows(e, backend());
  box.dataset.tiles = String(e.tiles);
  replace(box, el('h3', { id: 'h-estimate', text: 'Estimate' }),
    el('dl', { class: 'kv' }, rows.map(([k, v]) => [el('dt', { text: k }), el('dd', { text: v, dataset: k === 'Tiles' ? { tiles: e.tiles } : undefined })])),
    el('details', {}, el('summary', { text: 'Tiles per level' }),
      el('table', {}, el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'Level' }), el('th', { scope: 'col', text: 'Tiles' }), el('th', { scope: 'col', text: 'Metatiles' }))),
        el('tbody', {}, (e.levels || []).map((l) => el('tr', {}, el('td', { text: String(l.zoom) }), el('td', { class: 'n', text: num(l.tiles) }), el('td', { class: 'n', text: num(l.metatiles) })))))),
    (e.notes || []).length ? el('ul', { class: 'notes' }, e.notes.map((n) => el('li', { text: n }))) : null);
}

async function submit(ev) {
  ev.preventDefault();
  const req = request();
  if (req.error) { say(req.error, true); return; }
  f.submit.disabled = true;
  try {
    if (req.archive) {
      const layer = f.layer.value;
      const body = JSON.stringify(exportRequest(req.json.seedRequest, req.archive, req.publish));
      const ans = JSON.parse((await call('POST', `export/${enc(layer)}.json`, { body, type: 'application/json' })).text);
      remember(layer, [ans.status]);
      kick(layer);
      seedState.lastExport = ans;
      location.hash = '#tasks';
      const s = document.getElementById('status');
      s.className = '';
      if (req.publish) {
        replace(s, `Export task ${ans.task} of ${layer}: once it is done, the CDN serves the tile set's PMTiles at ${ans.key}, `,
          'and index.json and the TileJSON name it.');
        return;
      }
      // The browser sends its credentials with the link (same origin);
      // on S3 the answer is a redirect to a link of the bucket's.
      const href = new URL(`../rest/export/${enc(layer)}.json?archive=${ans.task}.${ans.archive}`, location.href).href;
      replace(s, `Export task ${ans.task} of ${layer}: once it is done, `,
        el('a', { id: 'export-download', href, download: '', text: `download the ${ans.archive} archive` }), '.');
      return;
    }
    const ans = await send('seed', req);
    const rows = ans['long-array-array'] || [];
    remember(f.layer.value, rows);
    kick(f.layer.value);
    say(`Submitted: ${rows.length} task${rows.length === 1 ? '' : 's'} (${rows.map((r) => r[3]).join(', ')}) for ${f.layer.value}.`);
    location.hash = '#tasks';
  } catch (e) {
    say('Submit: ' + e.message, true);
  } finally {
    f.submit.disabled = false;
  }
}
