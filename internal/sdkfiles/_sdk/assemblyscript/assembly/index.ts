// The Quarry plugin SDK for AssemblyScript (plugin ABI version 1,
// docs/plugin-abi.md). A plugin registers one hook at the top level of
// its entry file and re-exports the ABI's functions:
//
//   import { registerRewriter, RewriteRequest } from "@quarrysearch/sdk/assembly";
//   export { quarry_abi_v1, quarry_alloc, quarry_rewrite, quarry_rank } from "@quarrysearch/sdk/assembly";
//
//   registerRewriter((r: RewriteRequest): string | null => {
//     r.q = r.q.toLowerCase();
//     return null; // or an error message: status 1, the step's policy applies
//   });
//
// A ranker sees the candidates as columns (a Batch): scores to overwrite,
// numeric fields as Float64Arrays read in place from the request.
//
// Build with the options in asconfig.json (abort routed to the SDK, which
// logs the message and traps; no other imports):
//
//   asc assembly/index.ts --config node_modules/@quarrysearch/sdk/asconfig.json -o plugin.wasm

// ---- host imports ----

@external("quarry_abi_v1", "log")
declare function hostLog(level: i32, ptr: usize, len: i32): void;

@external("quarry_abi_v1", "config")
declare function hostConfig(ptr: usize, cap: i32): i32;

/** Log levels. */
export const LOG_DEBUG: i32 = 0;
export const LOG_INFO: i32 = 1;
export const LOG_WARN: i32 = 2;
export const LOG_ERROR: i32 = 3;

/** log writes a message to the broker's log, tagged with the plugin. */
export function log(msg: string, level: i32 = LOG_INFO): void {
  const b = String.UTF8.encode(msg);
  hostLog(level, changetype<usize>(b), b.byteLength);
}

let configText: string | null = null;

/** config returns the plugin's configuration: the JSON of its pipeline
 * step ("" if none), read from the host once. */
export function config(): string {
  let c = configText;
  if (c !== null) {
    return c;
  }
  let buf = new ArrayBuffer(1024);
  let n = hostConfig(changetype<usize>(buf), buf.byteLength);
  if (n > buf.byteLength) {
    buf = new ArrayBuffer(n);
    n = hostConfig(changetype<usize>(buf), buf.byteLength);
  }
  c = String.UTF8.decodeUnsafe(changetype<usize>(buf), n);
  configText = c;
  return c;
}

/** quarryAbort is the AssemblyScript runtime's abort (asconfig.json's
 * "use": "abort=..."): it logs where the plugin failed, then traps (the
 * call fails with kind "trap" and the instance is discarded). */
export function quarryAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  let msg = "abort";
  if (message !== null) msg += ": " + message;
  if (fileName !== null) msg += " at " + fileName + ":" + line.toString() + ":" + column.toString();
  log(msg, LOG_ERROR);
  unreachable();
}

// ---- the request buffer and the response ----

let reqBuf = new ArrayBuffer(0);
let outBuf = new ArrayBuffer(4096);
let outLen: i32 = 0;

/** The ABI version marker (re-export it from the plugin's entry file). */
export function quarry_abi_v1(): void {}

/** quarry_alloc returns the buffer the host writes a request into. */
export function quarry_alloc(size: i32): usize {
  if (size > reqBuf.byteLength) {
    reqBuf = new ArrayBuffer(size);
  }
  return changetype<usize>(reqBuf);
}

function need(n: i32): usize {
  if (outLen + n > outBuf.byteLength) {
    let bigger = new ArrayBuffer(max(outBuf.byteLength * 2, outLen + n));
    memory.copy(changetype<usize>(bigger), changetype<usize>(outBuf), outLen);
    outBuf = bigger;
  }
  const at = changetype<usize>(outBuf) + outLen;
  outLen += n;
  return at;
}

