// Indexes: each index the token may use, its shards and the searcher
// replicas serving them (generation, applied sequence, replay lag,
// documents), the snapshot, its freshness, the query settings, team and
// the aliases that point at it.

import { get, idx, may } from '../api.js';
import { h, table, num, bytes, ago, kv, stat, errorBox } from '../dom.js';

export async function render(root, state, alive) {
  root.append(h('h1', {}, 'Indexes'));
  if (!state.me.indexes.length) {
    root.append(h('p', { class: 'muted' }, state.me.operator ? 'No index yet: quarry index create NAME --shards N.' : 'Team ' + state.me.team + ' has no index yet.'));
    return;
  }
  if (!may(state.me, 'admin')) {
    // GET …/info is an admin's: a search or write token is told what it
    // may do instead.
    const does = state.me.scope === 'write' ? 'search, read and write the documents of' : 'search and read the documents of';
    root.append(h('p', { class: 'muted', id: 'scope-note' }, 'This token (scope ' + state.me.scope + ') may ' + does + ' these indexes (the Playground); their shards, settings, plugins and traffic need a token of scope admin.'));
    for (const n of state.me.indexes) root.append(h('div', { class: 'card index', dataset: { index: n } }, h('h2', {}, n)));
    return;
  }
  const infos = await Promise.all(state.me.indexes.map(n => get(idx(n) + '/info').catch(err => ({ name: n, error: err }))));
  if (!alive()) return;
  for (const info of infos) root.append(card(info));
}

function card(info) {
  if (info.error) return h('div', { class: 'card index' }, h('h2', {}, info.name), errorBox(info.error));
  const shards = info.shard_status;
  const snapDocs = shards.reduce((a, s) => a + s.snapshot_docs, 0);
  // Documents as searches see them: one serving replica of each shard.
  const served = shards.every(s => s.serving.length);
  const liveDocs = shards.reduce((a, s) => a + (s.serving.length ? Math.max(...s.serving.map(r => r.docs)) : 0), 0);
  const maxLag = Math.max(0, ...shards.flatMap(s => s.serving.map(r => r.lag)));
  const unserved = shards.filter(s => !s.replicas.length).length;
  // One line per replica, in every column: those that answered the
  // shard's replica discovery and those that report it in micro
  // discovery (the same, but for a moment's difference).
  const ids = (s) => [...new Set([...s.replicas, ...s.serving.map(r => r.replica)])].sort();
  const lines = (s, f, cls) => ids(s).map(id => {
    const r = s.serving.find(x => x.replica === id);
    return h('div', { class: cls || '' }, r ? f(r) : '–');
  });
  const rows = shards.map(s => h('tr', {},
    h('td', { class: 'num' }, s.shard),
    h('td', {}, ids(s).length ? ids(s).map(id => h('div', { class: 'mono small' + (s.replicas.includes(id) ? '' : ' warn'), title: s.replicas.includes(id) ? '' : 'reports the shard but did not answer its replica discovery' }, id)) : h('span', { class: 'bad' }, 'none answering')),
    h('td', { class: 'num' }, lines(s, r => num(r.generation))),
    h('td', { class: 'num' }, lines(s, r => num(r.seq))),
    h('td', { class: 'num' }, lines(s, r => r.lag ? h('span', { class: 'warn' }, num(r.lag)) : num(r.lag))),
    h('td', { class: 'num' }, lines(s, r => num(r.docs))),
    h('td', { class: 'num' }, num(s.snapshot_docs)),
    h('td', { class: 'num' }, num(s.snapshot_seq)),
    h('td', { class: 'num' }, bytes(s.snapshot_bytes))));
  const q = info.query || {};
  return h('div', { class: 'card index', dataset: { index: info.name } },
    h('h2', {}, info.name, ' ', h('span', { class: 'badge' }, 'team ' + (info.team || 'index-' + info.name)),
      ...(info.aliases || []).map(a => [' ', h('span', { class: 'badge alias', title: 'an alias that points at this index: its searches and writes are this index\'s' }, 'alias ' + a)]).flat()),
    h('div', { class: 'stats' },
      stat(num(served ? liveDocs : snapDocs), served ? 'documents (searchers)' : 'documents (snapshot)'),
      stat(info.shards, 'shards'),
      stat(info.generation || '–', 'snapshot generation'),
      stat(ago(info.snapshot_created), 'snapshot published'),
      stat(num(maxLag), 'max replay lag (messages)'),
      stat(unserved ? h('span', { class: 'bad' }, unserved + ' unserved') : h('span', { class: 'ok' }, 'all served'), 'shards')),
    table([h('th', { class: 'num' }, 'shard'), 'replicas (discovered on NATS)', h('th', { class: 'num' }, 'generation'), h('th', { class: 'num' }, 'applied seq'),
      h('th', { class: 'num' }, 'lag'), h('th', { class: 'num' }, 'docs'), h('th', { class: 'num' }, 'snapshot docs'), h('th', { class: 'num' }, 'snapshot seq'),
      h('th', { class: 'num' }, 'snapshot size')], rows, { class: 'shards' }),
    h('p', { class: 'muted small' }, 'Each replica\'s figures are what its searcher reports in micro discovery (quarry-searcher); the snapshot\'s are the current generation\'s manifest.'),
    h('h3', {}, 'Query settings'),
    kv([
      ['fields', (q.fields || []).length ? q.fields.map(f => f.field + (f.boost ? '^' + f.boost : '')).join(', ') : '_all (default)'],
      ['operator', q.operator || 'or'],
      q.fuzziness ? ['fuzziness', q.fuzziness] : null,
      q.phrase_boost ? ['phrase boost', q.phrase_boost] : null,
      q.limits ? ['limits', h('code', {}, JSON.stringify(q.limits))] : null,
    ]),
    h('h3', {}, 'Mapping'),
    mappingFields(info.mapping));
}

// mappingFields lists the fields an index's mapping declares (each
// property's path, its type and analyzer), and whether fields it does not
// declare are indexed too (dynamic). quarry index mapping NAME FILE adds
// fields in place.
function mappingFields(m) {
  const dm = (m && m.default_mapping) || {};
  const rows = [];
  const walk = (prefix, doc) => {
    for (const [name, p] of Object.entries((doc && doc.properties) || {}).sort(([a], [b]) => a < b ? -1 : 1)) {
      const path = prefix ? prefix + '.' + name : name;
      for (const f of p.fields || []) {
        rows.push([f.name && f.name !== name ? path + ' (as ' + f.name + ')' : path, h('code', {}, [f.type, f.analyzer].filter(Boolean).join(' '))]);
      }
      walk(path, p);
    }
  };
  walk('', dm);
  rows.push(['other fields', dm.dynamic === false ? 'not indexed' : 'indexed as they come (dynamic)']);
  return kv(rows);
}
