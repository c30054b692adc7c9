// Traffic: per index and per team, queries/s, latency quantiles, errors
// and overload refusals, read from this node's broker metrics (GET
// /metrics) every two seconds.

import { get, idx, metrics, pick, bucketsBy, quantile } from '../api.js';
import { h, fill, table, ms, num, ago, errorBox } from '../dom.js';
import { waterfall } from './playground.js';

// scope is what a team token needs for this page's calls (app.js hides
// the page from a narrower one).
export const scope = 'admin';

const every = 2000;

export async function render(root, state, alive) {
  root.append(h('h1', {}, 'Traffic'));
  const teams = new Map();
  await Promise.all(state.me.indexes.map(n => get(idx(n) + '/info').then(i => teams.set(n, i.team || n)).catch(() => teams.set(n, n))));
  const body = h('div', {});
  root.append(body, h('p', { class: 'muted small' },
    'From this node\'s broker (GET /metrics), refreshed every 2 s: rates over the last interval, latency quantiles over the last interval when it had queries, else since the broker started. Other brokers export their own.'));
  const report = h('div', { id: 'queries' });
  const refresh = h('button', { type: 'button', class: 'plain', id: 'refresh-queries' }, 'Refresh');
  if (state.index) {
    root.append(h('h2', {}, 'Queries of ', state.index, ' ', refresh), report);
    const load = async () => {
      refresh.disabled = true;
      try {
        const rep = await get(idx(state.index) + '/queries');
        if (alive()) fill(report, queries(rep));
      } catch (err) { if (alive()) fill(report, errorBox(err)); }
      refresh.disabled = false;
    };
    refresh.addEventListener('click', load);
    await load();
  }
  let prev = null, timer = null;
  const tick = async () => {
    let samples;
    try { samples = await metrics(); } catch { samples = null; }
    if (!alive()) return;
    if (samples) {
      const now = { at: performance.now(), samples };
      fill(body, view(state, teams, prev, now));
      prev = now;
    }
    timer = setTimeout(tick, every);
  };
  await tick();
  return () => clearTimeout(timer);
}

// figures sums an index's counters and buckets in one scrape.
function figures(samples, index) {
  const by = {};
  for (const s of pick(samples, 'quarry_broker_requests_total', { index })) by[s.labels.outcome] = s.value;
  const total = Object.values(by).reduce((a, b) => a + b, 0);
  const refused = by.overloaded || 0;
  const errors = total - (by.ok || 0) - refused;
  const buckets = bucketsBy(samples, 'quarry_broker_request_duration_seconds', ['index']).get(index) || [];
  return { total, ok: by.ok || 0, refused, errors, buckets };
}

function minus(a, b) {
  if (!b) return a;
  const prevBy = new Map(b.buckets.map(x => [x.labels.le, x.value]));
  return {
    total: a.total - b.total, ok: a.ok - b.ok, refused: a.refused - b.refused, errors: a.errors - b.errors,
    buckets: a.buckets.map(x => ({ labels: x.labels, value: x.value - (prevBy.get(x.labels.le) || 0) })),
  };
}

function add(a, b) {
  const byLe = new Map(a.buckets.map(x => [x.labels.le, x.value]));
  for (const x of b.buckets) byLe.set(x.labels.le, (byLe.get(x.labels.le) || 0) + x.value);
  return {
    total: a.total + b.total, ok: a.ok + b.ok, refused: a.refused + b.refused, errors: a.errors + b.errors,
    buckets: [...byLe].map(([le, value]) => ({ labels: { le }, value })),
  };
}

const zero = { total: 0, ok: 0, refused: 0, errors: 0, buckets: [] };

function view(state, teams, prev, now) {
  const secs = prev ? (now.at - prev.at) / 1000 : 0;
  const rows = [], teamRows = new Map();
  for (const index of state.me.indexes) {
    const all = figures(now.samples, index);
    const recent = prev ? minus(all, figures(prev.samples, index)) : null;
    const team = teams.get(index) || index;
    const t = teamRows.get(team) || { all: zero, recent: prev ? zero : null };
    teamRows.set(team, { all: add(t.all, all), recent: recent ? add(t.recent, recent) : null });
    rows.push(row(index, team, all, recent, secs));
  }
  // Header cells are elements: each table gets its own.
  const heads = () => ['', h('th', { class: 'num' }, 'queries/s'), h('th', { class: 'num' }, 'p50'), h('th', { class: 'num' }, 'p99'), h('th', { class: 'num' }, 'p99.9'),
    h('th', { class: 'num' }, 'errors'), h('th', { class: 'num' }, 'refused (overload)'), h('th', { class: 'num' }, 'answered, since start')];
  return [
    h('div', { class: 'card' }, h('h2', {}, 'By index'), table(['index', 'team', ...heads().slice(1)], rows, { id: 'traffic-indexes' })),
    h('div', { class: 'card' }, h('h2', {}, 'By team'), table(['team', ...heads().slice(1)],
      [...teamRows].map(([team, f]) => row(null, team, f.all, f.recent, secs)), { id: 'traffic-teams' })),
  ];
}

function row(index, team, all, recent, secs) {
  const useRecent = recent && recent.total > 0;
  const lat = useRecent ? recent.buckets : all.buckets;
  const q = (p) => ms(quantile(lat, p) * 1000);
  const cells = [
    h('td', { class: 'num' }, recent && secs > 0 ? (recent.total / secs).toFixed(1) : '…'),
    h('td', { class: 'num' }, q(0.5)), h('td', { class: 'num' }, q(0.99)), h('td', { class: 'num' }, q(0.999)),
    h('td', { class: 'num' + (all.errors ? ' bad' : '') }, num(all.errors)),
    h('td', { class: 'num' + (all.refused ? ' warn' : '') }, num(all.refused)),
    h('td', { class: 'num' }, num(all.ok)),
  ];
  return index === null ? h('tr', {}, h('td', {}, team), cells) : h('tr', { dataset: { index } }, h('td', {}, index), h('td', {}, team), cells);
}

// queries draws the brokers' query logs of one index: the most searched
// texts, those that found nothing, the slowest searches with their stages.
function queries(rep) {
  const list = (items, id, empty) => items.length
    ? table(['q', h('th', { class: 'num' }, 'searches')], items.map(c => h('tr', {}, h('td', { class: 'mono' }, c.q || '(empty q)'), h('td', { class: 'num' }, num(c.count)))), { id })
    : h('p', { class: 'muted' }, empty);
  const slow = rep.slow.map(q => h('details', { class: 'slow' },
    h('summary', {}, h('b', {}, ms(q.took_ms)), ' ', h('span', { class: 'mono' }, q.q || '(empty q)'), ' · ', num(q.total), ' hits · ', h('span', { class: 'muted small' }, ago(q.time))),
    waterfall(q.stages || [], q.took_ms)));
  return [
    h('p', { class: 'muted small' }, 'The last ', num(rep.searches), ' searches the ', rep.brokers === 1 ? 'broker' : rep.brokers + ' brokers', ' answered for this index (each keeps its last 1,000 and its last 20 slow ones, over --slow-query).'),
    h('div', { class: 'cols' },
      h('div', { class: 'card' }, h('h3', {}, 'Top queries'), list(rep.top, 'top-queries', 'No search yet.')),
      h('div', { class: 'card' }, h('h3', {}, 'Zero results'), list(rep.zero_results, 'zero-queries', 'Every search found something.'))),
    h('div', { class: 'card', id: 'slow-queries' }, h('h3', {}, 'Slow queries'), slow.length ? slow : h('p', { class: 'muted' }, 'None over the slow-query time.')),
  ];
}
