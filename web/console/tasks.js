// The tasks page: one row per request (GET /rest/seed.json?requests=1),
// its lanes folded in and shown on demand, with what it asked (type,
// layer, grid set, format, levels, area), who asked, progress as the
// lanes wrote it (killed ones included), tiles/s, elapsed and ETA; the
// finished requests as long as the server lists them (across reloads);
// why tasks failed, shortened and counted. Polls every second while a
// request runs or waits, every 10 s when none does (15 s while the tab
// is hidden and idle): an idle console costs at most 6 requests a minute.
// Killing more than one task at once asks first, naming how many.
import { call, getJSON, stats } from './api.js';
import { el, replace, num, duration, say, confirmDialog } from './util.js';
import { groupFailures, Rate, thumbBox, seedLink, requestOrder, levelsText } from './model.js';

const FAST = 1000;
const IDLE = 10000;
const HIDDEN_IDLE = 15000;
const SVG = 'http://www.w3.org/2000/svg';
const THUMB_W = 48;
const THUMB_H = 24;

const requests = new Map(); // job → {data, rate, body, cells, lanes: Map(id → lane)}
const failures = new Map(); // task id → failure (GET /rest/failures.json)
let failuresTimer = 0;
let timer = 0;
let root;
let activeBody; // the table of running and pending requests
let finishedBody; // the table of finished ones
let keptNote;
let visible = false;
let lastActiveTasks = 0;
let built = 0; // rows built by the current update

const HEAD = ['Request', 'Type', 'Layer', 'Tile set', 'Levels', 'Area', 'Submitted by', 'Status', 'Progress', 'Tiles', 'Tiles/s', 'Elapsed', 'ETA', 'Actions'];

function table(id, caption) {
  return el('table', { class: 'tasks requests', id },
    el('caption', { class: 'sr-only', text: caption }),
    el('thead', {}, el('tr', {}, HEAD.map((h) => el('th', { scope: 'col', text: h })))));
}

export function init(section) {
  root = section;
  const killAll = el('button', { type: 'button', class: 'danger', id: 'kill-all', 'data-needs': 'kill', text: 'Kill all tasks', onclick: () => killEverything() });
  activeBody = table('requests-active', 'Running and pending requests');
  finishedBody = table('requests-finished', 'Finished requests');
  keptNote = el('span', { class: 'hint' });
  replace(root,
    el('h2', { id: 'h-tasks', text: 'Tasks' }),
    el('p', { class: 'toolbar' }, killAll, ' ', el('span', { id: 'task-summary' })),
    el('p', { class: 'hint', text: 'One row per request; its tasks (the lanes it runs in parallel) open with the button in its first cell.' }),
    el('div', { class: 'scroll' }, activeBody),
    el('h3', {}, 'Finished ', keptNote),
    el('div', { class: 'scroll' }, finishedBody),
    el('h3', { id: 'h-failures', text: 'Failures (kept 24 hours)' }),
    el('p', { class: 'toolbar' }, el('button', { type: 'button', id: 'failures-refresh', text: 'Refresh failures', onclick: () => loadFailures() })),
    el('ul', { id: 'failure-list', 'aria-labelledby': 'h-failures' }));
  // One listener for every button of the tables.
  root.addEventListener('click', (ev) => {
    const b = ev.target.closest('button');
    if (!b) return;
    if (b.dataset.killTask) killTasks([Number(b.dataset.killTask)]);
    else if (b.dataset.killJob) killRequest(Number(b.dataset.killJob));
    else if (b.dataset.toggle) toggle(Number(b.dataset.toggle));
  });
  document.addEventListener('visibilitychange', () => schedule(0));
  poll();
  loadFailures();
}

export function show(on) {
  // Coming back to the page: failures may have been recorded meanwhile.
  if (on && !visible && root) loadFailures();
  visible = on;
}

// remember is told of the tasks a submit created: the list is asked
// again at once.
export function remember() {
  schedule(0);
}

function schedule(ms) {
  clearTimeout(timer);
  timer = setTimeout(poll, ms);
}

async function poll() {
  let active = false;
  try {
    const d = await getJSON('seed.json?requests=1');
    active = update(d);
  } catch (e) {
    say('Task list: ' + e.message, true);
  }
  schedule(active ? FAST : document.hidden ? HIDDEN_IDLE : IDLE);
}

