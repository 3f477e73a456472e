// The layers page: every layer with its grid sets, formats, parameter
// filters, usage and tasks, and its details (what is stored per tile set
// and level, a preview of the stored tiles — read from storage only,
// nothing rendered — and links that open the seed form prefilled to seed,
// reseed or truncate); its GeoWebCache document viewable and editable (PUT with
// If-Match: a change made meanwhile shows both versions side by side);
// deleting a layer (with or without its tiles), truncating all its tiles
// after typing its name; layers created from a WMS's capabilities; the
// grid sets and their documents.
import { call, enc, postJSON, getJSON } from './api.js';
import { el, replace, field, num, bytes, say } from './util.js';
import { gridSet, seedLink, levelsText } from './model.js';
import { GridMap } from './map.js';

let root;
let refresh;
let listBox;
let gridBox;
let panel; // the editor / confirmation panel
let overview = null;

export function init(section, refreshOverview) {
  root = section;
  refresh = refreshOverview;
  listBox = el('div', { id: 'layer-list' });
  gridBox = el('div', { id: 'gridset-list' });
  panel = el('div', { id: 'layer-panel', tabindex: -1 });
  const url = el('input', { type: 'url', placeholder: 'https://example.com/wms', required: true });
  const version = el('select', {}, el('option', { value: '1.3.0', text: '1.3.0' }), el('option', { value: '1.1.1', text: '1.1.1' }));
  const capsOut = el('div', { id: 'caps-result' });
  const capsForm = el('form', { id: 'caps-form', 'data-needs': 'layers', onsubmit: (e) => { e.preventDefault(); fromCapabilities(url.value, version.value, capsOut); } },
    el('div', { class: 'row' }, field('WMS address', url), field('Version', version)),
    el('p', {}, el('button', { type: 'submit', text: 'Read the capabilities' })), capsOut);
  replace(root,
    el('h2', { id: 'h-layers', text: 'Layers' }),
    el('p', { class: 'toolbar' }, el('button', { type: 'button', text: 'Reload', onclick: () => refresh() })),
    listBox, panel,
    el('h3', { text: 'New layers from a WMS\'s capabilities', 'data-needs': 'layers' }), capsForm,
    el('h3', { text: 'Grid sets' }), gridBox);
}

export function setOverview(o) {
  overview = o;
  renderLayers();
  renderGridSets();
}

function renderLayers() {
  const head = ['Layer', 'Managed by', 'Grid sets', 'Formats', 'Parameters', 'Usage', 'Tasks', 'Last finished', 'Actions'];
  const rows = overview.layers.map((l) => {
    const used = l.usage ? `${bytes(l.usage.bytes)}, ${num(l.usage.tiles)} tiles` + (l.usage.recountPending ? ' (recount pending)' : '') : '–';
    const quota = l.quota ? ` of ${bytes(l.quota.bytes)} (${l.quota.policy})` : '';
    const tasks = l.tasks ? `${l.tasks.running} running, ${l.tasks.pending} pending` : '–';
    // A killed task is listed ABORTED: the overview tells them apart.
    const lf = l.lastFinished;
    const last = lf ? `${lf.type} ${lf.killed ? 'KILLED' : lf.status} ${new Date(lf.finished).toLocaleString()}` : '–';
    const first = { layer: l.name, gridSet: l.gridSets[0], format: l.formats[0] };
    return el('tr', { dataset: { layer: l.name } },
      el('th', { scope: 'row' }, el('span', { text: l.name }), l.title ? el('div', { class: 'hint', text: l.title }) : null),
      el('td', { text: l.managedBy || '–' }),
      el('td', { text: l.gridSets.join(', ') || '–' }),
      el('td', { text: l.formats.join(', ') || '–' }),
      el('td', { class: 'params', text: (l.parameters || []).map(paramText).join('; ') || '–' }),
      el('td', { text: used + quota }),
      el('td', { text: tasks }),
      el('td', { text: last }),
      el('td', { class: 'actions' },
        el('button', { type: 'button', text: 'Details', 'aria-label': `Details of ${l.name}`, onclick: () => details(l) }), ' ',
        el('button', { type: 'button', text: 'Document', 'aria-label': `Document of ${l.name}`, onclick: () => edit(l.name) }), ' ',
        el('span', { 'data-needs': 'seed', class: 'links' },
          el('a', { href: seedLink({ ...first, type: 'seed' }), text: 'Seed…', 'aria-label': `Seed ${l.name}` }), ' ',
          el('a', { href: seedLink({ ...first, type: 'reseed' }), text: 'Reseed…', 'aria-label': `Reseed ${l.name}` }), ' ',
          el('a', { href: seedLink({ ...first, type: 'truncate' }), text: 'Truncate an area…', 'aria-label': `Truncate an area of ${l.name}` })), ' ',
        el('button', { type: 'button', text: 'Truncate…', 'data-needs': 'masstruncate', 'aria-label': `Truncate ${l.name}`, onclick: () => truncate(l.name) }), ' ',
        el('button', { type: 'button', class: 'danger', text: 'Delete…', 'data-needs': 'layers', 'aria-label': `Delete ${l.name}`, onclick: () => del(l.name) })));
  });
  replace(listBox, el('table', { id: 'layers-table' },
    el('caption', { class: 'sr-only', text: 'Layers' }),
    el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows)),
  overview.partial ? el('p', { class: 'hint', text: 'This server has no overview: grid sets and formats are shown for WMS layers only.' }) : null);
}

