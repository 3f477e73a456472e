// The schedules page: every saved schedule, a form to add one (with its
// next five run times, computed in the page as the expression is typed),
// and delete.
import { call, getJSON, postJSON, enc } from './api.js';
import { el, replace, field, select, setOptions, debounce, say } from './util.js';
import { nextRuns } from './cron.js';

let list;
let f = {};
let shown = false;

export function init(section) {
  list = el('div', { id: 'schedule-list' });
  f = {
    name: el('input', { type: 'text', required: true, pattern: '[A-Za-z0-9._-]{1,100}' }),
    cron: el('input', { type: 'text', required: true, value: '0 3 * * *' }),
    tz: el('input', { type: 'text', value: 'UTC' }),
    layer: select([]), type: select(['seed', 'reseed', 'truncate']),
    gridSet: el('input', { type: 'text', placeholder: 'the layer\'s first' }),
    zoomStart: el('input', { type: 'number', min: 0, value: 0 }),
    zoomStop: el('input', { type: 'number', min: 0, value: 4 }),
    threads: el('input', { type: 'number', min: 1, max: 128, value: 2 }),
    preview: el('ol', { id: 'cron-preview' }),
    previewNote: el('p', { id: 'cron-note', class: 'hint', 'aria-live': 'polite' }),
    result: el('div', { id: 'schedule-result', 'aria-live': 'polite' }),
  };
  const form = el('form', { id: 'schedule-form', novalidate: true, onsubmit: add, 'data-needs': 'schedules' },
    el('div', { class: 'row' }, field('Name', f.name, 'letters, digits, . _ -'), field('Cron expression', f.cron, 'minute hour day month weekday, or @daily, @every 6h'),
      field('Time zone', f.tz, 'an IANA name, e.g. Europe/Paris')),
    el('div', { class: 'row' }, field('Layer', f.layer), field('Type', f.type), field('Grid set', f.gridSet)),
    el('div', { class: 'row' }, field('From level', f.zoomStart), field('To level', f.zoomStop), field('Threads', f.threads)),
    el('h4', { text: 'Next five runs' }), f.previewNote, f.preview,
    el('p', {}, el('button', { type: 'submit', id: 'schedule-add', text: 'Add the schedule' })), f.result);
  replace(section, el('h2', { id: 'h-schedules', text: 'Schedules' }), list, el('h3', { text: 'Add a schedule' }), form);
  const upd = debounce(preview, 200);
  f.cron.addEventListener('input', upd);
  f.tz.addEventListener('input', upd);
  preview();
}

export function setOverview(o) { setOptions(f.layer, o.layers.map((l) => l.name)); }

export function show(on) {
  if (on) load();
  if (on && !shown) shown = true;
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

async function load() {
  let d;
  try {
    d = await getJSON('schedules.json');
  } catch (e) {
    replace(list, el('p', { class: 'error', text: e.message }));
    return;
  }
  const rows = (d.schedules || []).map((s) => {
    const r = s.request || {};
    const sr = r.seedRequest || {};
    const last = s.lastRun ? `${s.lastRun.outcome}${s.lastRun.reason ? ': ' + s.lastRun.reason : ''} (${s.lastRun.due || s.lastRun.at || ''})` : 'never ran';
    return el('tr', { dataset: { schedule: s.name } },
      el('th', { scope: 'row', text: s.name }), el('td', { text: s.cron }), el('td', { text: s.timezone || 'UTC' }),
      el('td', { text: `${sr.type || 'seed'} ${r.layer} ${sr.gridSetId || ''} levels ${sr.zoomStart}–${sr.zoomStop}` }),
      el('td', { class: 'next-run', text: s.nextRun || '–' }), el('td', { text: last }),
      el('td', {}, el('button', { type: 'button', class: 'danger', text: 'Delete', 'data-needs': 'schedules', 'aria-label': `Delete schedule ${s.name}`, onclick: () => del(s.name) })));
  });
  replace(list, rows.length ? el('table', { id: 'schedules-table' },
    el('caption', { class: 'sr-only', text: 'Schedules' }),
    el('thead', {}, el('tr', {}, ['Name', 'Cron', 'Time zone', 'Request', 'Next run', 'Last run', 'Actions'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows)) : el('p', { text: 'No schedule.' }),
  (d.unreadable || []).length ? el('p', { class: 'error', text: `Unreadable: ${d.unreadable.join(', ')}` }) : null);
}

async function add(ev) {
  ev.preventDefault();
  const sr = { zoomStart: Number(f.zoomStart.value), zoomStop: Number(f.zoomStop.value), type: f.type.value, threadCount: Number(f.threads.value) };
  if (f.gridSet.value.trim()) sr.gridSetId = f.gridSet.value.trim();
  const body = { name: f.name.value.trim(), cron: f.cron.value.trim(), request: { layer: f.layer.value, seedRequest: sr } };
  if (f.tz.value.trim()) body.timezone = f.tz.value.trim();
  try {
    const s = await postJSON('schedules.json', body);
    replace(f.result, el('p', { text: `Saved ${s.name}: next run ${s.nextRun}.` }));
    load();
  } catch (e) {
    replace(f.result, el('p', { class: 'error', role: 'alert', text: 'Not saved: ' + e.message }));
  }
}

async function del(name) {
  try {
    await call('DELETE', `schedules/${enc(name)}.json`);
    say(`Schedule ${name} deleted.`);
  } catch (e) {
    say(`Delete ${name}: ${e.message}`, true);
  }
  load();
}
