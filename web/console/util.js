// DOM and formatting helpers. Text from the server is only ever set as
// textContent or attribute values: never parsed as HTML.

// el builds an element: attrs sets properties (on*, class, dataset, aria-*
// and other attributes), children are nodes or strings (text nodes).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k in e && !k.includes('-') && k !== 'list' && k !== 'form') e[k] = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace empties e and appends the children.
export function replace(e, ...children) {
  e.replaceChildren();
  append(e, children);
  return e;
}

let uid = 0;
// field is a labelled control: <div class=field><label for>text</label>control</div>.
export function field(text, control, hint) {
  if (!control.id) control.id = 'f' + (++uid);
  const parts = [el('label', { htmlFor: control.id, text }), control];
  if (hint) {
    const h = el('small', { id: control.id + '-hint', text: hint });
    control.setAttribute('aria-describedby', h.id);
    parts.push(h);
  }
  return el('div', { class: 'field' }, parts);
}

export function select(options, value) {
  const s = el('select');
  setOptions(s, options, value);
  return s;
}

// setOptions replaces a select's options ([value, text] pairs or strings),
// keeping value when it is among them.
export function setOptions(s, options, value) {
  const keep = value !== undefined ? value : s.value;
  s.replaceChildren(...options.map((o) => {
    const [v, t] = Array.isArray(o) ? o : [o, o];
    return el('option', { value: v, text: t });
  }));
  if (options.some((o) => (Array.isArray(o) ? o[0] : o) === keep)) s.value = keep;
}

const nf = new Intl.NumberFormat('en-US');
export const num = (n) => (n === undefined || n === null ? '–' : nf.format(n));

export function bytes(n) {
  if (n === undefined || n === null) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + u[i];
}

export function duration(s) {
  if (!isFinite(s) || s < 0) return '–';
  s = Math.round(s);
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
}

export function usd(v) {
  if (v === undefined || v === null) return '–';
  return '$' + (v < 0.01 && v > 0 ? v.toPrecision(2) : v.toFixed(2));
}

export function debounce(fn, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}

// say shows a message in the status line (announced by screen readers).
export function say(text, isError) {
  const s = document.getElementById('status');
  s.textContent = text;
  s.className = isError ? 'error' : '';
}

// parseXML parses an XML document (never HTML).
export function parseXML(text) {
  const d = new DOMParser().parseFromString(text, 'application/xml');
  if (d.getElementsByTagName('parsererror').length) throw new Error('the server sent malformed XML');
  return d;
}

// childText returns the text of parent's first child element named name.
export function childText(parent, name) {
  for (const c of parent.children) if (c.localName === name) return c.textContent.trim();
  return '';
}

// confirmDialog asks in a modal dialog whether to do what text says: it
// resolves true when the button named action is pressed, false on
// "Cancel" or Escape.
export function confirmDialog(title, text, action) {
  return new Promise((resolve) => {
    const d = el('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title' });
    const done = (v) => { d.close(); d.remove(); resolve(v); };
    d.addEventListener('cancel', (ev) => { ev.preventDefault(); done(false); });
    d.append(el('h3', { id: 'confirm-title', text: title }), el('p', { text }),
      el('p', { class: 'toolbar' },
        el('button', { type: 'button', class: 'danger', id: 'confirm-yes', text: action, onclick: () => done(true) }),
        el('button', { type: 'button', id: 'confirm-no', text: 'Cancel', onclick: () => done(false) })));
    document.body.append(d);
    d.showModal();
  });
}

// when shows a time of the server's (RFC 3339) to the second, UTC.
export function when(t) {
  return t ? el('time', { dateTime: t, text: t.replace(/\.\d+Z$/, 'Z').replace('T', ' ') }) : '–';
}
