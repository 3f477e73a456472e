// The accounts page (an administrator's): the accounts, those of the
// accounts file or secret ("configured", read-only here) and those added
// at run time ("stored"), which can have their role changed, a new
// password set, or be removed (which revokes the API tokens they issued).
// REST: GET/POST /rest/accounts.json, PUT/DELETE /rest/accounts/{name}.json.
import { call, getJSON, postJSON, enc } from './api.js';
import { el, replace, field, select, say, confirmDialog, when } from './util.js';

let list;
let f = {};
let me = null;
let roles = ['viewer', 'operator', 'admin'];

export function init(section) {
  list = el('div', { id: 'accounts-list', 'aria-live': 'polite' });
  f = {
    name: el('input', { type: 'text', id: 'account-name', autocomplete: 'off', required: true }),
    role: select(roles, 'viewer'),
    password: el('input', { type: 'password', id: 'account-password', autocomplete: 'new-password', required: true }),
    again: el('input', { type: 'password', id: 'account-password2', autocomplete: 'new-password', required: true }),
    result: el('div', { id: 'account-result', 'aria-live': 'polite' }),
  };
  f.role.id = 'account-role';
  const form = el('form', { id: 'account-form', novalidate: true, onsubmit: add },
    el('div', { class: 'row' }, field('Name', f.name), field('Role', f.role),
      field('Password', f.password), field('Password again', f.again)),
    el('p', {}, el('button', { type: 'submit', id: 'account-add', text: 'Add the account' })));
  replace(section, el('h2', { id: 'h-accounts', text: 'Accounts' }),
    el('p', { class: 'hint', text: 'The accounts that may sign in to the console and the REST interface. Accounts of the accounts file (or secret) are configured there and shown read-only; accounts added here are kept in the task store. Removing an account revokes the API tokens it issued.' }),
    el('h3', { text: 'Add an account' }), form, f.result,
    el('h3', { text: 'Accounts' }), list);
}

// setMe takes whoami's answer: the account itself, and the roles.
export function setMe(m) {
  me = m;
  roles = m.roles.map((r) => r.role);
  if (f.role) {
    const keep = f.role.value;
    replace(f.role, roles.map((r) => el('option', { value: r, text: r })));
    f.role.value = roles.includes(keep) ? keep : roles[0];
  }
}

export function show(on) {
  if (on) load();
}

async function add(ev) {
  ev.preventDefault();
  const name = f.name.value.trim();
  const problem = !name ? 'Give a name.'
    : !f.password.value ? 'Give a password.'
    : f.password.value !== f.again.value ? 'The two passwords differ.' : '';
  if (problem) {
    replace(f.result, el('p', { class: 'error', role: 'alert', text: 'Not added: ' + problem }));
    return;
  }
  try {
    const a = await postJSON('accounts.json', { name, password: f.password.value, role: f.role.value });
    replace(f.result, el('p', { text: `Account ${a.name} added (${a.role}).` }));
    f.name.value = f.password.value = f.again.value = '';
  } catch (e) {
    replace(f.result, el('p', { class: 'error', role: 'alert', text: 'Not added: ' + e.message }));
  }
  load();
}

