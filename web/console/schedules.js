// The schedules page: every saved schedule with what it runs (type, layer,
// grid set, format, levels, area, parameters), a form to add one (with
// its next five run times, computed in the page as the expression is
// typed), edit and delete. The REST interface has no PUT of a schedule: a
// change is checked first (the request's dry run, POST
// /rest/estimate/{layer}.json), then the schedule is deleted and saved
// again; if saving fails, the old one is saved back.
import { call, getJSON, postJSON, enc } from './api.js';
import { el, replace, field, select, setOptions, debounce, say } from './util.js';
import { nextRuns } from './cron.js';

let list;
let f = {};
let shown = false;
let overview = { layers: [] };
let editing = null; // the schedule being edited (as listed), or null
let paramControls = [];
const schedules = new Map(); // name → schedule as listed

export function init(section) {
  list = el('div', { id: 'schedule-list' });
  f = {
    name: el('input', { type: 'text', required: true, pattern: '[A-Za-z0-9._-]{1,100}' }),
    cron: el('input', { type: 'text', required: true, value: '0 3 * * *' }),
    tz: el('input', { type: 'text', value: 'UTC' }),
    layer: select([]), type: select(['seed', 'reseed', 'truncate']),
    gridSet: select([]), format: select([]),
    zoomStart: el('input', { type: 'number', min: 0, value: 0 }),
    zoomStop: el('input', { type: 'number', min: 0, value: 4 }),
    threads: el('input', { type: 'number', min: 1, max: 128, value: 2 }),
    bounds: ['minx', 'miny', 'maxx', 'maxy'].map((k) => el('input', { type: 'number', step: 'any', dataset: { bound: k } })),
    params: el('fieldset', { id: 'schedule-params', hidden: true }),
    preview: el('ol', { id: 'cron-preview' }),
    previewNote: el('p', { id: 'cron-note', class: 'hint', 'aria-live': 'polite' }),
    result: el('div', { id: 'schedule-result', 'aria-live': 'polite' }),
    heading: el('h3', { id: 'schedule-form-title', text: 'Add a schedule' }),
    submit: el('button', { type: 'submit', id: 'schedule-add', text: 'Add the schedule' }),
    cancel: el('button', { type: 'button', id: 'schedule-cancel', text: 'Cancel the change', hidden: true, onclick: () => stopEditing() }),
  };
  const form = el('form', { id: 'schedule-form', novalidate: true, onsubmit: save, 'data-needs': 'schedules', 'aria-labelledby': 'schedule-form-title' },
    el('div', { class: 'row' }, field('Name', f.name, 'letters, digits, . _ -'), field('Cron expression', f.cron, 'minute hour day month weekday, or @daily, @every 6h'),
      field('Time zone', f.tz, 'an IANA name, e.g. Europe/Paris')),
    el('div', { class: 'row' }, field('Layer', f.layer), field('Type', f.type), field('Grid set', f.gridSet), field('Format', f.format)),
    el('div', { class: 'row' }, field('From level', f.zoomStart), field('To level', f.zoomStop), field('Threads', f.threads)),
    el('fieldset', {}, el('legend', { text: 'Area: bounds in the grid set\'s coordinates (all four empty: the whole layer)' }),
      el('div', { class: 'row' }, field('West (min x)', f.bounds[0]), field('South (min y)', f.bounds[1]), field('East (max x)', f.bounds[2]), field('North (max y)', f.bounds[3]))),
    f.params,
    el('h4', { text: 'Next five runs' }), f.previewNote, f.preview,
    el('p', { class: 'toolbar' }, f.submit, f.cancel), f.result);
  replace(section, el('h2', { id: 'h-schedules', text: 'Schedules' }), list, el('div', { 'data-needs': 'schedules' }, f.heading), form);
  const upd = debounce(preview, 200);
  f.cron.addEventListener('input', upd);
  f.tz.addEventListener('input', upd);
  f.layer.addEventListener('change', () => layerChanged());
  list.addEventListener('click', (ev) => {
    const b = ev.target.closest('button');
    if (b?.dataset.edit) edit(b.dataset.edit);
    else if (b?.dataset.del) del(b.dataset.del);
  });
  preview();
}

export function setOverview(o) {
  overview = o;
  setOptions(f.layer, o.layers.map((l) => l.name));
  layerChanged();
}

export function show(on) {
  if (on) load();
  if (on && !shown) shown = true;
}

function layerOf(name) { return overview.layers.find((l) => l.name === name); }

