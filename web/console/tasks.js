// The tasks page: every pending and running task, grouped by layer, with
// a progress bar, tiles/s and ETA computed from successive polls. Polls
// /rest/seed.json every second while a task is listed, every 10 s when
// none is (15 s while the tab is hidden and idle): an idle console costs
// at most 6 requests a minute.
import { call, getJSON, stats, enc } from './api.js';
import { el, replace, num, duration, say } from './util.js';

const FAST = 1000;
const IDLE = 10000;
const HIDDEN_IDLE = 15000;
const STATUS = { '-1': 'ABORTED', 0: 'PENDING', 1: 'RUNNING', 2: 'DONE' };

const tasks = new Map(); // id → {id, layer, done, total, status, samples:[[t, done]], row}
const layerOf = new Map(); // task id → layer (learned at submit or from a layer's list)
const finished = []; // tasks seen to end or be killed, newest first
const failures = new Map(); // task id → failure (GET /rest/failures.json)
let failuresTimer = 0;
let layerNames = () => [];
let timer = 0;
let root;
let body;
let visible = false;
const groups = new Map(); // layer → {section, tbody, summary}

export function init(section, names) {
  root = section;
  layerNames = names;
  const killAll = el('button', { type: 'button', class: 'danger', id: 'kill-all', 'data-needs': 'kill', text: 'Kill all tasks', onclick: () => kill('', 'all') });
  body = el('div', { id: 'task-groups' });
  replace(root,
    el('h2', { id: 'h-tasks', text: 'Tasks' }),
    el('p', { class: 'toolbar' }, killAll, ' ', el('span', { id: 'task-summary' })),
    body,
    el('h3', { text: 'Finished (seen by this page)' }),
    el('ul', { id: 'finished-list' }),
    el('h3', { id: 'h-failures', text: 'Failures (kept 24 hours)' }),
    el('p', { class: 'toolbar' }, el('button', { type: 'button', id: 'failures-refresh', text: 'Refresh failures', onclick: () => loadFailures() })),
    el('ul', { id: 'failure-list', 'aria-labelledby': 'h-failures' }));
  // One listener for every row's Kill button.
  body.addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-kill-task]');
    if (b) killTask(Number(b.dataset.killTask));
  });
  document.addEventListener('visibilitychange', () => schedule(0));
  poll();
  loadFailures();
}

export function show(on) {
  // Coming back to the page: failures may have been recorded meanwhile
  // by tasks this page never saw (created and ended between two polls).
  if (on && !visible && root) loadFailures();
  visible = on;
}

// remember records which layer new tasks belong to (from a submit's answer).
export function remember(layer, rows) {
  for (const r of rows) layerOf.set(r[3], layer);
  schedule(0);
}

function schedule(ms) {
  clearTimeout(timer);
  timer = setTimeout(poll, ms);
}

async function poll() {
  let rows = [];
  try {
    rows = (await getJSON('seed.json'))['long-array-array'] || [];
    await learnLayers(rows);
    update(rows);
  } catch (e) {
    say('Task list: ' + e.message, true);
  }
  const active = rows.length > 0;
  schedule(active ? FAST : document.hidden ? HIDDEN_IDLE : IDLE);
}

// learnLayers asks each layer for its list when a task of unknown layer
// shows up (GeoWebCache's list of all tasks does not name the layer).
async function learnLayers(rows) {
  if (!rows.some((r) => !layerOf.has(r[3]))) return;
  const names = await layerNames();
  const lists = await Promise.all(names.map((n) => getJSON(`seed/${enc(n)}.json`).then((d) => [n, d['long-array-array'] || []]).catch(() => [n, []])));
  for (const [n, list] of lists) for (const r of list) layerOf.set(r[3], n);
  for (const r of rows) if (!layerOf.has(r[3]) && names.length) layerOf.set(r[3], '(unknown layer)');
}

function rate(t) {
  const s = t.samples;
  if (s.length < 2) return NaN;
  const [t0, d0] = s[0];
  const [t1, d1] = s[s.length - 1];
  return t1 > t0 ? ((d1 - d0) * 1000) / (t1 - t0) : NaN;
}

function update(rows) {
  const start = performance.now();
  const now = Date.now();
  const seen = new Set();
  let created = 0;
  for (const r of rows) {
    const [done, total, , id, status] = r;
    seen.add(id);
    let t = tasks.get(id);
    if (!t) {
      t = { id, layer: layerOf.get(id), samples: [] };
      tasks.set(id, t);
      t.row = makeRow(t);
      created++;
      groupOf(t.layer).tbody.append(t.row.tr);
    }
    t.done = done; t.total = total; t.status = status;
    t.samples.push([now, done]);
    while (t.samples.length > 2 && now - t.samples[0][0] > 10000) t.samples.shift();
    if (status === 2 || status === -1) end(t, STATUS[status]);
    fill(t);
  }
  for (const t of [...tasks.values()]) if (!seen.has(t.id)) end(t, t.killed ? 'KILLED' : t.done >= t.total ? 'DONE' : 'GONE');
  for (const t of [...tasks.values()]) if (!seen.has(t.id)) remove(t);
  summarise(rows);
  const ms = performance.now() - start;
  stats.updates++;
  stats.lastUpdateMs = ms;
  // An update that builds rows for many new tasks at once is a load, not
  // a refresh: its time is kept apart.
  if (created > 8) stats.maxBuildMs = Math.max(stats.maxBuildMs || 0, ms);
  else stats.maxUpdateMs = Math.max(stats.maxUpdateMs, ms);
}

