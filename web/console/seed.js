// The seed page: a seed, reseed or truncate request built from a form and
// an area drawn on the map (a box or a polygon, in the grid set's own
// coordinates), uploaded (GeoJSON or WKT) or given as a tile list; the
// estimate (POST /rest/estimate) follows the form as it changes.
import Draw, { createBox } from 'ol/interaction/Draw.js';
import GeoJSON from 'ol/format/GeoJSON.js';
import WKT from 'ol/format/WKT.js';
import Feature from 'ol/Feature.js';
import { fromExtent } from 'ol/geom/Polygon.js';
import { call, enc } from './api.js';
import { el, replace, field, select, setOptions, num, bytes, duration, usd, debounce, say } from './util.js';
import { gridSet } from './model.js';
import { GridMap, projectionOf } from './map.js';
import { remember } from './tasks.js';

let f; // the form's controls
let gmap;
let draw = null;
let overview = null;
let upload = null; // {text, name} of the geometry file
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
    graticule: el('input', { type: 'checkbox', id: 'graticule' }),
    zoomStart: el('input', { type: 'number', min: 0, value: 0, required: true }),
    zoomStop: el('input', { type: 'number', min: 0, value: 3, required: true }),
    type: select([['seed', 'seed'], ['reseed', 'reseed'], ['truncate', 'truncate']]),
    threads: el('input', { type: 'number', min: 1, max: 128, value: 2 }),
    bounds: ['minx', 'miny', 'maxx', 'maxy'].map(() => el('input', { type: 'number', step: 'any' })),
    geomFile: el('input', { type: 'file', accept: '.json,.geojson,.wkt,.txt' }),
    buffer: el('input', { type: 'number', min: 0, step: 'any' }),
    inGridCRS: el('input', { type: 'checkbox' }),
    listFile: el('input', { type: 'file', accept: '.list,.txt,.gz' }),
    xyz: el('input', { type: 'checkbox', checked: true }),
    parentsTo: el('input', { type: 'number', min: 0 }),
    childrenTo: el('input', { type: 'number', min: 0 }),
    submit: el('button', { type: 'submit', id: 'seed-submit', text: 'Submit', 'data-needs': 'seed' }),
  };
  const areaKinds = [['whole', 'The layer\'s whole coverage'], ['box', 'A box (draw it, or type its bounds)'], ['polygon', 'A polygon (draw it)'],
    ['file', 'A geometry file (GeoJSON or WKT)'], ['list', 'A tile list (z/x/y lines)']];
  const radios = areaKinds.map(([v, t], i) => el('div', { class: 'radio' },
    el('input', { type: 'radio', name: 'area', value: v, id: 'area-' + v, checked: i === 0, onchange: areaChanged }),
    el('label', { htmlFor: 'area-' + v, text: t })));
  const mapDiv = el('div', { id: 'seed-map', class: 'map' });
  const cursor = el('p', { id: 'seed-cursor', class: 'hint map-cursor' });
  const boundsBox = el('fieldset', { id: 'area-box-fields', class: 'sub' }, el('legend', { text: 'Bounds, in the grid set\'s coordinates' }),
    f.bounds.map((b, i) => field(['min x', 'min y', 'max x', 'max y'][i], b)));
  const fileBox = el('fieldset', { id: 'area-file-fields', class: 'sub', hidden: true }, el('legend', { text: 'Geometry file' }),
    field('GeoJSON or WKT file', f.geomFile), field('Buffer (metres, for lines and points)', f.buffer),
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
      el('div', { class: 'col wide' }, mapDiv, cursor,
        el('div', { class: 'radio' }, f.graticule, el('label', { htmlFor: 'graticule', text: 'Show a graticule (meridians and parallels)' })),
        el('div', { class: 'radio' }, f.base, el('label', { htmlFor: 'base-tiles', text: 'Show the tiles already stored (read from the cache only: nothing is rendered)' })),
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
  f.graticule.addEventListener('change', () => gmap.setGraticule(f.graticule.checked));
  for (const c of [f.format, f.zoomStart, f.zoomStop, f.type, f.threads, ...f.bounds, f.buffer, f.inGridCRS, f.xyz, f.parentsTo, f.childrenTo]) {
    c.addEventListener('input', later);
    c.addEventListener('change', later);
  }
  for (const b of f.bounds) b.addEventListener('change', boundsTyped);
  f.geomFile.addEventListener('change', async () => { upload = await readFile(f.geomFile); showUpload(); later(); });
  f.listFile.addEventListener('change', async () => { tileList = await readFile(f.listFile, true); later(); });
  built = true;
}

// setOverview gives the page the layers and grid sets to offer.
export function setOverview(o) {
  overview = o;
  if (!built) return;
  setOptions(f.layer, o.layers.map((l) => l.name));
  layerChanged();
}

export function show(on) {
  if (!on || !gmap) return;
  const first = !gmap.map.getTarget();
  gmap.attach();
  if (first && gmap.grid) gmap.map.getView().fit(gmap.grid.extent, { size: gmap.map.getSize() });
}

function layerInfo() { return overview?.layers.find((l) => l.name === f.layer.value); }

function layerChanged() {
  const l = layerInfo();
  if (!l) return;
  paramFields(l);
  const grids = l.gridSets.length ? l.gridSets : overview.gridSets.map((g) => g.name);
  setOptions(f.gridSet, grids);
  setOptions(f.format, [['', 'the layer\'s first format'], ...l.formats.map((x) => [x, x])]);
  gridChanged();
}

async function gridChanged() {
  try {
    const g = await gridSet(f.gridSet.value);
    f.zoomStart.max = f.zoomStop.max = g.resolutions.length - 1;
    if (gmap.grid?.name === g.name) { later(); baseChanged(); return; }
    gmap.setGridSet(g);
    gmap.setGraticule(f.graticule.checked);
    if (gmap.map.getTarget()) gmap.map.getView().fit(g.extent, { size: gmap.map.getSize() });
    areaChanged();
    seedState.gridSet = g.name;
    baseChanged();
  } catch (e) {
    say('Grid set ' + f.gridSet.value + ': ' + e.message, true);
  }
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

// baseChanged shows the stored tiles of the chosen tile set under the map.
function baseChanged() {
  if (!gmap?.grid) return;
  const l = layerInfo();
  if (!f.base.checked || !l) { gmap.setBase(null); return; }
  const q = paramValues().map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&');
  gmap.setBase({ layer: l.name, format: f.format.value || l.formats[0], query: q ? '?' + q : '' });
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
    box: 'Drag on the map to draw a box (click, move, click), or type the bounds.',
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

function showUpload() {
  gmap.source.clear();
  if (!upload) return;
  try {
    const text = upload.text.trim();
    const dataProjection = f.inGridCRS.checked ? projectionOf(gmap.grid) : 'EPSG:4326';
    const opts = { dataProjection, featureProjection: projectionOf(gmap.grid) };
    const body = text.replace(/^SRID=\d+;/i, '');
    const feats = text.startsWith('{') ? new GeoJSON().readFeatures(text, opts) : [new WKT().readFeature(body, opts)];
    gmap.source.addFeatures(feats);
    gmap.fit(gmap.source.getExtent());
  } catch (e) {
    say('The file could not be shown on the map (' + e.message + '); the server still reads it.', true);
  }
}

function intOr(input) { return input.value === '' ? undefined : Number(input.value); }

// request returns the request the form describes:
// {json: {seedRequest}} or {list: {query, blob, gzip}}, or {error}.
export function request() {
  const r = { gridSetId: f.gridSet.value, zoomStart: intOr(f.zoomStart), zoomStop: intOr(f.zoomStop), type: f.type.value, threadCount: intOr(f.threads) };
  if (f.format.value) r.format = f.format.value;
  const params = paramValues().map((kv) => ({ string: kv }));
  if (params.length) r.parameters = { entry: params };
  const g = gmap.grid;
  switch (area()) {
    case 'box': {
      const b = typedBounds();
      if (!b) return { error: 'Draw a box on the map or type its bounds.' };
      r.bounds = { coords: { double: b } };
      break;
    }
    case 'polygon': {
      const feat = gmap.source.getFeatures()[0];
      if (!feat) return { error: 'Draw a polygon on the map.' };
      r.geometry = { type: 'Polygon', coordinates: feat.getGeometry().getCoordinates() };
      if (g.epsg && g.epsg !== 4326) r.srs = { number: g.epsg };
      break;
    }
    case 'file':
      if (!upload) return { error: 'Choose a geometry file.' };
      r.geometry = upload.text;
      if (f.inGridCRS.checked && g.epsg) r.srs = { number: g.epsg };
      if (f.buffer.value !== '') r.buffer = Number(f.buffer.value);
      break;
    case 'list': {
      if (!tileList) return { error: 'Choose a tile list file.' };
      if (params.length) return { error: 'A tile list request seeds the default parameters only: set every parameter to its default.' };
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
  return { json: { seedRequest: r } };
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

const later = debounce(() => estimate(), 300);

async function estimate() {
  const box = document.getElementById('estimate');
  const req = request();
  const seq = ++estimateSeq;
  if (req.error) {
    replace(box, el('h3', { id: 'h-estimate', text: 'Estimate' }), el('p', { text: req.error }));
    box.removeAttribute('data-tiles');
    return;
  }
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
  const cost = e.costUSD || {};
  const rows = [
    ['Tiles', num(e.tiles) + (e.boxTiles ? ` (its bounding box: ${num(e.boxTiles)})` : '')],
    ['Metatiles', num(e.metatiles)], ['Tasks', num(e.tasks)],
    ['Upstream requests', num(e.upstreamRequests)],
    ['S3 PUTs / HEADs / lists / deletes', [e.s3Puts, e.s3Reads, e.s3Lists, e.s3Deletes].map(num).join(' / ')],
    ['DynamoDB writes, SQS messages', num(e.dynamoDBWrites) + ', ' + num(e.sqsMessages)],
    ['Bytes', e.bytes ? bytes(e.bytes) + ` (${bytes(e.avgTileBytes)} a tile)` : 'unknown until the layer has tiles'],
    ['Time', e.seconds ? duration(e.seconds) + ` at ${num(Math.round(e.tilesPerSecond))} tiles/s` : 'unknown (no recent seed of the layer)'],
    ['Cost', usd(cost.total) + ' (' + Object.entries(cost).filter(([k]) => k !== 'total').map(([k, v]) => `${k} ${usd(v)}`).join(', ') + (e.pricesAsOf ? `; prices of ${e.pricesAsOf}` : '') + ')'],
  ];
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
    const ans = await send('seed', req);
    const rows = ans['long-array-array'] || [];
    remember(f.layer.value, rows);
    say(`Submitted: ${rows.length} task${rows.length === 1 ? '' : 's'} (${rows.map((r) => r[3]).join(', ')}) for ${f.layer.value}.`);
    location.hash = '#tasks';
  } catch (e) {
    say('Submit: ' + e.message, true);
  } finally {
    f.submit.disabled = false;
  }
}
