// The cache as it changes: pages follow a layer (watch) and hear, while a
// task of it runs, how many tiles its lanes have done, and once when the
// last one ends, so they draw what was written without a reload.
//
// It costs nothing while nothing runs: a layer's tasks are asked for
// (GET /rest/seed/{layer}.json, every timing.every ms) only after a task of it
// was submitted here (kick), or the overview counts one running, or the
// task list another page polls (GET /rest/seed.json, heard through
// api.onAnswer) shows a task this module had not seen; and only until
// none of the layer's tasks is pending or running.
import { getJSON, enc, onAnswer } from './api.js';

// timing.every is the time between two looks at a followed layer.
export const timing = { every: 2000 };

const watchers = new Map(); // layer → Set of callbacks
const following = new Map(); // layer → {timer, done}
const seenIds = new Set(); // task ids of the global list already heard
// liveStats counts this module's polls (window.consoleLive, read by the
// tests), and following tells how many layers it follows now.
export const liveStats = { polls: 0, ticks: 0, get following() { return following.size; } };
window.consoleLive = liveStats;

// watch calls cb({layer, running, done}) for each change of layer's
// running tasks' done count, and with running false when they end. It
// returns a function that stops it.
export function watch(layer, cb) {
  let set = watchers.get(layer);
  if (!set) watchers.set(layer, (set = new Set()));
  set.add(cb);
  return () => {
    set.delete(cb);
    if (!set.size) {
      watchers.delete(layer);
      const f = following.get(layer);
      if (f) { clearTimeout(f.timer); following.delete(layer); }
    }
  };
}

// kick tells that a task of layer may run (just submitted, or counted
// running): its tasks are followed from now, when some page watches it.
export function kick(layer) {
  if (!watchers.has(layer) || following.has(layer)) return;
  const f = { timer: 0, done: -1, running: false };
  following.set(layer, f);
  check(layer, f);
}

// setOverview kicks the layers the overview counts tasks of.
export function setOverview(o) {
  for (const l of o?.layers || []) if (l.tasks && (l.tasks.running || l.tasks.pending)) kick(l.name);
}

function notify(layer, ev) {
  liveStats.ticks++;
  for (const cb of watchers.get(layer) || []) {
    try { cb(ev); } catch (e) { console.error(e); }
  }
}

async function check(layer, f) {
  if (following.get(layer) !== f) return;
  let rows;
  try {
    liveStats.polls++;
    rows = (await getJSON(`seed/${enc(layer)}.json`))['long-array-array'] || [];
  } catch {
    rows = null; // asked again at the next turn
  }
  if (following.get(layer) !== f) return;
  if (rows) {
    const active = rows.filter((r) => r[4] === 0 || r[4] === 1);
    for (const r of rows) seenIds.add(r[3]);
    const done = active.reduce((s, r) => s + r[0], 0);
    if (!active.length) {
      following.delete(layer);
      if (f.running) notify(layer, { layer, running: false, done: f.done });
      return;
    }
    if (done !== f.done || !f.running) {
      f.done = done;
      f.running = true;
      notify(layer, { layer, running: true, done });
    }
  }
  f.timer = setTimeout(() => check(layer, f), timing.every);
}

// A task the global list shows for the first time may be of a watched
// layer: the tasks page's list by request (seed.json?requests=1) names
// its layer, which is followed; GeoWebCache's list does not, so each
// watched layer is followed once to learn.
onAnswer((path, v) => {
  if (path !== 'seed.json' && !path.startsWith('seed.json?')) return;
  if (Array.isArray(v.requests)) {
    for (const q of v.requests) {
      for (const t of q.tasks || []) {
        const fresh = !seenIds.has(t.id) && (t.status === 'RUNNING' || t.status === 'PENDING');
        seenIds.add(t.id);
        if (fresh) kick(q.layer);
      }
    }
    return;
  }
  const rows = v['long-array-array'] || [];
  const fresh = rows.filter((r) => !seenIds.has(r[3]) && (r[4] === 0 || r[4] === 1));
  for (const r of rows) seenIds.add(r[3]);
  if (fresh.length) for (const layer of watchers.keys()) kick(layer);
});
