// The HTTP JSON API, with the token this tab was given. Every call goes
// to the same routes the CLI and curl use (docs/api.md).

const tokenKey = 'quarry-token';

export function token() { return sessionStorage.getItem(tokenKey) || ''; }
export function setToken(t) {
  if (t) sessionStorage.setItem(tokenKey, t); else sessionStorage.removeItem(tokenKey);
}

// APIError is an answer other than 2xx, or a 202 whose body is an error
// (gate_running: the change goes on in the background): its HTTP status
// and the API's {"error": {"code", "message"}}.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

// call sends one request and returns the decoded JSON (null for 204).
export async function call(method, path, body) {
  const headers = {};
  const t = token();
  if (t) headers['Authorization'] = 'Bearer ' + t;
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const resp = await fetch(path, { method, headers, body: payload });
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok || (resp.status === 202 && data && data.error)) {
    const e = data && data.error ? data.error : {};
    throw new APIError(resp.status, e.code || 'http_' + resp.status, e.message || text.trim() || resp.statusText);
  }
  return data;
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body);

export const idx = (name) => '/v1/indexes/' + encodeURIComponent(name);

// scopes are a team token's scopes, narrowest first (api.TokenScopes).
const scopes = ['search', 'write', 'admin'];

// may says whether me (GET /v1/me) may use routes that need scope: an
// operator's token and an open API may do everything; a team token as
// far as its scope goes (one stored without a scope is admin).
export function may(me, scope) {
  if (me.operator || !scope) return true;
  return scopes.indexOf(me.scope || 'admin') >= scopes.indexOf(scope);
}

// metrics reads this node's Prometheus metrics (GET /metrics: with
// tokens, a team's token gets its own indexes' series only) into samples:
// [{name, labels, value}].
export async function metrics() {
  const t = token();
  const resp = await fetch('/metrics', t ? { headers: { 'Authorization': 'Bearer ' + t } } : {});
  if (!resp.ok) throw new APIError(resp.status, 'metrics', 'GET /metrics: HTTP ' + resp.status);
  return parseMetrics(await resp.text());
}

// parseMetrics parses the Prometheus text format (what client_golang
// writes): comments skipped, labels unescaped, values as numbers.
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    let i = 0;
    while (i < line.length && line[i] !== '{' && line[i] !== ' ') i++;
    const name = line.slice(0, i);
    const labels = {};
    if (line[i] === '{') {
      i++;
      while (line[i] !== '}') {
        const eq = line.indexOf('=', i);
        const key = line.slice(i, eq).trim();
        let j = eq + 2, val = '';
        while (line[j] !== '"') {
          if (line[j] === '\\') { j++; val += line[j] === 'n' ? '\n' : line[j]; } else val += line[j];
          j++;
        }
        labels[key] = val;
        i = j + 1;
        if (line[i] === ',') i++;
      }
      i++;
    }
    const value = parseFloat(line.slice(i).trim().split(' ')[0]);
    out.push({ name, labels, value });
  }
  return out;
}

// pick returns the samples named name whose labels include want.
export function pick(samples, name, want = {}) {
  return samples.filter(s => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v));
}

// sum adds the values of pick(samples, name, want).
export function sum(samples, name, want = {}) {
  return pick(samples, name, want).reduce((a, s) => a + s.value, 0);
}

// quantile estimates the q-quantile of a histogram from its cumulative
// buckets (name_bucket with le), interpolating inside the bucket as
// Prometheus's histogram_quantile does; NaN without observations.
export function quantile(buckets, q) {
  const bs = buckets.map(b => ({ le: b.labels.le === '+Inf' ? Infinity : parseFloat(b.labels.le), n: b.value }))
    .sort((a, b) => a.le - b.le);
  if (!bs.length) return NaN;
  const total = bs[bs.length - 1].n;
  if (!total) return NaN;
  const rank = q * total;
  let prevLe = 0, prevN = 0;
  for (const b of bs) {
    if (b.n >= rank) {
      if (b.le === Infinity) return prevLe;
      const inBucket = b.n - prevN;
      return inBucket > 0 ? prevLe + (b.le - prevLe) * (rank - prevN) / inBucket : b.le;
    }
    prevLe = b.le; prevN = b.n;
  }
  return prevLe;
}

// bucketsBy groups histogram buckets by the labels other than le.
export function bucketsBy(samples, name, keys) {
  const groups = new Map();
  for (const s of pick(samples, name + '_bucket')) {
    const key = keys.map(k => s.labels[k]).join('\u0000');
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(s);
  }
  return groups;
}
