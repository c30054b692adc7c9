// Search playground: one search with its profile — hits with their
// fields, the pipeline report, each rewrite's before and after, the stages
// drawn to scale, and why a hit matched.

import { get, post, idx, may } from '../api.js';
import { h, s, fill, table, ms, num, kv, stat, errorBox } from '../dom.js';

const demoContext = '{"lat": 51.5074, "lon": -0.1278, "hour": 20}';
const formKey = 'quarry-playground';

export async function render(root, state, alive) {
  root.append(h('h1', {}, 'Search playground ', state.index ? h('span', { class: 'badge' }, state.index) : null));
  if (!state.index) { root.append(h('p', { class: 'muted' }, 'No index to search.')); return; }
  const saved = JSON.parse(sessionStorage.getItem(formKey) || '{}');
  const field = (name, el) => h('label', { class: el.tagName === 'TEXTAREA' ? '' : '' }, name, el);
  const q = h('input', { type: 'text', id: 'q', value: saved.q ?? 'spicy noodels', placeholder: 'what a user types' });
  const size = h('input', { type: 'number', id: 'size', min: 0, max: 100, value: saved.size ?? 10 });
  const query = h('textarea', { id: 'query', placeholder: '{"match": "noodles", "field": "name"}  (a bleve query; takes precedence over q)' });
  query.value = saved.query ?? '';
  const filter = h('textarea', { id: 'filter', placeholder: '{"min": 4, "field": "rating"}  (every hit must match; scores unchanged)' });
  filter.value = saved.filter ?? '';
  const context = h('textarea', { id: 'context', placeholder: '{"user": "u1"}  (free-form, for plugins)' });
  context.value = saved.context ?? (state.index === 'menu' ? demoContext : '');
  const out = h('div', { id: 'results' });
  const run = h('button', { type: 'submit', id: 'run' }, 'Search');
  const form = h('form', { class: 'search card' },
    h('label', { class: 'wide' }, 'q', q),
    field('query (bleve JSON)', query), field('filter (bleve JSON)', filter),
    field('context (JSON)', context), field('size', size),
    h('div', { class: 'actions wide' }, run, h('span', { class: 'muted small' }, 'sends POST ' + idx(state.index) + '/search with "profile": true')));
  root.append(form, out);
  // The live pipeline (an admin's read) names the steps a search did not
  // run; without it the report lists those the search did.
  const readsPipeline = may(state.me, 'admin');
  let spec = null;
  if (readsPipeline) get(idx(state.index) + '/pipeline').then(p => { spec = p; }).catch(() => { spec = null; });

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const values = { q: q.value, size: size.value, query: query.value, filter: filter.value, context: context.value };
    sessionStorage.setItem(formKey, JSON.stringify(values));
    const req = { profile: true, fields: ['*'] };
    try {
      if (values.q.trim()) req.q = values.q;
      if (values.size !== '') req.size = parseInt(values.size, 10);
      // The server marks the query's terms in the fields the summary
      // shows (a search highlights at most 1,000 hits).
      if ((req.size ?? 10) <= 1000) req.highlight = { fields: summaryKeys, pre_tag: MARK_START, post_tag: MARK_END, encoder: 'none' };
      for (const k of ['query', 'filter', 'context']) {
        if (values[k].trim()) {
          try { req[k] = JSON.parse(values[k]); } catch (e) { throw new Error(k + ' is not valid JSON: ' + e.message); }
        }
      }
    } catch (err) { out.replaceChildren(errorBox(err)); return; }
    run.disabled = true;
    out.replaceChildren(h('p', { class: 'muted' }, 'Searching…'));
    try {
      if (!spec && readsPipeline) spec = await get(idx(state.index) + '/pipeline').catch(() => null);
      const resp = await post(idx(state.index) + '/search', req);
      if (!alive()) return;
      fill(out, results(resp, spec, req, state.index));
      out.dataset.done = 'true';
    } catch (err) {
      out.replaceChildren(errorBox(err));
    } finally { run.disabled = false; }
  });
}