// update shows the server's answer; it returns whether a request is
// still running or pending.
function update(d) {
  const start = performance.now();
  performance.mark('tasks-update-start');
  const now = Date.now();
  const seen = new Set();
  built = 0;
  let running = 0;
  let pending = 0;
  let aborted = false;
  const list = (d.requests || []).slice().sort(requestOrder);
  for (const r of list) {
    seen.add(r.job);
    let q = requests.get(r.job);
    if (!q) {
      q = build(r);
      requests.set(r.job, q);
      built++;
    }
    const was = q.data?.status;
    q.data = r;
    q.rate.add(now, r.done);
    for (const l of r.tasks) {
      if (l.status === 'RUNNING') running++;
      else if (l.status === 'PENDING') pending++;
    }
    const isActive = r.status === 'RUNNING' || r.status === 'PENDING';
    const home = isActive ? activeBody : finishedBody;
    if (q.body.parentNode !== home || (was && was !== r.status && !isActive)) placeIn(home, q);
    // Ended otherwise than done: ask why (a failure kills the job's other
    // lanes, and lanes failing at once kill each other).
    if ((was === 'RUNNING' || was === 'PENDING') && (r.status === 'ABORTED' || r.status === 'KILLED')) aborted = true;
    fill(q, now);
  }
  for (const [job, q] of requests) {
    if (!seen.has(job)) { q.body.remove(); requests.delete(job); }
  }
  keptNote.textContent = `(as long as the server lists them: up to ${duration(d.keptSeconds || 0)})`;
  summarise(running, pending);
  lastActiveTasks = running + pending;
  if (aborted) {
    clearTimeout(failuresTimer);
    failuresTimer = setTimeout(loadFailures, 300);
  }
  performance.mark('tasks-update-end');
  const ms = performance.now() - start;
  // An update that builds rows for many new requests or tasks at once is
  // a load, not a refresh: its time is kept apart (tasks-build).
  const load = built > 8;
  performance.measure(load ? 'tasks-build' : 'tasks-update', 'tasks-update-start', 'tasks-update-end');
  stats.updates++;
  stats.lastUpdateMs = ms;
  if (load) stats.maxBuildMs = Math.max(stats.maxBuildMs || 0, ms);
  else stats.maxUpdateMs = Math.max(stats.maxUpdateMs, ms);
  return running + pending > 0;
}

// placeIn puts a request's rows in a table, in requestOrder.
function placeIn(tbl, q) {
  const after = [...tbl.tBodies].find((b) => b !== q.body && requestOrder(q.data, requests.get(Number(b.dataset.job))?.data || { job: 0, status: 'DONE' }) < 0);
  tbl.insertBefore(q.body, after || null);
}

