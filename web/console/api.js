// The REST client: every call is same-origin, relative to the console's
// own address (…/console/ → …/rest/), so a base path needs no setting;
// the browser sends the Basic credentials it holds for the origin.

const root = new URL('../rest/', location.href);

// stats counts the requests this page made (window.consoleStats, read by
// the tests and shown nowhere).
export const stats = { requests: [], updates: 0, lastUpdateMs: 0, maxUpdateMs: 0 };
window.consoleStats = stats;

export class ApiError extends Error {
  constructor(status, text, path) {
    super((text || '').trim() || `${status} from ${path}`);
    this.status = status;
  }
}

export const enc = encodeURIComponent;

// call sends a request to path (relative to /rest/) and returns
// {status, headers, text}; non-2xx answers throw an ApiError with the
// server's one-line message, unless ok lists the status.
export async function call(method, path, { body, type, headers, ok } = {}) {
  const h = new Headers(headers || {});
  if (type) h.set('Content-Type', type);
  stats.requests.push({ t: Date.now(), method, path });
  if (stats.requests.length > 2000) stats.requests.splice(0, 1000);
  const r = await fetch(new URL(path, root), { method, headers: h, body, credentials: 'same-origin', cache: 'no-store' });
  const text = await r.text();
  if (!r.ok && !(ok || []).includes(r.status)) throw new ApiError(r.status, text, path);
  return { status: r.status, headers: r.headers, text };
}

// answerListeners hear every JSON answer getJSON reads (onAnswer): a
// page may learn from another's polls without asking again.
const answerListeners = new Set();
export function onAnswer(fn) { answerListeners.add(fn); }

export async function getJSON(path, opts) {
  const r = await call('GET', path, opts);
  const v = r.status >= 200 && r.status < 300 ? JSON.parse(r.text) : null;
  if (v) for (const fn of answerListeners) fn(path, v);
  return v;
}

export async function postJSON(path, value, method = 'POST') {
  const r = await call(method, path, { body: JSON.stringify(value), type: 'application/json' });
  return r.text ? JSON.parse(r.text) : null;
}