function groupOf(layer) {
  let g = groups.get(layer);
  if (g) return g;
  const tbody = el('tbody');
  const summary = el('span', { class: 'group-summary' });
  const section = el('section', { class: 'task-group', dataset: { layer } },
    el('h3', {}, el('span', { text: layer }), ' ', summary),
    el('p', { class: 'toolbar', 'data-needs': 'kill' },
      el('button', { type: 'button', text: 'Kill running', 'aria-label': `Kill running tasks of ${layer}`, onclick: () => kill(layer, 'running') }), ' ',
      el('button', { type: 'button', text: 'Kill pending', 'aria-label': `Kill pending tasks of ${layer}`, onclick: () => kill(layer, 'pending') }), ' ',
      el('button', { type: 'button', class: 'danger', text: 'Kill all', 'aria-label': `Kill all tasks of ${layer}`, onclick: () => kill(layer, 'all') })),
    el('table', { class: 'tasks' },
      el('caption', { class: 'sr-only', text: `Tasks of ${layer}` }),
      el('thead', {}, el('tr', {}, ['Task', 'Status', 'Progress', 'Tiles', 'Tiles/s', 'ETA', 'Action'].map((h) => el('th', { scope: 'col', text: h })))),
      tbody));
  g = { section, tbody, summary, layer };
  groups.set(layer, g);
  const after = [...groups.keys()].sort().find((k) => k > layer);
  body.insertBefore(section, after ? groups.get(after).section : null);
  return g;
}

// A task's row is a clone of one prototype (cheaper than building it).
let protoRow = null;

function makeRow(t) {
  if (!protoRow) {
    protoRow = el('tr', {}, el('td'), el('td'), el('td', {}, el('progress', { max: 1, value: 0 }), ' ', el('span', { class: 'pct' })),
      el('td', { class: 'n' }), el('td', { class: 'n' }), el('td', { class: 'n' }),
      el('td', {}, el('button', { type: 'button', class: 'small', text: 'Kill', 'data-needs': 'kill' })));
  }
  const tr = protoRow.cloneNode(true);
  const [idCell, status, barCell, tiles, rate, eta, action] = tr.children;
  const kb = action.firstChild;
  kb.dataset.killTask = t.id;
  kb.setAttribute('aria-label', `Kill task ${t.id}`);
  tr.dataset.task = t.id;
  idCell.textContent = String(t.id);
  const bar = barCell.firstChild;
  bar.setAttribute('aria-label', `Progress of task ${t.id}`);
  return { tr, bar, pct: barCell.lastChild, status, tiles, rate, eta, kill: kb };
}

function fill(t) {
  const r = t.row;
  const frac = t.total > 0 ? t.done / t.total : 0;
  const pct = Math.floor(frac * 1000) / 10 + ' %';
  const status = t.killed ? 'KILLED' : STATUS[t.status] || String(t.status);
  if (r.status.textContent !== status) { r.status.textContent = status; r.tr.dataset.status = status; }
  if (r.bar.max !== Math.max(t.total, 1)) r.bar.max = Math.max(t.total, 1);
  r.bar.value = t.done;
  if (r.pct.textContent !== pct) r.pct.textContent = pct;
  r.tr.dataset.percent = String(Math.floor(frac * 100));
  r.tiles.textContent = `${num(t.done)} / ${num(t.total)}`;
  const v = rate(t);
  r.rate.textContent = t.status === 1 && isFinite(v) ? num(Math.round(v)) : '–';
  r.eta.textContent = t.status === 1 && v > 0 ? duration((t.total - t.done) / v) : '–';
  const over = t.killed || t.ended;
  if (r.kill.disabled !== over) r.kill.disabled = over;
}

function end(t, outcome) {
  if (t.ended) return;
  t.ended = true;
  if (t.killed) outcome = 'KILLED'; // listed as ABORTED while it winds down
  finished.unshift({ id: t.id, layer: t.layer, outcome, done: t.done, total: t.total, at: new Date() });
  finished.length = Math.min(finished.length, 50);
  renderFinished();
  // An abort not asked for here, or a task gone unseen: ask why.
  if (outcome === 'ABORTED' || outcome === 'GONE') {
    clearTimeout(failuresTimer);
    failuresTimer = setTimeout(loadFailures, 300);
  }
}