// layerChanged offers the chosen layer's grid sets, formats and
// parameter filters (values keeps what to choose in them).
function layerChanged(values = {}) {
  const l = layerOf(f.layer.value);
  setOptions(f.gridSet, [['', 'the layer\'s first'], ...(l?.gridSets || [])], values.gridSet ?? '');
  setOptions(f.format, [['', 'the layer\'s first'], ...(l?.formats || [])], values.format ?? '');
  const ps = l?.parameters || [];
  paramControls = ps.map((p) => {
    const dflt = `default${p.default !== '' ? ' (' + p.default + ')' : ''}`;
    const c = p.kind === 'regex'
      ? el('input', { type: 'text', placeholder: dflt, spellcheck: false, autocomplete: 'off' })
      : select([['', dflt], ...(p.values || []).filter((v) => v !== p.default)]);
    c.dataset.param = p.key;
    const v = values.parameters?.[p.key];
    if (v !== undefined) {
      if (c.tagName === 'SELECT' && ![...c.options].some((o) => o.value === v)) c.append(el('option', { value: v, text: v }));
      c.value = v;
    }
    return { key: p.key, control: c, fieldEl: field(p.key, c, p.kind === 'regex' ? 'Any value matching ' + p.regex : undefined) };
  });
  replace(f.params, el('legend', { text: 'Parameters' }), paramControls.map((x) => x.fieldEl));
  f.params.hidden = !ps.length;
}

function preview() {
  try {
    f.preview.dataset.for = `${f.cron.value.trim()} ${f.tz.value.trim() || 'UTC'}`;
    const runs = nextRuns(f.cron.value, f.tz.value.trim() || 'UTC');
    replace(f.preview, runs.map((d) => el('li', { dataset: { time: d.toISOString() }, text: `${d.toISOString().replace('.000Z', 'Z')} (${d.toLocaleString(undefined, { timeZone: f.tz.value.trim() || 'UTC', timeZoneName: 'short' })})` })));
    f.previewNote.textContent = 'Computed by this page; the server checks the expression when the schedule is saved.';
  } catch (e) {
    replace(f.preview);
    f.previewNote.textContent = e instanceof RangeError ? `Unknown time zone ${f.tz.value}` : e.message;
  }
}

// paramsOf reads a seed request's parameters ({entry: [{string: [k, v]}]}
// or one entry) as {K: v}.
function paramsOf(sr) {
  const e = sr.parameters?.entry;
  const out = {};
  for (const x of Array.isArray(e) ? e : e ? [e] : []) {
    const [k, v] = x.string || [];
    if (k) out[k] = v ?? '';
  }
  return out;
}

function boundsOf(sr) {
  const d = sr.bounds?.coords?.double;
  return Array.isArray(d) && d.length === 4 ? d.map(Number) : null;
}

