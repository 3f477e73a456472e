// The console's tile token: the tiles of a private layer are served only
// to a request carrying a tile token for it (docs/security.md, "Private
// layers"), so the console asks for one (POST /rest/tiletokens.json) for
// the private layers its account may see, adds it to their tile URLs
// (?token=) in every map it draws, and asks again before it expires.
// Public layers' URLs stay as they are (the edge caches them by URL).
import { postJSON } from './api.js';
import { say } from './util.js';

// The token is asked for state.lifetime seconds (an hour) and renewed
// when a fifth of it is left (counted from its receipt, so the browser's
// clock does not matter), or at once when the private layers change.
const RENEW = 0.2;

// state is window.consoleTileToken (read by the tests, which may shorten
// lifetime and call renew): the token, the layers it opens, its expiry
// (Unix seconds), how many were issued, the last error.
const state = { token: '', layers: [], expiresAt: 0, issued: 0, error: '', lifetime: 3600, renew: () => renew(state.layers) };
window.consoleTileToken = state;

let privateLayers = new Set();
let timer = 0;
let pending = null;
const listeners = new Set();

// isPrivate tells whether the layer named is private.
export function isPrivate(layer) {
  return privateLayers.has(layer);
}

// tokenFor returns the token to add to layer's tile URLs: '' for a
// public layer, null for a private layer while no token is held.
export function tokenFor(layer) {
  if (!privateLayers.has(layer)) return '';
  return state.token && state.layers.includes(layer) ? state.token : null;
}

// withToken adds the layer's token to a tile URL, when it needs one.
export function withToken(url, layer) {
  const t = tokenFor(layer);
  if (!t) return url;
  return url + (url.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(t);
}

// onChange calls fn whenever the token changes (maps redraw a private
// layer whose tiles were asked for without one).
export function onChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// setLayers takes the overview's layers (and the layers a layer-limited
// principal is limited to, from whoami, or null): the token is asked for
// the private ones it may see, at once when they changed.
export function setLayers(layers, limitedTo) {
  const names = layers.filter((l) => l.private && (!limitedTo || limitedTo.includes(l.name))).map((l) => l.name).sort();
  privateLayers = new Set(layers.filter((l) => l.private).map((l) => l.name));
  if (names.join('\n') === [...state.layers].sort().join('\n') && state.token) return;
  renew(names);
}

async function renew(names) {
  clearTimeout(timer);
  if (!names.length) {
    Object.assign(state, { token: '', layers: [], expiresAt: 0 });
    notify();
    return;
  }
  const mine = (pending = {});
  try {
    const lifetime = state.lifetime;
    const a = await postJSON('tiletokens.json', { layers: names, lifetime });
    if (pending !== mine) return; // a newer request went out
    Object.assign(state, { token: a.token, layers: names, expiresAt: a.expiresAt, issued: state.issued + 1, error: '' });
    timer = setTimeout(() => renew(names), Math.max(1000, lifetime * 1000 * (1 - RENEW)));
  } catch (e) {
    if (pending !== mine) return;
    state.error = e.message;
    say(`Tile token for the private layers (${names.join(', ')}): ${e.message}; their tiles are not shown`, true);
    // Try again in a minute (the tiles of private layers stay empty).
    timer = setTimeout(() => renew(names), 60_000);
  }
  notify();
}

function notify() {
  for (const fn of listeners) fn(state);
}