function thumbnail(r) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${THUMB_W} ${THUMB_H}`);
  svg.setAttribute('width', THUMB_W);
  svg.setAttribute('height', THUMB_H);
  svg.setAttribute('class', 'thumb');
  svg.setAttribute('role', 'img');
  const frame = document.createElementNS(SVG, 'rect');
  frame.setAttribute('class', 'extent');
  Object.entries({ x: 0.5, y: 0.5, width: THUMB_W - 1, height: THUMB_H - 1 }).forEach(([k, v]) => frame.setAttribute(k, v));
  svg.append(frame);
  if (r.bounds && r.extent) {
    const box = document.createElementNS(SVG, 'rect');
    box.setAttribute('class', r.area ? 'area geometry' : 'area');
    Object.entries(thumbBox(r.bounds, r.extent, THUMB_W, THUMB_H)).forEach(([k, v]) => box.setAttribute(k, v));
    svg.append(box);
    const b = r.bounds.map((v) => +v.toPrecision(6)).join(', ');
    svg.setAttribute('aria-label', `${r.area ? 'A geometry within bounds' : 'Bounds'} ${b} of ${r.gridSet}`);
    svg.append(Object.assign(document.createElementNS(SVG, 'title'), { textContent: `${r.area ? 'geometry within ' : ''}${b}` }));
  } else {
    svg.setAttribute('aria-label', r.type === 'TRUNCATE' && !r.gridSet ? 'Every tile of a deleted layer' : 'Area unknown');
  }
  return svg;
}

// A request's row cells are clones of one prototype (cheaper than
// building them).
let protoRow = null;
let protoLane = null;

function build(r) {
  if (!protoRow) {
    protoRow = el('tr', { class: 'req' },
      el('th', { scope: 'row' }, el('button', { type: 'button', class: 'small toggle', 'aria-expanded': 'false' }, el('span'), el('span', { class: 'sr-only' })), ' ', el('span', { class: 'job' })),
      el('td'), el('td'), el('td', { class: 'tileset' }), el('td'), el('td'), el('td'), el('td', { class: 'status' }),
      el('td', {}, el('progress', { max: 1, value: 0 }), ' ', el('span', { class: 'pct' })),
      el('td', { class: 'n' }), el('td', { class: 'n rate' }), el('td', { class: 'n' }), el('td', { class: 'n' }),
      el('td', { class: 'actions' }, el('button', { type: 'button', class: 'small danger', text: 'Kill', 'data-needs': 'kill' }), ' ',
        el('a', { class: 'again', 'data-needs': 'seed' }, 'Again…', el('span', { class: 'sr-only' }))));
    protoLane = el('tr', { class: 'lane', hidden: true },
      el('td'), el('td', { class: 'lane-id', colSpan: 6 }), el('td', { class: 'status' }),
      el('td', {}, el('progress', { max: 1, value: 0 }), ' ', el('span', { class: 'pct' })),
      el('td', { class: 'n' }), el('td', { class: 'n rate' }), el('td'), el('td', { class: 'n' }),
      el('td', {}, el('button', { type: 'button', class: 'small', text: 'Kill', 'data-needs': 'kill' })));
  }
  const tr = protoRow.cloneNode(true);
  const c = tr.children;
  const body = el('tbody', { class: 'request', dataset: { job: r.job, layer: r.layer } }, tr);
  const toggleB = c[0].firstChild;
  toggleB.dataset.toggle = r.job;
  toggleB.lastChild.textContent = ` of request ${r.job}`;
  c[0].lastChild.textContent = `#${r.job}`;
  c[1].textContent = r.type;
  c[2].textContent = r.layer;
  c[3].textContent = r.gridSet ? `${r.gridSet} · ${r.format}` : '–';
  if (r.parameters && Object.keys(r.parameters).length) {
    c[3].append(el('div', { class: 'hint', text: Object.entries(r.parameters).map(([k, v]) => `${k}=${v}`).join(', ') }));
  }
  c[4].textContent = levelsText(r.zoomStart, r.zoomStop);
  c[5].append(thumbnail(r));
  c[6].textContent = r.submittedBy ? r.submittedBy.replace(/^account /, '') : '–';
  const bar = c[8].firstChild;
  bar.setAttribute('aria-label', `Progress of request ${r.job}`);
  const kill = c[13].firstChild;
  kill.dataset.killJob = r.job;
  kill.setAttribute('aria-label', `Kill request ${r.job}`);
  const again = c[13].lastChild;
  again.href = seedLink(r);
  again.lastChild.textContent = ` (the seed form with request ${r.job}'s fields)`;
  const why = el('tr', { class: 'why', hidden: true }, el('td'), el('td', { colSpan: HEAD.length - 1 }));
  body.append(why);
  return {
    body, tr, toggle: toggleB.firstChild, status: c[7], bar, pct: c[8].lastChild, tiles: c[9], rate: new Rate(), rateCell: c[10],
    elapsed: c[11], eta: c[12], kill, why, lanes: new Map(), open: false, data: null,
  };
}

function laneRow(q, l) {
  const tr = protoLane.cloneNode(true);
  const c = tr.children;
  tr.dataset.task = l.id;
  tr.hidden = !q.open;
  c[1].textContent = `task ${l.id}`;
  const bar = c[3].firstChild;
  bar.setAttribute('aria-label', `Progress of task ${l.id}`);
  const kill = c[8].firstChild;
  kill.dataset.killTask = l.id;
  kill.setAttribute('aria-label', `Kill task ${l.id}`);
  built++;
  const lane = { tr, status: c[2], bar, pct: c[3].lastChild, tiles: c[4], rateCell: c[5], eta: c[7], kill, rate: new Rate() };
  q.why.before(tr);
  q.lanes.set(l.id, lane);
  return lane;
}

