// The AssemblyScript SDK's own test module: plugins/assdk_test.go builds
// it and runs the same checks as on the C SDK's (sdk/c/test/sdk_test.c):
//
//   echo_rank       decodes a rank request and encodes it again (every
//                   column as values) from what Batch's accessors read;
//   quarry_rank     a ranker whose behaviour q chooses;
//   quarry_rewrite  a rewriter that sets every response field.
import {
  registerRanker, registerRewriter, handleRank, Batch, RewriteRequest, Value,
  config, jsonNumber, log, LOG_WARN, MISSING, NUMBER, STRING, BOOL, LIST,
} from "../assembly/index";
export { quarry_abi_v1, quarry_alloc, quarry_rewrite, quarry_rank } from "../assembly/index";

let echo = false;
let out = new ArrayBuffer(1 << 16);
let n: i32 = 0;

function need(k: i32): usize {
  if (n + k > out.byteLength) {
    const bigger = new ArrayBuffer(max(2 * out.byteLength, n + k));
    memory.copy(changetype<usize>(bigger), changetype<usize>(out), n);
    out = bigger;
  }
  const at = changetype<usize>(out) + n;
  n += k;
  return at;
}
function putU8(v: u8): void { store<u8>(need(1), v); }
function putU32(v: u32): void { store<u32>(need(4), v); }
function putF64(v: f64): void { store<f64>(need(8), v); }
function putStr(s: string): void {
  const len = String.UTF8.byteLength(s);
  putU32(len);
  String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, need(len));
}
function putValue(v: Value): void {
  putU8(v.kind);
  if (v.kind == NUMBER) putF64(v.num);
  else if (v.kind == STRING) putStr(v.str);
  else if (v.kind == BOOL) putU8(v.bool ? 1 : 0);
  else if (v.kind == LIST) {
    putU32(v.list.length);
    for (let i = 0; i < v.list.length; i++) putValue(v.list[i]);
  }
}

let echoError: string | null = null;

function encode(b: Batch): void {
  n = 0;
  putU8(0);
  putStr(b.q);
  putStr(b.context);
  const fields = b.fieldNames();
  putU32(fields.length);
  for (let j = 0; j < fields.length; j++) putStr(fields[j]);
  putU32(b.length);
  let total: i32 = 0;
  for (let i = 0; i < b.length; i++) total += 4 + String.UTF8.byteLength(b.id(i));
  putU32(<u32>total);
  for (let i = 0; i < b.length; i++) putStr(b.id(i));
  for (let i = 0; i < b.length; i++) putF64(b.scores[i]);
  for (let j = 0; j < fields.length; j++) {
    const nums = b.numbers(fields[j]);
    putU8(0);
    for (let i = 0; i < b.length; i++) {
      const v = b.value(fields[j], i);
      if (nums !== null) {
        const x = nums[i];
        if (x != x ? v.kind != MISSING : v.kind != NUMBER || v.num != x) echoError = "numbers and value disagree";
      }
      const x = b.number(fields[j], i);
      if (v.kind != LIST && (x == x) != (v.kind == NUMBER)) echoError = "number disagrees with the value's kind";
      putValue(v);
    }
  }
}

export function echo_rank(ptr: usize, len: i32): u64 {
  echo = true;
  echoError = null;
  const res = handleRank(ptr, len);
  echo = false;
  const err = echoError;
  if (err !== null) {
    n = 0;
    putU8(1);
    const k = String.UTF8.byteLength(err);
    String.UTF8.encodeUnsafe(changetype<usize>(err), err.length, need(k));
  } else if (load<u8>(<usize>(res >> 32)) != 0) {
    return res; // the SDK's own error
  }
  return (<u64>changetype<usize>(out) << 32) | <u64>n;
}

function testRank(b: Batch): string | null {
  if (echo) {
    encode(b);
    return null;
  }
  const q = b.q;
  if (q == "reverse") {
    const order = new Int32Array(b.length);
    for (let i = 0; i < b.length; i++) order[i] = b.length - 1 - i;
    b.keepOrder(order);
  } else if (q == "drop-odd") {
    for (let i = 0; i < b.length; i++) {
      b.scores[i] *= 2;
      if (i % 2) b.drop(i);
    }
  } else if (q == "nan") {
    if (b.length > 0) b.scores[b.length - 1] = NaN;
  } else if (q == "id-length") {
    for (let i = 0; i < b.length; i++) b.scores[i] = b.id(i).length;
  } else if (q == "config") {
    const w = jsonNumber(config(), "w");
    if (w != w) return 'no "w" in the configuration';
    for (let i = 0; i < b.length; i++) b.scores[i] += w;
  } else if (q == "field") {
    for (let i = 0; i < b.length; i++) {
      const x = b.number("x", i);
      b.scores[i] = x == x ? x : 0;
    }
  } else if (q == "error") {
    log("test_rank: failing on purpose", LOG_WARN);
    return "failing on purpose";
  }
  return null;
}

function testRewrite(r: RewriteRequest): string | null {
  if (r.q == "same") return null;
  r.q += "!";
  const query = r.query;
  r.query = r.filter;
  r.filter = query;
  r.rerankDepth = 100 * r.size + r.from;
  return null;
}

registerRanker(testRank);
registerRewriter(testRewrite);
