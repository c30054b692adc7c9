// Plugins and pipeline: the live revision and its history, each plugin's
// versions with validation and metrics, canary and shadow figures, the
// events timeline, and the actions the admin API offers.

import { get, post, idx, metrics, pick, sum, bucketsBy, quantile } from '../api.js';
import { h, fill, table, ms, num, bytes, ago, short, kv } from '../dom.js';

// scope is what a team token needs for this page's calls (app.js hides
// the page from a narrower one).
export const scope = 'admin';

export async function render(root, state, alive) {
  root.append(h('h1', {}, 'Plugins and pipeline ', state.index ? h('span', { class: 'badge' }, state.index) : null));
  if (!state.index) { root.append(h('p', { class: 'muted' }, 'No index.')); return; }
  const flash = h('div', { id: 'flash' });
  const body = h('div', {});
  root.append(flash, body);
  const say = (text, bad) => flash.replaceChildren(h('p', { class: 'flash' + (bad ? ' bad' : '') }, text));
  // act runs one admin action, then draws the page again.
  const act = async (what, path) => {
    try {
      const spec = await post(idx(state.index) + path);
      say(what + ': the pipeline is now revision ' + (spec && spec.revision) + '.');
    } catch (err) { say(what + ': ' + err.message, err.code !== 'gate_running'); }
    await draw();
  };
  const draw = async () => {
    const base = idx(state.index);
    const [list, hist, events, samples] = await Promise.all([
      get(base + '/plugins'), get(base + '/pipeline/history'), get(base + '/events'), metrics().catch(() => []),
    ]);
    const live = list.pipeline;
    const steps = [...(live.rewriters || []).map(s => ['rewriter', s]), ...(live.rankers || []).map(s => ['ranker', s])];
    const shadows = await Promise.all(steps.filter(([, s]) => s.shadow).map(([, s]) =>
      get(base + '/plugins/' + encodeURIComponent(s.plugin) + '/shadow').catch(err => ({ plugin: s.plugin, error: err }))));
    const interleaved = await Promise.all(steps.filter(([, s]) => s.canary && s.canary.interleave).map(([, s]) =>
      get(base + '/plugins/' + encodeURIComponent(s.plugin) + '/canary').catch(err => ({ plugin: s.plugin, error: err }))));
    if (!alive()) return;
    fill(body,
      livePipeline(live, steps, hist, act),
      shadows.length ? h('div', { class: 'card' }, h('h2', {}, 'Shadows'), shadowTable(shadows)) : null,
      interleaved.length ? h('div', { class: 'card', id: 'interleaving' }, h('h2', {}, 'Interleaving'), interleaveTable(interleaved)) : null,
      h('div', { class: 'card' }, h('h2', {}, 'Versions'), versionTable(list.versions, live, samples, state.index, act)),
      h('div', { class: 'card' }, h('h2', {}, 'History'), historyTable(hist, live)),
      h('div', { class: 'card' }, h('h2', {}, 'Events'), timeline(events, hist)));
  };
  await draw();
}

