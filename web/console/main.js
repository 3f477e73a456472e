// The console: a page per hash (#tasks, #seed, #layers, #quota,
// #schedules, and an administrator's #audit, #tokens, #accounts), all in
// one document; the task list polls in the background so the navigation
// shows how many tasks run.
import 'ol/ol.css';
import './console.css';
import * as tasks from './tasks.js';
import * as seed from './seed.js';
import * as layers from './layers.js';
import * as quota from './quota.js';
import * as schedules from './schedules.js';
import * as audit from './audit.js';
import * as tokens from './tokens.js';
import * as accounts from './accounts.js';
import * as tileToken from './tiletoken.js';
import { loadOverview } from './model.js';
import { getJSON } from './api.js';
import { say } from './util.js';

const pages = { tasks, seed, layers, quota, schedules, audit, tokens, accounts };
let limitedTo = null; // the layers a layer-limited principal may use (whoami)
let overview = { layers: [], gridSets: [] };
let overviewLoaded;
const firstOverview = new Promise((resolve) => { overviewLoaded = resolve; });
window.consoleReady = false;

async function refreshOverview() {
  try {
    overview = await loadOverview();
    seed.setOverview(overview);
    layers.setOverview(overview);
    quota.setOverview(overview);
    schedules.setOverview(overview);
    audit.setOverview(overview);
    tokens.setOverview(overview);
    tileToken.setLayers(overview.layers, limitedTo);
  } catch (e) {
    say('Layers: ' + e.message, true);
  }
  overviewLoaded();
  return overview;
}

// loadWhoAmI asks who the console's account is and what its role may do
// (GET /rest/whoami.json) and shows only that: every control marked
// data-needs="<capability>" is hidden by console.css unless the body's
// data-may lists the capability. Until it is known, none is shown (the
// server refuses what the role may not do in any case).
async function loadWhoAmI() {
  const note = document.getElementById('whoami');
  try {
    const me = await getJSON('whoami.json');
    document.body.dataset.role = me.role;
    document.body.dataset.may = me.capabilities.join(' ');
    // Pages whose forms a role may only read listen for this.
    document.dispatchEvent(new Event('console-role'));
    accounts.setMe(me);
    tokens.setMe(me);
    if (me.layers) {
      limitedTo = me.layers;
      tileToken.setLayers(overview.layers, limitedTo);
    }
    const all = me.roles[me.roles.length - 1].capabilities;
    const hidden = all.filter((c) => !me.capabilities.includes(c));
    note.textContent = `Signed in as ${me.name} (${me.role})` +
      (hidden.length ? `: controls of what this role may not do are hidden (${hidden.join(', ')}).` : '.');
  } catch (e) {
    note.textContent = 'Who you are could not be read: no control that changes anything is shown.';
    say('Who am I: ' + e.message, true);
  }
}

function route() {
  // #seed?layer=…: a page's address may carry a query (tasks.js and
  // layers.js link to the seed form prefilled).
  const name = (location.hash.slice(1) || 'tasks').split(/[/?]/)[0];
  const current = pages[name] ? name : 'tasks';
  for (const [n, mod] of Object.entries(pages)) {
    const sec = document.getElementById('page-' + n);
    const on = n === current;
    if (sec.hidden === on) sec.hidden = !on;
    mod.show?.(on);
  }
  for (const a of document.querySelectorAll('nav a[data-page]')) {
    if (a.dataset.page === current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${document.querySelector(`nav a[data-page=${current}]`).firstChild.textContent.trim()} · tilecache console`;
}

async function start() {
  window.consoleStartAt = performance.now();
  const who = loadWhoAmI();
  const loading = refreshOverview();
  tasks.init(document.getElementById('page-tasks'), () => firstOverview.then(() => overview.layers.map((l) => l.name)));
  seed.init(document.getElementById('page-seed'));
  layers.init(document.getElementById('page-layers'), refreshOverview);
  quota.init(document.getElementById('page-quota'), refreshOverview);
  schedules.init(document.getElementById('page-schedules'));
  audit.init(document.getElementById('page-audit'));
  tokens.init(document.getElementById('page-tokens'));
  accounts.init(document.getElementById('page-accounts'));
  window.addEventListener('hashchange', route);
  route();
  await loading;
  await who;
  window.consoleReady = true;
  window.consoleReadyAt = performance.now();
  document.body.dataset.ready = '1';
}

start();