// paramText words a parameter filter: "STYLES: pophatch, polygon
// (default none)".
function paramText(p) {
  const what = p.kind === 'regex' ? `matching ${p.regex}` : (p.values || []).join(', ') || 'any';
  const extra = p.kind === 'float' || p.kind === 'integer' ? ` (${p.kind}${p.threshold ? `, threshold ${p.threshold}` : ''})` : '';
  return `${p.key}: ${what}${extra} (default ${p.default === '' ? 'none' : p.default})`;
}

let previewMap = null;

// details shows a layer's grid sets, formats and parameter filters, what
// is stored per tile set (GET /rest/diskquota/pages/{layer}.json?tileSets=1),
// links to the seed form prefilled for each, and a preview of a tile set's
// stored tiles.
async function details(l) {
  const sets = el('div', { id: 'layer-tilesets', 'aria-live': 'polite' }, el('p', { text: 'Reading what is stored…' }));
  const mapDiv = el('div', { id: 'layer-preview', class: 'preview', hidden: true });
  const mapNote = el('p', { id: 'layer-preview-note', class: 'hint' });
  openPanel(`Layer ${l.name}`,
    el('dl', { class: 'kv' },
      el('dt', { text: 'Title' }), el('dd', { text: l.title || '–' }),
      el('dt', { text: 'Grid sets' }), el('dd', { text: l.gridSets.join(', ') || '–' }),
      el('dt', { text: 'Formats' }), el('dd', { text: l.formats.join(', ') || '–' }),
      el('dt', { text: 'Parameter filters' }), el('dd', {}, (l.parameters || []).length
        ? el('ul', { class: 'plain' }, l.parameters.map((p) => el('li', { text: paramText(p) }))) : 'none'),
      el('dt', { text: 'Stored' }), el('dd', { text: l.usage ? `${num(l.usage.tiles)} tiles, ${bytes(l.usage.bytes)}` : '–' })),
    el('h4', { text: 'Stored per tile set' }), sets,
    el('h4', { text: 'Preview (stored tiles only: nothing is rendered)' }), mapNote, mapDiv);
  previewMap = null;
  let d;
  try {
    d = await getJSON(`diskquota/pages/${enc(l.name)}.json?tileSets=1`, { ok: [404] });
  } catch (e) {
    replace(sets, el('p', { class: 'error', text: e.message }));
    return;
  }
  if (!d) { replace(sets, el('p', { text: 'This server does not count usage per tile set.' })); return; }
  if (!d.tileSets.length) {
    replace(sets, el('p', { text: 'Nothing is stored.' }));
    mapNote.textContent = 'Nothing is stored to preview.';
    return;
  }
  replace(sets, el('table', { id: 'tilesets-table' },
    el('caption', { class: 'sr-only', text: `What is stored of ${l.name}, per tile set` }),
    el('thead', {}, el('tr', {}, ['Grid set', 'Format', 'Parameters', 'Tiles', 'Bytes', 'Levels', 'Actions'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, d.tileSets.map((s) => {
      const zs = s.levels.map((v) => v.zoom);
      const lo = Math.min(...zs);
      const hi = Math.max(...zs);
      const req = { layer: l.name, gridSet: s.gridSet, format: s.format || s.formatId };
      const name = `${s.gridSet} ${s.format || s.formatId}${s.parameters !== 'default' ? ' ' + s.parameters.slice(0, 8) : ''}`;
      return el('tr', { dataset: { gridSet: s.gridSet, format: s.format || s.formatId, parameters: s.parameters, tiles: s.tiles, bytes: s.bytes } },
        el('th', { scope: 'row', text: s.gridSet }), el('td', { text: s.format || s.formatId }),
        el('td', { text: s.parameters === 'default' ? 'default' : s.parameters.slice(0, 12) + '…', title: s.parameters }),
        el('td', { class: 'n', text: num(s.tiles) }), el('td', { class: 'n', text: bytes(s.bytes) }),
        el('td', { text: levelsText(lo, hi), title: s.levels.map((v) => `z${v.zoom}: ${num(v.tiles)} tiles`).join(', ') }),
        el('td', { class: 'actions' },
          el('button', { type: 'button', text: 'Preview', 'aria-label': `Preview ${name}`, disabled: s.parameters !== 'default' || !s.format,
            onclick: () => preview(l, s, mapDiv, mapNote, hi) }), ' ',
          el('span', { 'data-needs': 'seed', class: 'links' },
            el('a', { href: seedLink({ ...req, type: 'seed', zoomStart: lo, zoomStop: hi }), text: 'Seed…', 'aria-label': `Seed ${name}` }), ' ',
            el('a', { href: seedLink({ ...req, type: 'reseed', zoomStart: lo, zoomStop: hi }), text: 'Reseed…', 'aria-label': `Reseed ${name}` }), ' ',
            el('a', { href: seedLink({ ...req, type: 'truncate', zoomStart: lo, zoomStop: hi }), text: 'Truncate…', 'aria-label': `Truncate an area of ${name}` }))));
    }))));
  const firstSet = d.tileSets.find((s) => s.parameters === 'default' && s.format);
  if (firstSet) preview(l, firstSet, mapDiv, mapNote, Math.max(...firstSet.levels.map((v) => v.zoom)));
  else mapNote.textContent = 'Only the default parameters\' tiles can be previewed.';
}

// preview draws a tile set's stored tiles (map.js reads each with
// X-Tilecache-Stored-Only: a missing tile stays empty).
async function preview(l, s, mapDiv, note, deepest) {
  try {
    const g = await gridSet(s.gridSet);
    mapDiv.hidden = false;
    if (!previewMap) previewMap = new GridMap(mapDiv, `Preview of the stored tiles of ${l.name}`);
    previewMap.attach();
    previewMap.setGridSet(g);
    previewMap.setBase({ layer: l.name, format: s.format, query: '' });
    mapDiv.dataset.shown = `${s.gridSet} ${s.format}`;
    note.textContent = `${s.gridSet}, ${s.format}: ${num(s.tiles)} tiles stored, down to level ${deepest}. Zoom in to see the deeper levels.`;
  } catch (e) {
    note.textContent = 'Preview: ' + e.message;
  }
}

function renderGridSets() {
  replace(gridBox, el('table', { id: 'gridsets-table' },
    el('caption', { class: 'sr-only', text: 'Grid sets' }),
    el('thead', {}, el('tr', {}, ['Grid set', 'Managed by', 'Actions'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, overview.gridSets.map((g) => el('tr', {},
      el('th', { scope: 'row', text: g.name }), el('td', { text: g.managedBy || '–' }),
      el('td', {}, el('button', { type: 'button', text: 'Show', 'aria-label': `Show grid set ${g.name}`, onclick: () => showGridSet(g.name) })))))));
}

function openPanel(title, ...children) {
  replace(panel, el('h3', { id: 'panel-title', text: title }), children,
    el('p', {}, el('button', { type: 'button', text: 'Close', onclick: () => replace(panel) })));
  panel.focus();
}

async function showGridSet(name) {
  try {
    const g = await gridSet(name);
    openPanel(`Grid set ${name}`,
      el('p', { text: `EPSG:${g.epsg}, ${g.resolutions.length} levels, tiles ${g.tileWidth}×${g.tileHeight}, extent ${g.extent.join(', ')}` }),
      el('pre', { class: 'doc', text: g.xml }));
  } catch (e) {
    say(`Grid set ${name}: ${e.message}`, true);
  }
}

// edit shows a layer's document in an editor; saving PUTs it with the
// ETag it was read with.
async function edit(name) {
  let r;
  try {
    r = await call('GET', `layers/${enc(name)}.xml`);
  } catch (e) {
    openPanel(`Layer ${name}`, el('p', { class: 'error', text: e.message }));
    return;
  }
  let etag = r.headers.get('ETag');
  const area = el('textarea', { id: 'layer-xml', rows: 18, spellcheck: false, value: r.text,
    readOnly: !(document.body.dataset.may || '').split(' ').includes('layers') });
  const out = el('div', { id: 'layer-save-result', 'aria-live': 'polite' });
  const save = async (ifMatch) => {
    try {
      const h = ifMatch ? { 'If-Match': ifMatch } : {};
      const ans = await call('PUT', `layers/${enc(name)}.xml`, { body: area.value, type: 'text/xml', headers: h, ok: [412] });
      if (ans.status === 412) return conflict();
      const fresh = await call('GET', `layers/${enc(name)}.xml`);
      etag = fresh.headers.get('ETag');
      area.value = fresh.text;
      replace(out, el('p', { class: 'ok', text: `Saved (version ${etag}).` }));
      refresh();
    } catch (e) {
      replace(out, el('p', { class: 'error', text: e.message }));
    }
  };
  const conflict = async () => {
    const theirs = await call('GET', `layers/${enc(name)}.xml`);
    const theirTag = theirs.headers.get('ETag');
    replace(out, el('div', { id: 'layer-conflict', role: 'alert' },
      el('p', { class: 'error', text: `Someone changed ${name} since you opened it: it was not saved. Both versions:` }),
      el('div', { class: 'side-by-side' },
        el('div', {}, el('h4', { text: 'Yours' }), el('pre', { class: 'doc', id: 'conflict-yours', text: area.value })),
        el('div', {}, el('h4', { text: `The server's (${theirTag})` }), el('pre', { class: 'doc', id: 'conflict-theirs', text: theirs.text }))),
      el('p', { class: 'toolbar' },
        el('button', { type: 'button', text: 'Save mine over theirs', onclick: () => save(theirTag) }),
        el('button', { type: 'button', text: 'Take theirs', onclick: () => { area.value = theirs.text; etag = theirTag; replace(out); } }))));
  };
  openPanel(`Layer ${name}: GeoWebCache document`, field('Document (XML)', area),
    el('p', { class: 'toolbar' }, el('button', { type: 'button', id: 'layer-save', text: 'Save', 'data-needs': 'layers', onclick: () => save(etag) }),
      el('span', { class: 'hint', text: `version ${etag}` })), out);
}

function truncate(name) {
  const typed = el('input', { type: 'text', autocomplete: 'off' });
  const go = el('button', { type: 'button', class: 'danger', text: 'Truncate', disabled: true });
  typed.addEventListener('input', () => { go.disabled = typed.value !== name; });
  go.addEventListener('click', async () => {
    const body = `<truncateLayer><layerName>${name.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</layerName></truncateLayer>`;
    try {
      await call('POST', 'masstruncate', { body, type: 'text/xml' });
      say(`Every tile of ${name} is deleted.`);
      replace(panel);
      refresh();
    } catch (e) {
      say(`Truncate ${name}: ${e.message}`, true);
    }
  });
  openPanel(`Truncate ${name}`, el('p', { text: `This deletes every tile of ${name}, in every grid set, format and parameter set. Type the layer's name to confirm.` }),
    field('Layer name', typed), el('p', {}, go));
}

function del(name) {
  const tiles = el('input', { type: 'checkbox', id: 'delete-tiles' });
  const go = el('button', { type: 'button', class: 'danger', text: 'Delete the layer' });
  go.addEventListener('click', async () => {
    try {
      await call('DELETE', `layers/${enc(name)}.xml${tiles.checked ? '?truncate=true' : ''}`);
      say(`Layer ${name} is deleted${tiles.checked ? ' with its tiles' : ''}.`);
      replace(panel);
      refresh();
    } catch (e) {
      say(`Delete ${name}: ${e.message}`, true);
    }
  });
  openPanel(`Delete ${name}`, el('p', { text: `The layer ${name} is removed from the configuration.` }),
    el('div', { class: 'radio' }, tiles, el('label', { htmlFor: 'delete-tiles', text: 'Delete its tiles too' })), el('p', {}, go));
}

async function fromCapabilities(url, version, out) {
  replace(out, el('p', { text: 'Reading…' }));
  let ans;
  try {
    ans = await postJSON('layers/from-capabilities.json', { url, version });
  } catch (e) {
    replace(out, el('p', { class: 'error', text: e.status === 404 ? 'This server cannot read capabilities for the console.' : e.message }));
    return;
  }
  const boxes = ans.proposed.map((p, i) => {
    const cb = el('input', { type: 'checkbox', id: 'caps-' + i, checked: !p.exists });
    return { p, cb, row: el('li', {}, cb, el('label', { htmlFor: 'caps-' + i, text: `${p.name}${p.title ? ' — ' + p.title : ''}${p.exists ? ' (exists: it would be replaced)' : ''}` }),
      el('details', {}, el('summary', { text: 'Document' }), el('pre', { class: 'doc', text: p.xml }))) };
  });
  const create = el('button', { type: 'button', text: 'Create the chosen layers', 'data-needs': 'layers' });
  create.addEventListener('click', async () => {
    let n = 0;
    for (const b of boxes.filter((x) => x.cb.checked)) {
      try {
        await call('PUT', `layers/${enc(b.p.name)}.xml`, { body: b.p.xml, type: 'text/xml' });
        n++;
      } catch (e) {
        say(`Layer ${b.p.name}: ${e.message}`, true);
        return;
      }
    }
    say(`${n} layer${n === 1 ? '' : 's'} created.`);
    refresh();
  });
  replace(out, el('p', { text: `${ans.title || ans.url} (WMS ${ans.version}): ${ans.capabilities.length} named layers.` }),
    el('ul', { class: 'plain' }, boxes.map((b) => b.row)), el('p', {}, create));
}