async function load() {
  let d;
  try {
    d = await getJSON('schedules.json');
  } catch (e) {
    replace(list, el('p', { class: 'error', text: e.message }));
    return;
  }
  schedules.clear();
  const rows = (d.schedules || []).map((s) => {
    schedules.set(s.name, s);
    const r = s.request || {};
    const sr = r.seedRequest || {};
    const b = boundsOf(sr);
    const ps = Object.entries(paramsOf(sr));
    const last = s.lastRun ? `${s.lastRun.outcome}${s.lastRun.reason ? ': ' + s.lastRun.reason : ''} (${s.lastRun.due || s.lastRun.at || ''})` : 'never ran';
    return el('tr', { dataset: { schedule: s.name } },
      el('th', { scope: 'row', text: s.name }), el('td', { text: s.cron }), el('td', { text: s.timezone || 'UTC' }),
      el('td', { class: 'what', text: `${sr.type || 'seed'} ${r.layer} ${sr.gridSetId || '(first grid set)'} ${sr.format || '(first format)'} levels ${sr.zoomStart ?? '–'}–${sr.zoomStop ?? '–'}` }),
      el('td', { class: 'area', text: b ? b.join(', ') : 'the whole layer' }),
      el('td', { class: 'params', text: ps.length ? ps.map(([k, v]) => `${k}=${v}`).join(', ') : 'default' }),
      el('td', { class: 'next-run', text: s.nextRun || '–' }), el('td', { text: last }),
      el('td', { class: 'actions', 'data-needs': 'schedules' },
        el('button', { type: 'button', text: 'Edit', 'aria-label': `Edit schedule ${s.name}`, dataset: { edit: s.name } }), ' ',
        el('button', { type: 'button', class: 'danger', text: 'Delete', 'aria-label': `Delete schedule ${s.name}`, dataset: { del: s.name } })));
  });
  replace(list, rows.length ? el('div', { class: 'scroll' }, el('table', { id: 'schedules-table' },
    el('caption', { class: 'sr-only', text: 'Schedules' }),
    el('thead', {}, el('tr', {}, ['Name', 'Cron', 'Time zone', 'Request', 'Area', 'Parameters', 'Next run', 'Last run', 'Actions'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows))) : el('p', { text: 'No schedule.' }),
  (d.unreadable || []).length ? el('p', { class: 'error', text: `Unreadable: ${d.unreadable.join(', ')}` }) : null);
}

// edit fills the form with a schedule; saving replaces it.
function edit(name) {
  const s = schedules.get(name);
  if (!s) return;
  editing = s;
  const r = s.request || {};
  const sr = r.seedRequest || {};
  f.name.value = s.name;
  f.cron.value = s.cron;
  f.tz.value = s.timezone || 'UTC';
  if (![...f.layer.options].some((o) => o.value === r.layer)) f.layer.append(el('option', { value: r.layer, text: r.layer }));
  f.layer.value = r.layer;
  f.type.value = (sr.type || 'seed').toLowerCase();
  layerChanged({ gridSet: sr.gridSetId || '', format: sr.format || '', parameters: paramsOf(sr) });
  f.zoomStart.value = sr.zoomStart ?? '';
  f.zoomStop.value = sr.zoomStop ?? '';
  f.threads.value = sr.threadCount ?? 1;
  const b = boundsOf(sr);
  f.bounds.forEach((x, i) => { x.value = b ? String(b[i]) : ''; });
  f.heading.textContent = `Change schedule ${s.name}`;
  f.submit.textContent = 'Save the changes';
  f.cancel.hidden = false;
  replace(f.result);
  preview();
  f.name.focus();
}

function stopEditing() {
  editing = null;
  f.heading.textContent = 'Add a schedule';
  f.submit.textContent = 'Add the schedule';
  f.cancel.hidden = true;
}

// body returns the schedule the form describes, or {error}.
function body() {
  const sr = { zoomStart: Number(f.zoomStart.value), zoomStop: Number(f.zoomStop.value), type: f.type.value, threadCount: Number(f.threads.value) };
  if (f.gridSet.value) sr.gridSetId = f.gridSet.value;
  if (f.format.value) sr.format = f.format.value;
  const b = f.bounds.map((x) => x.value.trim());
  if (b.some((v) => v !== '')) {
    if (b.some((v) => v === '' || !isFinite(Number(v)))) return { error: 'The area needs all four bounds, as numbers (or none for the whole layer).' };
    const [x0, y0, x1, y1] = b.map(Number);
    if (x0 >= x1 || y0 >= y1) return { error: 'The area\'s west must be less than its east, its south less than its north.' };
    sr.bounds = { coords: { double: [x0, y0, x1, y1] } };
  }
  const params = paramControls.filter((x) => x.control.value !== '').map((x) => ({ string: [x.key, x.control.value] }));
  if (params.length) sr.parameters = { entry: params };
  const s = { name: f.name.value.trim(), cron: f.cron.value.trim(), request: { layer: f.layer.value, seedRequest: sr } };
  if (f.tz.value.trim()) s.timezone = f.tz.value.trim();
  return { s };
}

function fail(text) {
  replace(f.result, el('p', { class: 'error', role: 'alert', text: 'Not saved: ' + text }));
}

async function save(ev) {
  ev.preventDefault();
  const { s, error } = body();
  if (error) { fail(error); return; }
  if (!editing) {
    try {
      const saved = await postJSON('schedules.json', s);
      replace(f.result, el('p', { text: `Saved ${saved.name}: next run ${saved.nextRun}.` }));
      load();
    } catch (e) {
      fail(e.message);
    }
    return;
  }
  const old = editing;
  // The request checked first, as the server would when saving it.
  try {
    await call('POST', `estimate/${enc(s.request.layer)}.json`, { body: JSON.stringify({ seedRequest: s.request.seedRequest }), type: 'application/json' });
  } catch (e) {
    fail(e.message);
    return;
  }
  const renamed = s.name !== old.name;
  try {
    if (!renamed) await call('DELETE', `schedules/${enc(old.name)}.json`);
    const saved = await postJSON('schedules.json', s);
    if (renamed) await call('DELETE', `schedules/${enc(old.name)}.json`);
    replace(f.result, el('p', { text: `Saved ${saved.name}: next run ${saved.nextRun}.` }));
    stopEditing();
  } catch (e) {
    if (!renamed) {
      // Put the old one back.
      const back = { name: old.name, cron: old.cron, request: old.request };
      if (old.timezone) back.timezone = old.timezone;
      try { await postJSON('schedules.json', back); } catch (e2) { say(`Schedule ${old.name} could not be saved back: ${e2.message}`, true); }
    }
    fail(e.message + (renamed ? '' : ` (${old.name} is kept as it was)`));
  }
  load();
}

async function del(name) {
  try {
    await call('DELETE', `schedules/${enc(name)}.json`);
    say(`Schedule ${name} deleted.`);
    if (editing?.name === name) stopEditing();
  } catch (e) {
    say(`Delete ${name}: ${e.message}`, true);
  }
  load();
}