async function load() {
  let d;
  try {
    d = await getJSON('accounts.json');
  } catch (e) {
    replace(list, el('p', { class: 'error', text: e.message }));
    return;
  }
  const accounts = (d.accounts || []).slice().sort((a, b) => a.name.localeCompare(b.name));
  const rows = accounts.map((a) => {
    const self = me && a.name === me.name;
    const configured = a.source === 'configured';
    let actions;
    if (configured) {
      actions = el('span', { class: 'notes', text: 'configured in the accounts file: change it there' });
    } else {
      const role = select(roles, a.role);
      role.setAttribute('aria-label', `Role of ${a.name}`);
      role.disabled = self;
      actions = el('div', { class: 'toolbar' },
        role,
        el('button', { type: 'button', text: 'Change role', disabled: self, 'aria-label': `Change the role of ${a.name}`, title: self ? 'You cannot change your own role' : undefined, onclick: () => changeRole(a, role.value) }),
        el('button', { type: 'button', text: 'New password…', 'aria-label': `Set a new password for ${a.name}`, onclick: (ev) => newPassword(a, ev.target.closest('tr')) }),
        el('button', { type: 'button', class: 'danger', text: 'Remove…', disabled: self, 'aria-label': `Remove ${a.name}`, title: self ? 'You cannot remove your own account' : undefined, onclick: () => remove(a) }));
    }
    return el('tr', { dataset: { account: a.name, source: a.source } },
      el('th', { scope: 'row', text: a.name + (self ? ' (you)' : '') }), el('td', { class: 'role', text: a.role }),
      el('td', { text: configured ? 'configured' : 'added here' }),
      el('td', {}, when(a.created)), el('td', {}, a.updated ? [when(a.updated), a.by ? ` by ${a.by}` : ''] : a.by ? `by ${a.by}` : '–'),
      el('td', {}, actions));
  });
  replace(list, rows.length ? el('table', { id: 'accounts-table' },
    el('caption', { class: 'sr-only', text: 'Accounts' }),
    el('thead', {}, el('tr', {}, ['Name', 'Role', 'Source', 'Created (UTC)', 'Changed (UTC)', 'Actions'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows)) : el('p', { text: 'No account.' }),
  accounts.some((a) => a.source === 'configured')
    ? el('p', { class: 'hint', text: 'Configured accounts come from the accounts file (TILECACHE_ACCOUNTS_FILE) or its secret: the console cannot change or remove them.' }) : null);
}

async function changeRole(a, role) {
  if (role === a.role) return;
  try {
    const r = await postJSON(`accounts/${enc(a.name)}.json`, { role }, 'PUT');
    say(`Account ${a.name} is now ${r ? r.role : role}.`);
  } catch (e) {
    say(`Role of ${a.name}: ${e.message}`, true);
  }
  load();
}

function newPassword(a, row) {
  const p1 = el('input', { type: 'password', autocomplete: 'new-password', 'aria-label': `New password for ${a.name}` });
  const p2 = el('input', { type: 'password', autocomplete: 'new-password', 'aria-label': `New password for ${a.name}, again` });
  const msg = el('span', { role: 'status' });
  const box = el('tr', { class: 'password-row', dataset: { passwordFor: a.name } }, el('td', { colSpan: 6 },
    el('form', { class: 'toolbar', onsubmit: async (ev) => {
      ev.preventDefault();
      if (!p1.value) { msg.textContent = 'Give a password.'; msg.className = 'error'; return; }
      if (p1.value !== p2.value) { msg.textContent = 'The two passwords differ.'; msg.className = 'error'; return; }
      try {
        await postJSON(`accounts/${enc(a.name)}.json`, { password: p1.value }, 'PUT');
        box.remove();
        say(`The password of ${a.name} is changed.`);
      } catch (e) {
        msg.textContent = e.message;
        msg.className = 'error';
      }
    } }, `New password for ${a.name}: `, p1, p2,
    el('button', { type: 'submit', text: 'Set the password' }),
    el('button', { type: 'button', text: 'Cancel', onclick: () => box.remove() }), msg)));
  row.parentNode.querySelector(`tr.password-row`)?.remove();
  row.after(box);
  p1.focus();
}

async function remove(a) {
  const ok = await confirmDialog(`Remove ${a.name}?`,
    `The account ${a.name} (${a.role}) can no longer sign in, and every API token it issued is revoked. This cannot be undone.`, 'Remove');
  if (!ok) return;
  try {
    await call('DELETE', `accounts/${enc(a.name)}.json`);
    say(`Account ${a.name} removed; the tokens it issued are revoked.`);
  } catch (e) {
    say(`Remove ${a.name}: ${e.message}`, true);
  }
  load();
}
