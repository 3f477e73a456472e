// The audit trail page (read only): who changed what and what was
// refused, newest first, filtered by layer and account, a page of 50 at a
// time with "Older" following the server's continuation.
import { getJSON } from './api.js';
import { el, replace, field, select, setOptions, num } from './util.js';

let list;
let f = {};
let next = '';

export function init(section) {
  list = el('div', { id: 'audit-list', 'aria-live': 'polite' });
  f = {
    layer: select([['', 'every layer']]),
    account: el('input', { type: 'text', id: 'audit-account', placeholder: 'every account' }),
    more: el('button', { type: 'button', id: 'audit-more', text: 'Older records', hidden: true, onclick: () => load(true) }),
  };
  const form = el('form', { id: 'audit-form', onsubmit: (ev) => { ev.preventDefault(); load(false); } },
    el('div', { class: 'row' }, field('Layer', f.layer), field('Account', f.account),
      el('div', { class: 'field' }, el('button', { type: 'submit', text: 'Show' }))));
  replace(section, el('h2', { id: 'h-audit', text: 'Audit trail' }),
    el('p', { class: 'hint', text: 'Every change made through the administration interface, and every refused request (refusals from one address within 10 s are counted in one record).' }),
    form, list, f.more);
}

export function setOverview(o) {
  setOptions(f.layer, [['', 'every layer'], ...o.layers.map((l) => l.name)]);
}

export function show(on) {
  if (on) load(false);
}

function who(r) {
  if (!r.account) return 'anonymous';
  return r.unverified ? `${r.account} (unverified)` : r.account;
}

function outcome(r) {
  let s = String(r.status);
  if (r.message) s += ' ' + r.message;
  if (r.count > 1) s += ` (×${num(r.count)})`;
  return s;
}

async function load(more) {
  const q = new URLSearchParams({ limit: '50' });
  if (f.layer.value) q.set('layer', f.layer.value);
  if (f.account.value.trim()) q.set('account', f.account.value.trim());
  if (more && next) q.set('after', next);
  let d;
  try {
    d = await getJSON('audit.json?' + q.toString());
  } catch (e) {
    replace(list, el('p', { class: 'error', text: e.message }));
    f.more.hidden = true;
    return;
  }
  next = d.next || '';
  f.more.hidden = !next;
  const rows = (d.records || []).map((r) => el('tr', { dataset: { id: r.id }, class: r.status >= 400 ? 'failed' : '' },
    el('td', {}, el('time', { dateTime: r.at, text: r.at.replace(/\.\d+Z$/, 'Z') })),
    el('td', { text: who(r) }), el('td', { text: r.role || '–' }), el('td', { text: r.address || '–' }),
    el('td', { text: `${r.method} ${r.path}` }), el('td', { text: r.layer || '–' }),
    el('td', { text: (r.tasks || []).join(', ') || '–' }), el('td', { text: outcome(r) })));
  let table = list.querySelector('#audit-table');
  if (!more || !table) {
    table = el('table', { id: 'audit-table' },
      el('caption', { class: 'sr-only', text: 'Audit records, newest first' }),
      el('thead', {}, el('tr', {}, ['When (UTC)', 'Who', 'Role', 'Address', 'Request', 'Layer', 'Tasks', 'Outcome'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}));
    replace(list, rows.length ? table : el('p', { text: 'No record.' }));
  }
  table.tBodies[0].append(...rows);
}