const setText = (e, t) => { if (e.textContent !== t) e.textContent = t; };

function progress(o, done, total) {
  const frac = total > 0 ? done / total : 0;
  if (o.bar.max !== Math.max(total, 1)) o.bar.max = Math.max(total, 1);
  if (o.bar.value !== done) o.bar.value = done;
  setText(o.pct, Math.floor(frac * 1000) / 10 + ' %');
  const pc = String(Math.floor(frac * 100));
  if (o.tr.dataset.percent !== pc) o.tr.dataset.percent = pc;
  setText(o.tiles, `${num(done)} / ${num(total)}`);
}

// statusOf is a request's status as shown: a request whose lanes were
// all killed but one of which failed is ABORTED (a failure kills the
// job's other lanes; lanes failing at once kill each other).
function statusOf(r) {
  return r.status === 'KILLED' && r.tasks.some((l) => failures.has(l.id)) ? 'ABORTED' : r.status;
}

function fill(q, now) {
  const r = q.data;
  const active = r.status === 'RUNNING' || r.status === 'PENDING';
  const status = statusOf(r);
  setText(q.status, status);
  if (q.tr.dataset.status !== status) { q.body.dataset.status = status; q.tr.dataset.status = status; }
  progress(q, r.done, r.total);
  const v = q.rate.perSecond();
  setText(q.rateCell, r.status === 'RUNNING' && isFinite(v) ? num(Math.round(v)) : '–');
  setText(q.eta, r.status === 'RUNNING' && v > 0 ? duration((r.total - r.done) / v) : '–');
  const end = r.finished ? Date.parse(r.finished) : now;
  setText(q.elapsed, r.created ? duration((end - Date.parse(r.created)) / 1000) : '–');
  const killable = r.tasks.filter((l) => l.status === 'RUNNING' || l.status === 'PENDING').length;
  if (q.kill.disabled !== !killable) q.kill.disabled = !killable;
  if (q.kill.hidden !== !active) q.kill.hidden = !active;
  q.killable = killable;
  const n = r.tasks.length;
  setText(q.toggle, `${q.open ? '▾' : '▸'} ${n} task${n === 1 ? '' : 's'}`);
  for (const l of r.tasks) {
    const lane = q.lanes.get(l.id) || laneRow(q, l);
    const status = l.killed ? 'KILLED' : l.status;
    setText(lane.status, status);
    if (lane.tr.dataset.status !== status) lane.tr.dataset.status = status;
    if (l.finished && lane.tr.dataset.outcome !== status) lane.tr.dataset.outcome = status;
    progress(lane, l.done, l.total);
    lane.rate.add(now, l.done);
    const lv = lane.rate.perSecond();
    setText(lane.rateCell, l.status === 'RUNNING' && isFinite(lv) ? num(Math.round(lv)) : '–');
    setText(lane.eta, l.status === 'RUNNING' && lv > 0 ? duration((l.total - l.done) / lv) : '–');
    const over = !(l.status === 'RUNNING' || l.status === 'PENDING');
    if (lane.kill.disabled !== over) lane.kill.disabled = over;
  }
  showWhy(q);
}

// showWhy words why a request ended ABORTED (its lanes' failures, the
// same reason counted once).
function showWhy(q) {
  const r = q.data;
  const fs = r.status === 'ABORTED' || r.status === 'KILLED' ? r.tasks.map((l) => failures.get(l.id)).filter(Boolean) : [];
  q.why.hidden = !fs.length;
  if (!fs.length) return;
  const text = groupFailures(fs).map((g) => (g.count > 1 ? `${g.count} tasks: ` : '') + g.reason).join('; ');
  const cell = q.why.lastChild;
  if (cell.dataset.text !== text) {
    cell.dataset.text = text;
    replace(cell, el('span', { class: 'reason', text: 'Why: ' + text }));
  }
}

function toggle(job) {
  const q = requests.get(job);
  if (!q) return;
  q.open = !q.open;
  q.toggle.parentNode.setAttribute('aria-expanded', String(q.open));
  for (const lane of q.lanes.values()) lane.tr.hidden = !q.open;
  const n = q.data.tasks.length;
  setText(q.toggle, `${q.open ? '▾' : '▸'} ${n} task${n === 1 ? '' : 's'}`);
}