function results(resp, spec, req, index) {
  const stages = resp.profile ? resp.profile.stages : [];
  const rewrites = stages.filter(st => st.name.startsWith('rewrite '));
  const plan = stages.find(st => st.name === 'plan');
  const finalQ = rewrites.length ? parseRewrite(rewrites[rewrites.length - 1].detail).after : req.q;
  return [
    h('div', { class: 'stats' },
      stat(num(resp.total), 'total hits'), stat(ms(resp.took_ms), 'took'),
      stat(resp.shards.successful + ' / ' + resp.shards.total, 'shards answered'),
      stat(h('span', { class: 'mono small' }, resp.request_id || '–'), 'request id')),
    resp.shards.failures && resp.shards.failures.length ? h('p', { class: 'error' }, resp.shards.failures.map(f => 'shard ' + f.shard + ': ' + f.reason).join('\n')) : null,
    h('div', { class: 'card' }, h('h2', {}, 'Pipeline'), pipelineReport(resp, spec, stages)),
    rewrites.length ? h('div', { class: 'card' }, h('h2', {}, 'Rewrites'), rewriteDiff(rewrites, req.q)) : null,
    h('div', { class: 'card' }, h('h2', {}, 'Stages, to scale'), waterfall(stages, resp.took_ms),
      plan ? h('details', {}, h('summary', { class: 'small muted' }, 'the plan'), h('pre', {}, plan.detail)) : null),
    h('div', { class: 'card' }, h('h2', {}, 'Hits'), hits(resp, finalQ || '', plan ? plan.detail : '', req, index)),
  ];
}

// pipelineReport lists every step of the live pipeline: ran (its stage is
// in the profile), skipped (with why) or not run.
function pipelineReport(resp, spec, stages) {
  const skipped = new Map((resp.pipeline || []).map(r => [r.kind + ' ' + r.plugin, r]));
  const steps = [];
  for (const st of (spec && spec.rewriters) || []) steps.push(['rewriter', st]);
  for (const st of (spec && spec.rankers) || []) steps.push(['ranker', st]);
  for (const r of resp.pipeline || []) {
    if (!steps.some(([k, st]) => k === r.kind && st.plugin === r.plugin)) steps.push([r.kind, { plugin: r.plugin }]);
  }
  if (!steps.length) return h('p', { class: 'muted' }, 'The index has no plugin steps: the query went straight to the planner.');
  const rows = steps.map(([kind, st]) => {
    const stage = stages.find(x => x.name === (kind === 'rewriter' ? 'rewrite ' : 'rank ') + st.plugin);
    const skip = skipped.get(kind + ' ' + st.plugin);
    let status;
    if (skip) status = h('span', { class: 'badge bad' }, skip.status || 'skipped');
    else if (stage && /not called/.test(stage.detail || '')) status = h('span', { class: 'badge' }, 'not called');
    else if (stage) status = h('span', { class: 'badge ok' }, 'ran');
    else status = h('span', { class: 'badge' }, 'not run');
    const notes = [];
    if (st.canary) notes.push('canary ' + st.canary.percent + '%');
    if (st.shadow) notes.push('shadow ' + st.shadow.percent + '%');
    return h('tr', { class: 'step' }, h('td', {}, kind), h('td', {}, st.plugin), h('td', {}, status),
      h('td', { class: 'num' }, stage ? ms(stage.took_ms) : '–'),
      h('td', { class: 'small' }, skip ? h('span', { class: 'error' }, skip.error || '') : stage ? stage.detail || '' : (kind === 'ranker' && resp.hits.length === 0 ? 'no hits to rank' : ''),
        notes.length ? h('div', { class: 'muted' }, notes.join(', ')) : null));
  });
  return table(['kind', 'plugin', 'status', h('th', { class: 'num' }, 'took'), 'detail'], rows, { id: 'pipeline-report' });
}

// parseRewrite reads a rewrite stage's detail: version …: q "a" → "b"; …
function parseRewrite(detail) {
  const m = /q ("(?:[^"\\]|\\.)*") → ("(?:[^"\\]|\\.)*")/.exec(detail || '');
  const parse = (x) => { try { return JSON.parse(x); } catch { return x; } };
  const rest = (detail || '').split(';').slice(1).map(x => x.trim()).filter(x => /true|depth [1-9]/.test(x));
  return m ? { before: parse(m[1]), after: parse(m[2]), rest } : { before: null, after: null, rest };
}

function rewriteDiff(rewrites, q) {
  const rows = [];
  for (const st of rewrites) {
    const r = parseRewrite(st.detail);
    const before = (r.before ?? '').split(/\s+/), after = (r.after ?? '').split(/\s+/);
    rows.push(h('span', { class: 'mono' }, st.name.replace(/^rewrite /, '')),
      h('span', {}, before.map(w => after.includes(w) ? w + ' ' : h('del', {}, w), ' ')),
      h('span', { class: 'arrow' }, '→'),
      h('span', {}, after.map(w => before.includes(w) ? w + ' ' : h('ins', {}, w), ' '),
        r.before === r.after ? h('span', { class: 'muted small' }, ' (unchanged)') : null,
        r.rest.length ? h('span', { class: 'muted small' }, ' · ' + r.rest.join('; ')) : null));
  }
  return h('div', {}, h('p', { class: 'small muted' }, 'q as typed: ', h('code', {}, JSON.stringify(q ?? ''))), h('div', { class: 'diff', id: 'rewrites' }, rows));
}