function livePipeline(live, steps, hist, act) {
  const confirm = h('span', { class: 'actions', hidden: true },
    h('span', {}, 'Restore the revision before this one?'),
    h('button', { class: 'danger', type: 'button', id: 'rollback-confirm', onclick: () => act('Rollback', '/pipeline/rollback') }, 'Roll back'),
    h('button', { class: 'plain', type: 'button', onclick: () => { confirm.hidden = true; } }, 'Cancel'));
  const rows = steps.map(([kind, st]) => h('tr', { class: 'live-step', dataset: { plugin: st.plugin } },
    h('td', {}, kind), h('td', {}, st.plugin), h('td', { class: 'mono' }, short(st.digest)),
    h('td', {}, st.policy || 'fail-open'), h('td', { class: 'num' }, st.budget_ms ? st.budget_ms + ' ms' : '50 ms'),
    h('td', {}, st.canary ? h('span', { class: 'badge warn' }, 'canary ' + short(st.canary.step.digest) + ' at ' + st.canary.percent + '%' + (st.canary.sticky_key ? ' by ' + st.canary.sticky_key : '')) : null,
      st.shadow ? h('span', { class: 'badge' }, 'shadow ' + short(st.shadow.step.digest) + ' at ' + st.shadow.percent + '%') : null,
      st.taken_out ? h('span', { class: 'badge bad' }, 'taken out') : null),
    h('td', {}, h('div', { class: 'actions' },
      st.canary ? h('button', { type: 'button', class: 'promote', onclick: () => act('Promote ' + st.plugin, '/plugins/' + encodeURIComponent(st.plugin) + '/promote') }, 'Promote') : null,
      st.canary ? h('button', { type: 'button', class: 'plain', onclick: () => act('End canary of ' + st.plugin, '/plugins/' + encodeURIComponent(st.plugin) + '/canary?percent=0') }, 'End canary') : null,
      st.shadow ? h('button', { type: 'button', class: 'plain', onclick: () => act('End shadow of ' + st.plugin, '/plugins/' + encodeURIComponent(st.plugin) + '/shadow?percent=0') }, 'End shadow') : null))));
  return h('div', { class: 'card', id: 'live' },
    h('h2', {}, 'Live pipeline'),
    kv([
      ['revision', h('b', { id: 'live-revision' }, String(live.revision || 0))],
      ['written by', live.change || '–'],
      ['updated', live.updated ? new Date(live.updated).toISOString().replace('T', ' ').slice(0, 19) + ' UTC (' + ago(live.updated) + ')' : '–'],
      live.restored_from ? ['restored from', 'revision ' + live.restored_from] : null,
    ]),
    steps.length ? table(['kind', 'plugin', 'version', 'policy', h('th', { class: 'num' }, 'budget'), 'candidates', ''], rows, { id: 'live-steps' })
      : h('p', { class: 'muted' }, 'No steps: queries go straight to the planner.'),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'plain', id: 'rollback', disabled: hist.length < 2, onclick: () => { confirm.hidden = false; } }, 'Roll back…'),
      confirm));
}

// gateBadge says what the index's relevance gate found when the version
// was last activated or promoted (docs/relevance.md).
function gateBadge(g) {
  if (!g) return null;
  const sets = (g.sets || []).map(r => r.set + ': ' + JSON.stringify(r)).join('\n');
  if (g.passed) return h('div', {}, h('span', { class: 'badge ok gate', title: sets }, 'gate passed'));
  if (g.forced) return h('div', {}, h('span', { class: 'badge warn gate', title: sets }, 'gate forced: ' + (g.reason || '')));
  return h('div', {}, h('span', { class: 'badge bad gate', title: sets }, 'gate refused'));
}

// interleaveTable is each interleaving experiment's running tally and its
// sequential test (plugin canary --interleave).
function interleaveTable(stats) {
  const rows = stats.map(st => st.error
    ? h('tr', {}, h('td', {}, st.plugin), h('td', { colspan: 7, class: 'error' }, st.error.message))
    : h('tr', { class: 'interleave', dataset: { plugin: st.plugin } },
      h('td', {}, st.plugin), h('td', { class: 'mono' }, short(st.candidate) + ' vs ' + short(st.live)),
      h('td', { class: 'num' }, num(st.wins)), h('td', { class: 'num' }, num(st.losses)), h('td', { class: 'num' }, num(st.ties)),
      h('td', { class: 'num' }, num(st.clicks)),
      h('td', { class: 'num' }, (st.llr || 0).toFixed(2) + ' in [' + (st.lower || 0).toFixed(2) + ', ' + (st.upper || 0).toFixed(2) + ']'),
      h('td', {}, h('span', { class: 'badge' + (st.state === 'promoted' ? ' ok' : st.state === 'running' ? ' warn' : ' bad') }, st.state || 'running'), st.reason ? h('div', { class: 'small muted' }, st.reason) : null)));
  return table(['plugin', 'candidate vs live', h('th', { class: 'num' }, 'candidate won'), h('th', { class: 'num' }, 'live won'), h('th', { class: 'num' }, 'ties'),
    h('th', { class: 'num' }, 'clicks'), h('th', { class: 'num' }, 'log likelihood ratio'), 'state'], rows);
}