function summarise(running, pending) {
  const text = running + pending ? `${running} running, ${pending} pending` : 'No task is running or pending.';
  setText(document.getElementById('task-summary'), text);
  setText(document.getElementById('task-badge'), running + pending ? String(running + pending) : '');
}

// loadFailures reads why tasks failed (GET /rest/failures.json, kept 24
// hours): asked when the page opens and when it sees a request abort,
// never on a timer, so an idle page costs nothing more. The same failure
// of several tasks is listed once, with how many; the whole text is in a
// disclosure.
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
  const groups = groupFailures([...failures.values()]);
  replace(ul, groups.length ? groups.map((g) => el('li', { dataset: { tasks: g.ids.join(' '), count: g.count } },
    el('span', { text: `${new Date(g.at).toLocaleString()} ${g.count === 1 ? 'task' : `${g.count} tasks`} ${g.ids.join(', ')} (${g.layers.join(', ')}): ` }),
    el('span', { class: 'reason', text: g.reason }),
    g.full !== g.reason ? el('details', {}, el('summary', { text: 'The whole message' }), el('p', { class: 'full', text: g.full })) : null))
    : el('li', { text: 'No task failed in the last 24 hours.' }));
  for (const q of requests.values()) if (q.data) fill(q, Date.now());
}

// killTasks posts the kill of each task (kill_thread and thread_id, as
// GeoWebCache's seed form does), eight at a time; it returns how many
// it killed.
async function killTasks(ids) {
  let killed = 0;
  let finished = 0;
  let failed = '';
  const queue = ids.slice();
  const worker = async () => {
    while (queue.length) {
      const id = queue.shift();
      try {
        const r = await call('POST', 'seed', { body: 'kill_thread=1&thread_id=' + id, type: 'application/x-www-form-urlencoded' });
        if (r.text.split(/already finished/i)[0].includes(`[${id}:`)) killed++; else finished++;
      } catch (e) {
        failed = `task ${id}: ${e.message}`;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, ids.length) }, worker));
  if (failed) say(`Kill ${failed}`, true);
  else if (ids.length === 1) say(killed ? `Killed task ${ids[0]}.` : `Task ${ids[0]} had already finished.`);
  else say(`Killed ${killed} task${killed === 1 ? '' : 's'}${finished ? ` (${finished} had already finished)` : ''}.`);
  schedule(0);
  return killed;
}

// killRequest kills a request's running and pending tasks, asking first
// when they are more than one.
async function killRequest(job) {
  const q = requests.get(job);
  if (!q) return;
  const ids = q.data.tasks.filter((l) => l.status === 'RUNNING' || l.status === 'PENDING').map((l) => l.id);
  if (!ids.length) return;
  if (ids.length > 1 && !await confirmDialog(`Kill request ${job}?`,
    `This kills the ${ids.length} running and pending tasks of request ${job} (${q.data.type} of ${q.data.layer}). The tiles they wrote stay.`,
    `Kill ${ids.length} tasks`)) return;
  killTasks(ids);
}

// killEverything posts GeoWebCache's kill form for every layer
// (kill_all=all) once the count it names is confirmed.
async function killEverything() {
  // The count as the server has it now, not as the last poll saw it.
  let n = lastActiveTasks;
  try {
    const d = await getJSON('seed.json');
    n = (d['long-array-array'] || []).filter((r) => r[4] === 0 || r[4] === 1).length;
  } catch { /* the last poll's count */ }
  if (n === 0) { say('No task is running or pending.'); return; }
  if (n > 1 && !await confirmDialog('Kill every task?', `This kills all ${num(n)} running and pending tasks, of every layer. The tiles they wrote stay.`, `Kill ${num(n)} tasks`)) return;
  try {
    const r = await call('POST', 'seed', { body: 'kill_all=all', type: 'application/x-www-form-urlencoded' });
    const killed = [...r.text.split(/already finished/i)[0].matchAll(/\[(\d+):/g)].length;
    say(`Killed ${killed} task${killed === 1 ? '' : 's'} (all tasks of every layer).`);
  } catch (e) {
    say('Kill all: ' + e.message, true);
  }
  schedule(0);
}