function putU8(v: u8): void {
  store<u8>(need(1), v);
}
function putU32(v: u32): void {
  store<u32>(need(4), v);
}
function putF64(v: f64): void {
  store<f64>(need(8), v);
}
function putString(s: string): void {
  const n = String.UTF8.byteLength(s);
  putU32(n);
  const at = need(n);
  String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, at);
}

function result(): u64 {
  return (<u64>changetype<usize>(outBuf) << 32) | <u64>outLen;
}

function errorResult(msg: string): u64 {
  outLen = 0;
  putU8(1);
  const n = String.UTF8.byteLength(msg);
  String.UTF8.encodeUnsafe(changetype<usize>(msg), msg.length, need(n));
  return result();
}

// ---- a bounds-checked reader ----

class Reader {
  pos: i32 = 0;
  bad: bool = false;
  constructor(public base: usize, public end: i32) {}

  skip(n: i32): usize {
    if (this.bad || n < 0 || n > this.end - this.pos) {
      this.bad = true;
      return 0;
    }
    const at = this.base + this.pos;
    this.pos += n;
    return at;
  }
  u8(): u8 {
    const p = this.skip(1);
    return this.bad ? 0 : load<u8>(p);
  }
  u32(): u32 {
    const p = this.skip(4);
    return this.bad ? 0 : load<u32>(p);
  }
  f64(): f64 {
    const p = this.skip(8);
    return this.bad ? 0 : load<f64>(p);
  }
  // bytesAt returns the length of a string or bytes and leaves pos after
  // them; their address is base + pos - length.
  bytesLen(): i32 {
    const n = this.u32();
    if (n > <u32>(this.end - this.pos)) {
      this.bad = true;
      return 0;
    }
    this.pos += <i32>n;
    return <i32>n;
  }
  str(): string {
    const n = this.bytesLen();
    if (this.bad || n == 0) return "";
    return String.UTF8.decodeUnsafe(this.base + this.pos - n, n);
  }
}

// ---- rewrite ----

/** RewriteRequest is a search request on its way to the planner. A
 * rewriter changes the fields it wants to; the rest go on unchanged. */
export class RewriteRequest {
  /** The user's text (after earlier rewriters). */
  q: string = "";
  /** The bleve query, JSON ("" when absent). */
  query: string = "";
  /** The bleve filter, JSON ("" when absent). */
  filter: string = "";
  /** The request's context, JSON ("" when absent). Read only. */
  context: string = "";
  /** The page size and offset. Read only. */
  size: i32 = 0;
  from: i32 = 0;
  /** Asks each shard for this many candidates (0: unchanged). */
  rerankDepth: i32 = 0;
}

let rewriteHook: ((r: RewriteRequest) => string | null) | null = null;

/** registerRewriter makes fn the plugin's rewrite hook: it changes the
 * request in place and returns null, or an error message. */
export function registerRewriter(fn: (r: RewriteRequest) => string | null): void {
  rewriteHook = fn;
}

/** handleRewrite runs the rewriter on an encoded request at ptr (len
 * bytes) and returns the hook's result. */
export function handleRewrite(ptr: usize, len: i32): u64 {
  outLen = 0;
  const hook = rewriteHook;
  if (hook === null) {
    return errorResult("this plugin has no rewriter (call registerRewriter)");
  }
  const r = new Reader(ptr, len);
  const req = new RewriteRequest();
  req.q = r.str();
  req.query = r.str();
  req.filter = r.str();
  req.context = r.str();
  req.size = <i32>r.u32();
  req.from = <i32>r.u32();
  if (r.bad || r.pos != len) {
    return errorResult("decode rewrite request: malformed");
  }
  const q = req.q, query = req.query, filter = req.filter;
  const err = hook(req);
  if (err !== null) {
    return errorResult(err);
  }
  let flags: u8 = 0;
  if (req.q != q) flags |= 1;
  if (req.query != query) flags |= 2;
  if (req.filter != filter) flags |= 4;
  if (req.rerankDepth > 0) flags |= 8;
  putU8(0);
  putU8(flags);
  if (flags & 1) putString(req.q);
  if (flags & 2) putString(req.query);
  if (flags & 4) putString(req.filter);
  if (flags & 8) putU32(<u32>req.rerankDepth);
  return result();
}

