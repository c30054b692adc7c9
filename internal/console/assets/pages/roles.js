// Roles: what runs on NATS (micro discovery: brokers, admin APIs; replica
// discovery: searchers) and this node's own health and readiness.

import { get } from '../api.js';
import { h, table, num, ago } from '../dom.js';

async function probe(path) {
  const resp = await fetch(path);
  return { ok: resp.ok, status: resp.status, text: (await resp.text()).trim() };
}

export async function render(root, state, alive) {
  root.append(h('h1', {}, 'Roles'));
  const [health, ready] = await Promise.all([probe('/healthz'), probe('/readyz')]);
  if (!alive()) return;
  root.append(h('div', { class: 'card', id: 'node' }, h('h2', {}, 'This node'),
    table(['probe', 'status', 'answer'], [
      h('tr', {}, h('td', {}, 'GET /healthz'), h('td', {}, badge(health)), h('td', { class: 'small mono' }, health.text)),
      h('tr', {}, h('td', {}, 'GET /readyz'), h('td', {}, badge(ready)), h('td', { class: 'small mono' }, ready.text.slice(0, 400))),
    ])));
  if (!state.me.operator) {
    root.append(h('p', { class: 'muted' }, 'What else runs on NATS is for operators (GET /v1/roles needs an operator token), as NATS discovery subjects are for operators\' NATS users.'));
    return;
  }
  const roles = await get('/v1/roles');
  if (!alive()) return;
  const byName = new Map();
  for (const svc of roles.services) {
    if (!byName.has(svc.name)) byName.set(svc.name, []);
    byName.get(svc.name).push(svc);
  }
  const label = {
    quarry: 'Brokers (micro service quarry)', 'quarry-admin': 'Admin APIs (micro service quarry-admin, beside each broker)',
    'quarry-searcher': 'Searchers (micro service quarry-searcher)', 'quarry-indexer': 'Indexers (micro service quarry-indexer)',
  };
  const order = ['quarry', 'quarry-searcher', 'quarry-indexer', 'quarry-admin'];
  const names = [...byName.keys()].sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99) || a.localeCompare(b));
  for (const name of names) {
    const list = byName.get(name);
    const rows = list.map(svc => {
      // A searcher's or indexer's status endpoint carries what it says
      // of itself (api.RoleStatus).
      const status = (svc.endpoints.find(e => e.name === 'status') || {}).data;
      return h('tr', { class: 'service', dataset: { name: svc.name } },
        // A searcher by its replica id (as the Indexes page names it).
        h('td', { class: 'mono small', title: 'micro service instance ' + svc.id }, status && status.id ? status.id : svc.id), h('td', {}, svc.version), h('td', { class: 'small' }, ago(svc.started)),
        h('td', {}, status ? h('span', { class: 'badge ' + (status.draining ? 'warn' : status.ready ? 'ok' : 'bad') }, status.draining ? 'draining' : status.ready ? 'ready' : 'loading') : h('span', { class: 'badge ok' }, 'answering')),
        h('td', { class: 'small' }, status ? shardList(status.shards) : '–'),
        // A searcher's shard requests come on subjects of their own: it
        // counts them in its status; the rest count micro requests.
        h('td', { class: 'num' }, num(status && status.role === 'searcher' ? status.requests || 0 : svc.endpoints.reduce((a, e) => a + e.num_requests, 0))),
        h('td', { class: 'num' }, num(status && status.role === 'searcher' ? status.errors || 0 : svc.endpoints.reduce((a, e) => a + e.num_errors, 0))),
        h('td', { class: 'small' }, svc.endpoints.filter(e => e.last_error).map(e => e.name + ': ' + e.last_error).join('; ') || '–'));
    });
    root.append(h('div', { class: 'card' }, h('h2', {}, label[name] || name),
      h('p', { class: 'muted small' }, list[0].description || ''),
      table(['instance', 'version', 'started', 'state', 'shards (generation, lag)', h('th', { class: 'num' }, 'requests'), h('th', { class: 'num' }, 'errors'), 'last error'], rows, { class: 'services' })));
  }
  if (!roles.services.length) root.append(h('p', { class: 'bad' }, 'No micro service answered: no broker is running.'));
  const searchers = Object.entries(roles.searchers).sort();
  root.append(h('div', { class: 'card' }, h('h2', {}, 'Shard replicas answering (the discovery brokers route by)'),
    searchers.length ? table(['replica', 'serves (index/shard)'], searchers.map(([id, shards]) =>
      h('tr', { class: 'searcher' }, h('td', { class: 'mono small' }, id), h('td', {}, shards.sort().join(', ')))), { id: 'searchers' })
      : h('p', { class: 'bad' }, 'No searcher answered for any shard.')));
}

function shardList(shards) {
  if (!shards || !shards.length) return 'none';
  return shards.map(s => s.index + '/' + s.shard + ' (g' + s.generation + (s.lag ? ', lag ' + s.lag : '') + ')').join(', ');
}

function badge(p) {
  return h('span', { class: 'badge ' + (p.ok ? 'ok' : 'bad') }, p.ok ? 'ok' : 'HTTP ' + p.status);
}