function renderFinished() {
  const ul = document.getElementById('finished-list');
  replace(ul, finished.map((f) => {
    const why = f.outcome !== 'KILLED' ? failures.get(f.id) : undefined;
    return el('li', { dataset: { task: f.id, outcome: f.outcome } },
      `${f.at.toLocaleTimeString()} task ${f.id} (${f.layer}): ${f.outcome}, ${num(f.done)} of ${num(f.total)} tiles`,
      why ? el('span', { class: 'reason', text: ': ' + why.reason }) : null);
  }));
}

function remove(t) {
  t.row.tr.remove();
  tasks.delete(t.id);
  const g = groups.get(t.layer);
  if (g && !g.tbody.children.length) { g.section.remove(); groups.delete(t.layer); }
}

function summarise(rows) {
  const running = rows.filter((r) => r[4] === 1).length;
  const pending = rows.filter((r) => r[4] === 0).length;
  const text = rows.length ? `${running} running, ${pending} pending` : 'No task is running or pending.';
  const s = document.getElementById('task-summary');
  if (s.textContent !== text) s.textContent = text;
  const badge = document.getElementById('task-badge');
  const b = rows.length ? String(running + pending) : '';
  if (badge.textContent !== b) badge.textContent = b;
  for (const g of groups.values()) {
    let r = 0;
    let p = 0;
    for (const tr of g.tbody.children) {
      const t = tasks.get(Number(tr.dataset.task));
      if (t?.status === 1) r++; else if (t?.status === 0) p++;
    }
    const gt = `${r} running, ${p} pending`;
    if (g.summary.textContent !== gt) g.summary.textContent = gt;
  }
}

// loadFailures reads why tasks failed (GET /rest/failures.json, kept 24
// hours): asked when the page opens and when it sees a task abort, never
// on a timer, so an idle page costs nothing more.
async function loadFailures() {
  let d;
  try {
    d = await getJSON('failures.json');
  } catch (e) {
    say('Failures: ' + e.message, true);
    return;
  }
  failures.clear();
  for (const f of d?.failures || []) failures.set(f.id, f);
  const ul = document.getElementById('failure-list');
  const list = [...failures.values()];
  replace(ul, list.length ? list.map((f) => el('li', { dataset: { task: f.id } },
    el('span', { text: `${new Date(f.at).toLocaleString()} task ${f.id} (${f.layer}, ${f.type}, job ${f.job}), ${num(f.done)} of ${num(f.total)} tiles: ` }),
    el('span', { class: 'reason', text: f.reason }))) : el('li', { text: 'No task failed in the last 24 hours.' }));
  renderFinished();
}

// killTask posts the kill of one task (kill_thread and thread_id, as
// GeoWebCache's seed form does) to its layer's path.
async function killTask(id) {
  const t = tasks.get(id);
  const layer = t?.layer && t.layer !== '(unknown layer)' ? t.layer : '';
  try {
    const r = await call('POST', layer ? `seed/${enc(layer)}` : 'seed', { body: 'kill_thread=1&thread_id=' + id, type: 'application/x-www-form-urlencoded' });
    const terminated = /already finished/i.test(r.text) ? r.text.split(/already finished/i)[0] : r.text;
    if (terminated.includes(`[${id}:`)) {
      if (t) { t.killed = true; fill(t); }
      const f = finished.find((x) => x.id === id);
      if (f) { f.outcome = 'KILLED'; renderFinished(); }
      say(`Killed task ${id}.`);
    } else {
      say(`Task ${id} had already finished.`);
    }
  } catch (e) {
    say(`Kill task ${id}: ${e.message}`, true);
  }
  schedule(0);
}

// kill posts GeoWebCache's kill form for one layer ('' for all) and marks
// the tasks the answer lists as terminated.
async function kill(layer, code) {
  const what = layer ? `${code} tasks of ${layer}` : `${code} tasks of every layer`;
  try {
    const r = await call('POST', layer ? `seed/${enc(layer)}` : 'seed', { body: 'kill_all=' + code, type: 'application/x-www-form-urlencoded' });
    // The answer lists "[id: layer, TYPE, STATE]" items: the terminated
    // tasks, then those already finished.
    const terminated = r.text.split(/already finished/i)[0];
    let n = 0;
    for (const m of terminated.matchAll(/\[(\d+):/g)) {
      const id = Number(m[1]);
      const t = tasks.get(id);
      n++;
      if (t) { t.killed = true; fill(t); }
      // A poll may have seen it go before this answer came.
      const f = finished.find((x) => x.id === id);
      if (f) f.outcome = 'KILLED';
    }
    renderFinished();
    say(`Killed ${n} task${n === 1 ? '' : 's'} (${what}).`);
  } catch (e) {
    say(`Kill ${what}: ${e.message}`, true);
  }
  schedule(0);
}