/** The rewrite hook (re-export it from the plugin's entry file). */
export function quarry_rewrite(ptr: usize, len: i32): u64 {
  return handleRewrite(ptr, len);
}

// ---- rank ----

/** Value kinds. */
export const MISSING: u8 = 0;
export const NUMBER: u8 = 1;
export const STRING: u8 = 2;
export const BOOL: u8 = 3;
export const LIST: u8 = 4;

/** Value is one stored field value of a candidate. */
export class Value {
  kind: u8 = MISSING;
  num: f64 = 0;
  str: string = "";
  bool: bool = false;
  list: Value[] = [];
}

function skipValue(r: Reader, depth: i32): void {
  const kind = r.u8();
  if (kind == NUMBER) {
    r.skip(8);
  } else if (kind == STRING) {
    r.bytesLen();
  } else if (kind == BOOL) {
    r.skip(1);
  } else if (kind == LIST) {
    const n = r.u32();
    if (depth >= 4 || n > <u32>(r.end - r.pos)) {
      r.bad = true;
      return;
    }
    for (let i: u32 = 0; i < n && !r.bad; i++) {
      skipValue(r, depth + 1);
    }
  } else if (kind != MISSING) {
    r.bad = true;
  }
}

function readValue(r: Reader): Value {
  const v = new Value();
  v.kind = r.u8();
  if (v.kind == NUMBER) {
    v.num = r.f64();
  } else if (v.kind == STRING) {
    v.str = r.str();
  } else if (v.kind == BOOL) {
    v.bool = r.u8() != 0;
  } else if (v.kind == LIST) {
    const n = <i32>r.u32();
    for (let i = 0; i < n; i++) {
      v.list.push(readValue(r));
    }
  }
  return v;
}

class Column {
  name: string = "";
  numbers: Float64Array | null = null; // a numbers column, in place
  values: Int32Array | null = null; // a values column: each value's offset
}

/** Batch is a rank request as columns: no per-candidate objects, numeric
 * fields read in place as arrays. Valid during the call only. */
export class Batch {
  /** The (rewritten) text of the search and its context (JSON, or ""). */
  q: string = "";
  context: string = "";
  /** Each candidate's score, best first: the ranker overwrites them
   * (finite numbers). The candidates are sorted by them afterwards (by the
   * host), unless keepOrder is called. */
  scores: Float64Array = new Float64Array(0);

  cols: Column[] = [];
  base: usize = 0;
  end: i32 = 0;
  idsAt: i32 = 0;
  idOffsets: Int32Array | null = null;
  dropped: Uint8Array = new Uint8Array(0);
  order: Int32Array | null = null;

  /** The number of candidates. */
  get length(): i32 {
    return this.scores.length;
  }

  /** fieldNames returns the names of the fields the request carries, in
   * the pipeline step's order. */
  fieldNames(): string[] {
    const out = new Array<string>(this.cols.length);
    for (let j = 0; j < this.cols.length; j++) out[j] = this.cols[j].name;
    return out;
  }

  /** field returns the index of a field the request carries, or -1. */
  field(name: string): i32 {
    for (let j = 0; j < this.cols.length; j++) {
      if (this.cols[j].name == name) return j;
    }
    return -1;
  }

  /** numbers returns a numeric field as an array indexed like scores (NaN
   * where a candidate has no value), read in place from the request: not
   * to be written. null if the field is absent or came as a values column
   * (read those with number or value). */
  numbers(name: string): Float64Array | null {
    const j = this.field(name);
    return j < 0 ? null : this.cols[j].numbers;
  }