function versionTable(versions, live, samples, index, act) {
  if (!versions || !versions.length) return h('p', { class: 'muted' }, 'No version pushed (quarry plugin push).');
  const liveDigest = new Map(), trying = new Map(); // trying: digest → "canary 10%"
  for (const st of [...(live.rewriters || []), ...(live.rankers || [])]) {
    liveDigest.set(st.plugin, st.digest);
    if (st.canary) trying.set(st.canary.step.digest, 'canary ' + st.canary.percent + '%');
    if (st.shadow) trying.set(st.shadow.step.digest, 'shadow ' + st.shadow.percent + '%');
  }
  const durations = bucketsBy(samples, 'quarry_plugin_call_duration_seconds', ['index', 'plugin', 'version']);
  const rows = versions.map(v => {
    const want = { index, plugin: v.name, version: short(v.digest) };
    const calls = sum(samples, 'quarry_plugin_calls_total', want);
    const errs = pick(samples, 'quarry_plugin_errors_total', want).filter(s => s.value > 0).map(s => s.labels.kind + ' ' + s.value);
    const b = durations.get([index, v.name, short(v.digest)].join('\u0000')) || [];
    const percent = h('input', { type: 'number', min: 1, max: 100, value: 10, title: 'percent of queries' });
    const isLive = liveDigest.get(v.name) === v.digest;
    const path = '/plugins/' + encodeURIComponent(v.name);
    return h('tr', { class: 'version', dataset: { plugin: v.name, digest: v.digest } },
      h('td', {}, v.name), h('td', {}, v.kind), h('td', { class: 'mono' }, short(v.digest)),
      h('td', {}, v.valid ? h('span', { class: 'badge ok' }, 'valid') : h('span', { class: 'badge bad', title: v.error || '' }, 'refused'),
        v.error ? h('div', { class: 'small error' }, v.error) : null, gateBadge(v.gate)),
      h('td', {}, isLive ? h('span', { class: 'badge ok' }, 'live') : trying.has(v.digest) ? h('span', { class: 'badge warn' }, trying.get(v.digest)) : ''),
      h('td', { class: 'small' }, ago(v.pushed), h('div', { class: 'muted' }, bytes(v.size))),
      h('td', { class: 'num' }, num(calls)),
      h('td', { class: 'small' }, errs.length ? h('span', { class: 'bad' }, errs.join(', ')) : '0'),
      h('td', { class: 'num' }, ms(quantile(b, 0.5) * 1000)),
      h('td', { class: 'num' }, ms(quantile(b, 0.99) * 1000)),
      h('td', { class: 'num' }, num(sum(samples, 'quarry_plugin_instances', want))),
      h('td', { class: 'num' }, bytes(sum(samples, 'quarry_plugin_memory_bytes', want))),
      h('td', {}, v.valid && !isLive ? h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'activate', onclick: () => act('Activate ' + v.name + ' ' + short(v.digest), path + '/activate?digest=' + encodeURIComponent(v.digest)) }, 'Activate'),
        percent,
        h('button', { type: 'button', class: 'plain canary', onclick: () => act('Canary ' + v.name + ' ' + short(v.digest), path + '/canary?digest=' + encodeURIComponent(v.digest) + '&percent=' + encodeURIComponent(percent.value)) }, 'Canary %'),
        h('button', { type: 'button', class: 'plain shadow', onclick: () => act('Shadow ' + v.name + ' ' + short(v.digest), path + '/shadow?digest=' + encodeURIComponent(v.digest) + '&percent=' + encodeURIComponent(percent.value)) }, 'Shadow %')) : null));
  });
  return h('div', {},
    table(['plugin', 'kind', 'version', 'validation', '', 'pushed', h('th', { class: 'num' }, 'calls'), 'errors', h('th', { class: 'num' }, 'p50'), h('th', { class: 'num' }, 'p99'),
      h('th', { class: 'num' }, 'instances'), h('th', { class: 'num' }, 'memory'), 'actions'], rows, { id: 'versions' }),
    h('p', { class: 'muted small' }, 'Calls, errors, latency, instances and memory are this node\'s broker\'s, since it started (GET /metrics).'));
}