// waterfall draws the profile's stages on one time axis: the top-level
// stages one after another, each shard's request inside the fan-out (its
// search time dark, queueing and transport light).
export function waterfall(stages, took) {
  let cursor = 0, fanStart = 0;
  const bars = [];
  for (const st of stages) {
    const shard = /^shard \d+/.test(st.name);
    const start = shard ? fanStart : cursor;
    if (st.name === 'fan-out') fanStart = cursor;
    if (!shard) cursor += st.took_ms;
    let cls = 'bar';
    if (st.name.startsWith('rewrite ')) cls += ' rewrite';
    else if (st.name.startsWith('rank ')) cls += ' rank';
    else if (shard) cls += ' shard';
    const search = shard ? parseFloat((/search ([\d.]+)ms/.exec(st.detail || '') || [])[1]) : NaN;
    bars.push({ st, start, cls, search, shard });
  }
  const total = Math.max(cursor, took || 0, ...bars.map(b => b.start + b.st.took_ms), 0.001);
  const W = 1000, label = 190, right = 70, row = 20, top = 18;
  const plot = W - label - right;
  const x = (t) => label + plot * t / total;
  const H = top + bars.length * row + 6;
  const ticks = [];
  for (let i = 0; i <= 4; i++) {
    const t = total * i / 4;
    ticks.push(s('line', { class: 'grid', x1: x(t), x2: x(t), y1: top - 4, y2: H }),
      s('text', { class: 'ms', x: x(t), y: 11, 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle' }, ms(t)));
  }
  const rows = bars.map((b, i) => {
    const y = top + i * row;
    const w = Math.max(1, plot * b.st.took_ms / total);
    const g = s('g', { class: 'stage', dataset: { stage: b.st.name } },
      s('title', {}, b.st.name + ': ' + ms(b.st.took_ms) + (b.st.detail ? '\n' + b.st.detail : '')),
      s('text', { x: b.shard ? 16 : 4, y: y + 13 }, b.st.name.length > 24 ? b.st.name.slice(0, 23) + '…' : b.st.name),
      s('rect', { class: b.cls, x: x(b.start), y: y + 3, width: w, height: row - 6, rx: 2, opacity: b.shard && !Number.isNaN(b.search) ? 0.45 : 1 }),
      b.shard && !Number.isNaN(b.search) ? s('rect', { class: b.cls + ' search', x: x(b.start), y: y + 3, width: Math.max(1, plot * Math.min(b.search, b.st.took_ms) / total), height: row - 6, rx: 2 }) : null,
      s('text', { class: 'ms', x: Math.min(x(b.start) + w + 4, W - right + 4), y: y + 13 }, ms(b.st.took_ms)));
    return g;
  });
  return s('svg', { class: 'waterfall', id: 'waterfall', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'stage waterfall' }, ticks, rows);
}

// summaryKeys are the fields a hit's summary is taken from, the first a
// hit has; the search asks for their highlighted fragments.
const summaryKeys = ['name', 'title', 'text'];
const MARK_START = '\u0001', MARK_END = '\u0002';

function summaryKey(fields) {
  if (!fields) return null;
  for (const k of summaryKeys) if (typeof fields[k] === 'string') return k;
  return Object.keys(fields).find(k => typeof fields[k] === 'string') ?? null;
}

// summary is a hit's document in one line: its highlighted fragment of
// the summary field when the server sent one (the query's terms as it
// matched them: stems, synonyms), else that field with the typed words
// marked.
function summary(hit, terms) {
  const k = summaryKey(hit.fields);
  if (k === null) return '';
  const frag = hit.highlight?.[k]?.[0];
  if (frag === undefined) return highlight(hit.fields[k], terms);
  return frag.split(MARK_START).flatMap((part, i) => {
    if (i === 0) return [part];
    const [marked, rest] = part.split(MARK_END);
    return [h('mark', {}, marked), rest ?? ''];
  });
}

// words are the query's terms, lowercased: what "why" highlights.
function words(q) {
  return [...new Set((q || '').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(w => w.length > 1))];
}

function highlight(text, terms) {
  const parts = String(text).split(/([\p{L}\p{N}]+)/u);
  return parts.map(p => terms.includes(p.toLowerCase()) ? h('mark', {}, p) : p);
}

function hits(resp, q, planDetail, req, index) {
  if (!resp.hits.length) return h('p', { class: 'muted' }, 'No hits.');
  const top = resp.hits[0].score || 1;
  const terms = words(q);
  const rows = [];
  resp.hits.forEach((hit, i) => {
    const tree = h('div', { class: 'explanation' });
    const explainRow = h('tr', { class: 'explain', hidden: true }, h('td', { colspan: 5 }, explain(hit, i, top, terms, planDetail), tree));
    let asked = false;
    const btn = h('button', { class: 'plain explain-btn', type: 'button', onclick: () => {
      explainRow.hidden = !explainRow.hidden;
      if (!asked) { asked = true; scoreExplanation(tree, req, index, hit.id); }
    } }, 'why?');
    rows.push(h('tr', { class: 'hit', dataset: { id: hit.id } },
      h('td', { class: 'num' }, resp.hits.length > 0 ? i + 1 : ''),
      h('td', { class: 'mono' }, hit.id),
      h('td', { class: 'num' }, hit.score.toFixed(4)),
      h('td', {}, summary(hit, terms)),
      h('td', {}, btn)), explainRow);
  });
  return table([h('th', { class: 'num' }, '#'), 'id', h('th', { class: 'num' }, 'score'), 'document', ''], rows, { id: 'hits' });
}

// explain says what can be said of one hit from the answer: its score
// against the first hit's, which of the final query's terms each field
// holds, the query the plan ran and every field returned.
function explain(hit, i, top, terms, planDetail) {
  const fields = hit.fields || {};
  const matched = [];
  for (const [k, v] of Object.entries(fields)) {
    const text = Array.isArray(v) ? v.join(' ') : String(v);
    const found = terms.filter(t => words(text).includes(t));
    if (found.length) matched.push(h('li', {}, h('b', {}, k), ': ', found.join(', ')));
  }
  const query = (/query (\{.*?\}); k=/.exec(planDetail || '') || [])[1];
  return h('div', { class: 'why' },
    kv([
      ['rank', i + 1],
      ['score', hit.score.toFixed(6) + ' (' + (100 * hit.score / top).toFixed(1) + '% of the first hit)'],
      hit.sort ? ['sort values', JSON.stringify(hit.sort)] : null,
      ['terms found', matched.length ? h('ul', {}, matched) : h('span', { class: 'muted' }, 'none of the final q\'s terms (matched through query, stemming, synonyms or a ranker)')],
      query ? ['query run (BM25, global statistics)', h('code', {}, query)] : null,
    ]),
    h('details', {}, h('summary', { class: 'small muted' }, 'every field'), h('pre', {}, JSON.stringify(fields, null, 2))));
}

// scoreExplanation asks the index for one hit's score explanation: the
// same request with "explain": true, filtered to the hit (a filter does
// not change scores), and draws bleve's tree.
async function scoreExplanation(el, req, index, id) {
  fill(el, h('p', { class: 'muted small' }, 'Asking for the score explanation…'));
  const ids = { ids: [id] };
  const one = { ...req, explain: true, profile: false, size: 1, from: 0, fields: [], filter: req.filter ? { conjuncts: [req.filter, ids] } : ids };
  try {
    const resp = await post(idx(index) + '/search', one);
    const hit = resp.hits.find(x => x.id === id);
    if (!hit || !hit.explanation) { fill(el, h('p', { class: 'muted' }, 'The index gave no explanation for this hit.')); return; }
    fill(el, h('h3', {}, 'Score explanation (BM25 with the index-wide statistics, before rankers)'), h('ul', { class: 'expl' }, explNode(hit.explanation, 0)));
  } catch (err) { fill(el, errorBox(err)); }
}

// explNode draws one node of an explanation and, folded below two
// levels, its children. Messages hold bleve's internal document number
// as its 8 raw bytes (" in ········)"): those are left out.
function explNode(e, depth) {
  const msg = String(e.message || '').replace(/ in [\s\S]{8}\)/g, ')').replace(/[\u0000-\u001f]/g, '');
  const head = [h('b', { class: 'mono' }, Number(e.value).toFixed(4)), ' ', msg];
  const kids = (e.children || []).map(c => explNode(c, depth + 1));
  if (!kids.length) return h('li', {}, head);
  return h('li', {}, depth < 2 ? [head, h('ul', {}, kids)] : h('details', {}, h('summary', {}, head), h('ul', {}, kids)));
}