  /** value returns candidate i's value of a field, of any kind. */
  value(name: string, i: i32): Value {
    const j = this.field(name);
    if (j < 0 || i < 0 || i >= this.length) return new Value();
    const col = this.cols[j];
    const nums = col.numbers;
    if (nums !== null) {
      const v = new Value();
      const x = unchecked(nums[i]);
      if (x == x) {
        v.kind = NUMBER;
        v.num = x;
      }
      return v;
    }
    const r = new Reader(this.base, this.end);
    r.pos = unchecked((<Int32Array>col.values)[i]);
    return readValue(r);
  }

  /** number returns candidate i's number in a field (a list's first item,
   * if a number), or NaN if it has none. */
  number(name: string, i: i32): f64 {
    const v = this.value(name, i);
    if (v.kind == NUMBER) return v.num;
    if (v.kind == LIST && v.list.length > 0 && v.list[0].kind == NUMBER) return v.list[0].num;
    return NaN;
  }

  /** id returns candidate i's document id. */
  id(i: i32): string {
    let offs = this.idOffsets;
    if (offs === null) {
      offs = new Int32Array(this.length);
      let p = this.idsAt;
      for (let k = 0; k < this.length; k++) {
        unchecked((offs[k] = p));
        p += 4 + <i32>load<u32>(this.base + p);
      }
      this.idOffsets = offs;
    }
    const at = offs[i];
    return String.UTF8.decodeUnsafe(this.base + at + 4, <i32>load<u32>(this.base + at));
  }

  /** drop removes candidate i from the results. */
  drop(i: i32): void {
    this.dropped[i] = 1;
  }

  /** keepOrder makes order (candidate indexes, each at most once) the
   * result, in that order, with their scores: the host does not sort.
   * Candidates not listed are dropped. */
  keepOrder(order: Int32Array): void {
    this.order = order;
  }
}

let rankHook: ((b: Batch) => string | null) | null = null;

/** registerRanker makes fn the plugin's rank hook: it overwrites
 * b.scores (and may drop candidates) and returns null, or an error
 * message. */
export function registerRanker(fn: (b: Batch) => string | null): void {
  rankHook = fn;
}

const malformedRank = "decode rank request: malformed";

/** decodeRank decodes a rank request at ptr (len bytes, in buf, which
 * must be an ArrayBuffer starting 8-aligned) into a batch, or null if it
 * is malformed. */
export function decodeRank(buf: ArrayBuffer, len: i32): Batch | null {
  const ptr = changetype<usize>(buf);
  const r = new Reader(ptr, len);
  const b = new Batch();
  b.base = ptr;
  b.end = len;
  b.q = r.str();
  b.context = r.str();
  const nf = <i32>r.u32();
  if (r.bad || nf > len / 4) return null;
  for (let j = 0; j < nf; j++) {
    const c = new Column();
    c.name = r.str();
    b.cols.push(c);
  }
  const n = <i32>r.u32();
  const idsLen = <i32>r.u32();
  if (r.bad || n > len / 12) return null;
  b.idsAt = r.pos;
  r.skip(idsLen);
  const scores = r.skip(8 * n);
  if (r.bad) return null;
  b.scores = new Float64Array(n);
  memory.copy(b.scores.dataStart, scores, 8 * n);
  b.dropped = new Uint8Array(n);
  for (let j = 0; j < nf && !r.bad; j++) {
    const c = b.cols[j];
    const kind = r.u8();
    if (kind == 1) {
      r.skip((8 - (r.pos & 7)) & 7);
      const at = r.pos;
      r.skip(8 * n);
      if (!r.bad) c.numbers = Float64Array.wrap(buf, at, n);
    } else if (kind == 0) {
      const offs = new Int32Array(n);
      for (let i = 0; i < n && !r.bad; i++) {
        unchecked((offs[i] = r.pos));
        skipValue(r, 0);
      }
      c.values = offs;
    } else {
      r.bad = true;
    }
  }
  if (r.bad || r.pos != len) return null;
  return b;
}

/** handleRank runs the ranker on the request in the buffer quarry_alloc
 * returned (len bytes) and returns the hook's result. */