function shadowTable(shadows) {
  const rows = shadows.map(st => st.error ? h('tr', {}, h('td', {}, st.plugin), h('td', { colspan: 6, class: 'error' }, st.error.message)) :
    h('tr', {}, h('td', {}, st.plugin), h('td', { class: 'num' }, num(st.queries)), h('td', { class: 'num' }, st.overlap_at_10.toFixed(3)),
      h('td', { class: 'num' }, st.rank_correlation.toFixed(3)), h('td', { class: 'num' }, ms(st.live_ms)), h('td', { class: 'num' }, ms(st.shadow_ms)),
      h('td', { class: 'num' }, st.live_errors + ' / ' + st.shadow_errors)));
  return table(['plugin', h('th', { class: 'num' }, 'queries'), h('th', { class: 'num' }, 'overlap@10'), h('th', { class: 'num' }, 'Spearman'),
    h('th', { class: 'num' }, 'live mean'), h('th', { class: 'num' }, 'shadow mean'), h('th', { class: 'num' }, 'errors live / shadow')], rows);
}

function stepsOf(spec) {
  const names = [...(spec.rewriters || []).map(s => s.plugin + ' ' + short(s.digest)), ...(spec.rankers || []).map(s => s.plugin + ' ' + short(s.digest))];
  return names.length ? names.join(' → ') : '(no steps)';
}

function historyTable(hist, live) {
  if (!hist.length) return h('p', { class: 'muted' }, 'No pipeline written yet.');
  const rows = [...hist].reverse().map(p => h('tr', { class: p.revision === live.revision ? 'current' : '' },
    h('td', { class: 'num' }, p.revision, p.revision === live.revision ? h('span', { class: 'badge ok' }, ' live') : null),
    h('td', { class: 'small' }, p.updated ? new Date(p.updated).toISOString().replace('T', ' ').slice(0, 19) : '–'),
    h('td', {}, p.change || '–'), h('td', { class: 'small mono' }, stepsOf(p))));
  return table([h('th', { class: 'num' }, 'revision'), 'written (UTC)', 'by', 'steps'], rows, { id: 'history' });
}

// timeline puts the plugin events (automatic fallbacks and rollbacks,
// refused pipelines) and every pipeline change of the kept history on one
// time line, newest first.
function timeline(events, hist) {
  const items = [
    ...events.map(e => ({ time: e.time, kind: 'event', head: [h('b', {}, e.event), ' ', e.plugin, ' ', h('span', { class: 'mono' }, short(e.version)), ' · ', e.reason], who: e.broker ? 'broker ' + e.broker : '' })),
    ...hist.map(p => ({ time: p.updated, kind: 'change', head: [h('b', {}, 'revision ' + p.revision), ' · ', p.change || 'pipeline written'], who: '' })),
  ].filter(x => x.time).sort((a, b) => new Date(b.time) - new Date(a.time));
  if (!items.length) return h('p', { class: 'muted' }, 'Nothing yet.');
  return h('ul', { class: 'timeline', id: 'events' }, items.map(x => h('li', { class: x.kind },
    x.head,
    h('div', { class: 'muted small' }, new Date(x.time).toISOString().replace('T', ' ').slice(0, 19) + ' UTC · ' + ago(x.time) + (x.who ? ' · ' + x.who : '')))));
}
