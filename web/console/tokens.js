// The API tokens page (an administrator's): the tokens issued (without
// their secrets), a form to issue one — its bearer value shown this once,
// with a copy button — and a revoke button behind a confirmation.
// REST: GET/POST /rest/tokens.json, DELETE /rest/tokens/{id}.json.
import { call, getJSON, postJSON, enc } from './api.js';
import { el, replace, field, select, say, confirmDialog, when } from './util.js';

let list;
let f = {};
let me = null;
let layerNames = [];
let shown = false;

const LIFETIMES = [['24h', '1 day'], ['168h', '7 days'], ['720h', '30 days'], ['2160h', '90 days'], ['8760h', '1 year']];

export function init(section) {
  list = el('div', { id: 'tokens-list', 'aria-live': 'polite' });
  f = {
    role: select([]),
    layers: el('fieldset', { id: 'token-layers' }, el('legend', { text: 'Layers (none chosen: every layer)' })),
    lifetime: select(LIFETIMES, '720h'),
    label: el('input', { type: 'text', id: 'token-label', maxLength: 200, placeholder: 'e.g. nightly reseed pipeline' }),
    result: el('div', { id: 'token-result', 'aria-live': 'polite' }),
  };
  f.role.id = 'token-role';
  f.lifetime.id = 'token-lifetime';
  const form = el('form', { id: 'token-form', onsubmit: issue },
    el('div', { class: 'row' }, field('Role', f.role, 'At most your own role.'), field('Lifetime', f.lifetime), field('Label', f.label)),
    f.layers,
    el('p', {}, el('button', { type: 'submit', id: 'token-issue', text: 'Issue the token' })));
  replace(section, el('h2', { id: 'h-tokens', text: 'API tokens' }),
    el('p', { class: 'hint', text: 'A token stands for an account in scripts and pipelines (Authorization: Bearer …): it has a role, optionally the layers it is limited to, and an expiry, and can be revoked without changing anyone\'s password.' }),
    el('h3', { text: 'Issue a token' }), form, f.result,
    el('h3', { text: 'Tokens' }), list);
  setRoles();
}

// setMe takes whoami's answer: the roles offered are those up to the
// account's own.
export function setMe(m) {
  me = m;
  setRoles();
}

function setRoles() {
  if (!f.role || !me) return;
  const names = me.roles.map((r) => r.role);
  const upTo = names.slice(0, names.indexOf(me.role) + 1);
  const keep = f.role.value;
  replace(f.role, upTo.map((r) => el('option', { value: r, text: r })));
  f.role.value = upTo.includes(keep) ? keep : upTo[0] || '';
}

export function setOverview(o) {
  const names = o.layers.map((l) => l.name);
  if (names.join('\n') === layerNames.join('\n')) return;
  layerNames = names;
  const checked = new Set([...f.layers.querySelectorAll('input:checked')].map((c) => c.value));
  replace(f.layers, el('legend', { text: 'Layers (none chosen: every layer)' }),
    names.map((n, i) => el('div', { class: 'radio' },
      el('input', { type: 'checkbox', id: 'token-layer-' + i, value: n, checked: checked.has(n) }),
      el('label', { htmlFor: 'token-layer-' + i, text: n }))));
}

export function show(on) {
  if (on && !shown) replace(f.result);
  shown = on;
  if (on) load();
}

async function issue(ev) {
  ev.preventDefault();
  const body = { role: f.role.value, lifetime: f.lifetime.value };
  const layers = [...f.layers.querySelectorAll('input:checked')].map((c) => c.value);
  if (layers.length) body.layers = layers;
  if (f.label.value.trim()) body.label = f.label.value.trim();
  let t;
  try {
    t = await postJSON('tokens.json', body);
  } catch (e) {
    replace(f.result, el('p', { class: 'error', role: 'alert', text: 'Not issued: ' + e.message }));
    return;
  }
  const value = el('input', { type: 'text', id: 'token-value', readOnly: true, value: t.token, size: Math.min(80, t.token.length), 'aria-label': 'The token' });
  const copied = el('span', { role: 'status' });
  const copy = el('button', { type: 'button', id: 'token-copy', text: 'Copy', onclick: async () => {
    value.select();
    try {
      await navigator.clipboard.writeText(t.token);
      copied.textContent = ' Copied.';
    } catch {
      copied.textContent = ' Select the text and copy it (the browser refused the clipboard).';
    }
  } });
  replace(f.result, el('div', { class: 'once', role: 'alert' },
    el('p', {}, el('strong', { text: `Token ${t.id} issued (${t.role}${t.layers ? ', layers ' + t.layers.join(', ') : ''}, expires ${t.expires.replace(/\.\d+Z$/, 'Z')}).` })),
    el('p', { text: 'Copy it now: you will not see it again. Send it as Authorization: Bearer <token>.' }),
    el('p', { class: 'toolbar' }, value, copy, copied),
    el('p', {}, el('button', { type: 'button', id: 'token-done', text: 'I have copied it', onclick: () => replace(f.result) }))));
  value.select();
  load();
}

async function load() {
  let d;
  try {
    d = await getJSON('tokens.json');
  } catch (e) {
    replace(list, el('p', { class: 'error', text: e.message }));
    return;
  }
  const rows = (d.tokens || []).slice().reverse().map((t) => el('tr', { dataset: { token: t.id, state: t.state }, class: t.state === 'active' ? '' : 'inactive' },
    el('th', { scope: 'row' }, el('code', { text: t.id })), el('td', { text: t.role }),
    el('td', { text: (t.layers || []).join(', ') || 'every layer' }), el('td', { text: t.label || '–' }),
    el('td', { text: t.creator }), el('td', {}, when(t.created)), el('td', {}, when(t.expires)),
    el('td', { class: 'state', text: t.state === 'revoked' && t.revoked ? `revoked ${t.revoked.replace(/\.\d+Z$/, 'Z').replace('T', ' ')}` : t.state }),
    el('td', {}, t.state === 'active'
      ? el('button', { type: 'button', class: 'danger small', text: 'Revoke…', 'aria-label': `Revoke token ${t.id}`, onclick: () => revoke(t) })
      : '')));
  replace(list, rows.length ? el('table', { id: 'tokens-table' },
    el('caption', { class: 'sr-only', text: 'API tokens, newest first' }),
    el('thead', {}, el('tr', {}, ['Id', 'Role', 'Layers', 'Label', 'Issued by', 'Created (UTC)', 'Expires (UTC)', 'State', 'Actions'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows)) : el('p', { text: 'No token.' }));
}

async function revoke(t) {
  const ok = await confirmDialog(`Revoke token ${t.id}?`,
    `Token ${t.id}${t.label ? ' (' + t.label + ')' : ''}, ${t.role}, issued by ${t.creator}, stops working within seconds in every process. This cannot be undone.`, 'Revoke');
  if (!ok) return;
  try {
    await call('DELETE', `tokens/${enc(t.id)}.json`);
    say(`Token ${t.id} revoked.`);
  } catch (e) {
    say(`Revoke ${t.id}: ${e.message}`, true);
  }
  load();
}