export function handleRank(ptr: usize, len: i32): u64 {
  outLen = 0;
  const hook = rankHook;
  if (hook === null) {
    return errorResult("this plugin has no ranker (call registerRanker)");
  }
  if (ptr != changetype<usize>(reqBuf) || len > reqBuf.byteLength) {
    return errorResult("request is not in the buffer quarry_alloc returned");
  }
  const b = decodeRank(reqBuf, len);
  if (b === null) {
    return errorResult(malformedRank);
  }
  const err = hook(b);
  if (err !== null) {
    return errorResult(err);
  }
  const n = b.length;
  const order = b.order;
  if (order !== null) {
    putU8(0);
    putU8(0);
    putU32(order.length);
    const seen = new Uint8Array(n);
    for (let k = 0; k < order.length; k++) {
      const i = order[k];
      if (i < 0 || i >= n || seen[i]) {
        return errorResult("keepOrder: index " + i.toString() + " out of range or repeated");
      }
      seen[i] = 1;
      const s = b.scores[i];
      if (!isFinite(s)) {
        return errorResult("candidate " + i.toString() + ": score is not finite");
      }
      putU32(i);
      putF64(s);
    }
    return result();
  }
  const start = need(6 + 12 * n);
  store<u8>(start, 0);
  store<u8>(start + 1, 1); // the host sorts by score
  let count: u32 = 0;
  const w = start + 6;
  const scores = b.scores;
  const dropped = b.dropped;
  for (let i = 0; i < n; i++) {
    if (unchecked(dropped[i])) continue;
    const s = unchecked(scores[i]);
    if (!isFinite(s)) {
      return errorResult("candidate " + i.toString() + ": score is not finite");
    }
    const e = w + 12 * count;
    store<u32>(e, i);
    store<f64>(e + 4, s);
    count++;
  }
  store<u32>(start + 2, count);
  outLen = 6 + 12 * <i32>count;
  return result();
}

/** The rank hook (re-export it from the plugin's entry file). */
export function quarry_rank(ptr: usize, len: i32): u64 {
  return handleRank(ptr, len);
}

// ---- configuration helpers ----

// jsonValueAt returns the index of the value of "key" in a flat JSON
// object (a plain search for the quoted key and a colon: keys must not
// appear inside string values), or -1.
function jsonValueAt(json: string, key: string): i32 {
  const quoted = '"' + key + '"';
  let from = 0;
  while (true) {
    let at = json.indexOf(quoted, from);
    if (at < 0) return -1;
    from = at + 1;
    at += quoted.length;
    while (at < json.length && isSpace(json.charCodeAt(at))) at++;
    if (at >= json.length || json.charCodeAt(at) != 58 /* : */) continue;
    at++;
    while (at < json.length && isSpace(json.charCodeAt(at))) at++;
    return at;
  }
}

function isSpace(c: i32): bool {
  return c == 32 || c == 9 || c == 10 || c == 13;
}

/** jsonNumber returns the number under key in a flat JSON object (the
 * configuration), or NaN if it is absent or not a number. */
export function jsonNumber(json: string, key: string): f64 {
  const at = jsonValueAt(json, key);
  if (at < 0) return NaN;
  let end = at;
  while (end < json.length) {
    const c = json.charCodeAt(end);
    if ((c >= 48 && c <= 57) || c == 45 || c == 43 || c == 46 || c == 101 || c == 69) end++;
    else break;
  }
  if (end == at) return NaN;
  return parseFloat(json.substring(at, end));
}

/** jsonString returns the string under key in a flat JSON object
 * (without unescaping), or null if it is absent or not a string. */
export function jsonString(json: string, key: string): string | null {
  const at = jsonValueAt(json, key);
  if (at < 0 || at >= json.length || json.charCodeAt(at) != 34) return null;
  let end = at + 1;
  while (end < json.length && json.charCodeAt(end) != 34) {
    if (json.charCodeAt(end) == 92) end++;
    end++;
  }
  if (end >= json.length) return null;
  return json.substring(at + 1, end);
}
