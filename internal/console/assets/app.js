// The console's shell: who the token is, the index picker, and a page per
// hash route (#/indexes, #/playground, #/plugins, #/traffic, #/roles).

import { get, setToken, token, may, APIError } from './api.js';
import { h, fill, errorBox } from './dom.js';
import * as indexes from './pages/indexes.js';
import * as playground from './pages/playground.js';
import * as plugins from './pages/plugins.js';
import * as traffic from './pages/traffic.js';
import * as roles from './pages/roles.js';

const pages = { indexes, playground, plugins, traffic, roles };
const main = document.getElementById('main');
const picker = document.getElementById('index');
const indexKey = 'quarry-index';

// state is what every page is given: who is signed in and which index is
// picked.
const state = { me: null, index: '' };
let leave = null; // the current page's clean-up (timers)
let seq = 0;      // renders started: a slow page does not overwrite a newer one

function login(message) {
  document.getElementById('who').replaceChildren();
  picker.replaceChildren();
  const input = h('input', { type: 'password', id: 'token', placeholder: 'qk_…', autocomplete: 'off' });
  const form = h('form', { class: 'card login', id: 'login' },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'This Quarry asks for a token (', h('code', {}, 'quarry token create --team TEAM'),
      '). It is kept in this tab only (sessionStorage) and sent as ', h('code', {}, 'Authorization: Bearer …'), '.'),
    message ? h('p', { class: 'error' }, message) : null,
    input, h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    setToken(input.value.trim());
    start();
  });
  main.replaceChildren(form);
}

function showWho(me) {
  const who = document.getElementById('who');
  const label = !me.auth ? 'open API (no tokens: loopback)' : me.operator ? 'operator' + (me.name ? ' · ' + me.name : '')
    : 'team ' + me.team + (may(me, 'admin') ? '' : ' · ' + me.scope + ' token');
  fill(who, h('span', { id: 'identity' }, label),
    me.auth ? h('button', { class: 'plain', type: 'button', onclick: () => { setToken(''); location.hash = '#/indexes'; start(); } }, 'Sign out') : null);
}

function fillPicker(me) {
  const saved = sessionStorage.getItem(indexKey);
  // The last one chosen; else the demo's (quarry serve --demo), which the
  // README's tour uses; else the first.
  state.index = me.indexes.includes(saved) ? saved : me.indexes.includes('menu') ? 'menu' : (me.indexes[0] || '');
  picker.replaceChildren(...me.indexes.map(n => h('option', { value: n, selected: n === state.index }, n)));
  picker.disabled = me.indexes.length === 0;
}

picker.addEventListener('change', () => {
  state.index = picker.value;
  sessionStorage.setItem(indexKey, state.index);
  route();
});

// allowed says whether me may open a page: one that exports scope (the
// scope its calls need) only with a token of that scope.
const allowed = (me, name) => may(me, pages[name].scope);

async function route() {
  if (!state.me) return;
  let name = (location.hash.replace(/^#\/?/, '').split('?')[0]) || 'indexes';
  if (!pages[name] || !allowed(state.me, name)) name = 'indexes';
  const page = pages[name];
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.page === name);
    a.hidden = !allowed(state.me, a.dataset.page);
  }
  if (leave) { leave(); leave = null; }
  delete document.body.dataset.ready;
  const mine = ++seq;
  const root = h('section', { id: 'page-' + name });
  main.replaceChildren(root);
  try {
    leave = await page.render(root, state, () => mine === seq) || null;
  } catch (err) {
    if (mine !== seq) return;
    if (err instanceof APIError && err.status === 401) { login(err.message); return; }
    root.append(errorBox(err));
  }
  if (mine === seq) document.body.dataset.ready = name; // for tests and screenshots
}

async function start() {
  state.me = null;
  delete document.body.dataset.ready;
  try {
    state.me = await get('/v1/me');
  } catch (err) {
    if (err instanceof APIError && err.status === 401) {
      login(token() ? err.message : '');
      return;
    }
    main.replaceChildren(errorBox(err));
    return;
  }
  showWho(state.me);
  fillPicker(state.me);
  route();
}

window.addEventListener('hashchange', route);
start();
