// Indexes: each index the token may use, its shards and their replicas,
// snapshot generation, freshness and lag, query settings and team.

import { get, idx, metrics, pick } from '../api.js';
import { h, table, num, bytes, ago, kv, stat, errorBox } from '../dom.js';

export async function render(root, state, alive) {
  root.append(h('h1', {}, 'Indexes'));
  if (!state.me.indexes.length) {
    root.append(h('p', { class: 'muted' }, state.me.operator ? 'No index yet: quarry index create NAME --shards N.' : 'Team ' + state.me.team + ' has no index yet.'));
    return;
  }
  const [infos, samples] = await Promise.all([
    Promise.all(state.me.indexes.map(n => get(idx(n) + '/info').catch(err => ({ name: n, error: err })))),
    metrics().catch(() => []),
  ]);
  if (!alive()) return;
  for (const info of infos) root.append(card(info, samples));
}

function card(info, samples) {
  if (info.error) return h('div', { class: 'card index' }, h('h2', {}, info.name), errorBox(info.error));
  // What this node's searcher serves of each shard (other processes'
  // replicas export their own /metrics).
  const local = (name, shard) => {
    const one = pick(samples, name, { index: info.name, shard: String(shard) });
    return one.length ? one[0].value : undefined;
  };
  const snapDocs = info.shard_status.reduce((a, s) => a + s.snapshot_docs, 0);
  const liveDocs = info.shard_status.reduce((a, s) => a + (local('quarry_searcher_shard_documents', s.shard) ?? 0), 0);
  const served = info.shard_status.filter(s => local('quarry_searcher_shard_documents', s.shard) !== undefined).length;
  const maxLag = Math.max(0, ...info.shard_status.map(s => local('quarry_searcher_replay_lag_messages', s.shard) ?? 0));
  const unserved = info.shard_status.filter(s => !s.replicas.length).length;
  const rows = info.shard_status.map(s => h('tr', {},
    h('td', { class: 'num' }, s.shard),
    h('td', {}, s.replicas.length ? s.replicas.map(r => h('div', { class: 'mono small' }, r)) : h('span', { class: 'bad' }, 'none answering')),
    h('td', { class: 'num' }, num(s.snapshot_docs)),
    h('td', { class: 'num' }, num(s.snapshot_seq)),
    h('td', { class: 'num' }, bytes(s.snapshot_bytes)),
    h('td', { class: 'num' }, num(local('quarry_searcher_shard_generation', s.shard))),
    h('td', { class: 'num' }, num(local('quarry_searcher_shard_stream_sequence', s.shard))),
    h('td', { class: 'num' }, num(local('quarry_searcher_replay_lag_messages', s.shard))),
    h('td', { class: 'num' }, num(local('quarry_searcher_shard_documents', s.shard)))));
  const q = info.query || {};
  return h('div', { class: 'card index', dataset: { index: info.name } },
    h('h2', {}, info.name, ' ', h('span', { class: 'badge' }, 'team ' + (info.team || info.name))),
    h('div', { class: 'stats' },
      stat(num(served ? liveDocs : snapDocs), served ? 'documents (searchers here)' : 'documents (snapshot)'),
      stat(info.shards, 'shards'),
      stat(info.generation || '–', 'generation'),
      stat(ago(info.snapshot_created), 'snapshot published'),
      stat(served ? num(maxLag) : '–', 'max replay lag (messages)'),
      stat(unserved ? h('span', { class: 'bad' }, unserved + ' unserved') : h('span', { class: 'ok' }, 'all served'), 'shards')),
    table([h('th', { class: 'num' }, 'shard'), 'replicas (discovered on NATS)', h('th', { class: 'num' }, 'snapshot docs'), h('th', { class: 'num' }, 'snapshot seq'),
      h('th', { class: 'num' }, 'snapshot size'), h('th', { class: 'num' }, 'generation here'), h('th', { class: 'num' }, 'applied seq here'),
      h('th', { class: 'num' }, 'lag here'), h('th', { class: 'num' }, 'docs here')], rows, { class: 'shards' }),
    h('p', { class: 'muted small' }, '“here”: the searcher replica in this process, from its /metrics; replicas elsewhere export their own.'),
    h('h3', {}, 'Query settings'),
    kv([
      ['fields', (q.fields || []).length ? q.fields.map(f => f.field + (f.boost ? '^' + f.boost : '')).join(', ') : '_all (default)'],
      ['operator', q.operator || 'or'],
      q.fuzziness ? ['fuzziness', q.fuzziness] : null,
      q.phrase_boost ? ['phrase boost', q.phrase_boost] : null,
      q.limits ? ['limits', h('code', {}, JSON.stringify(q.limits))] : null,
    ]));
}
