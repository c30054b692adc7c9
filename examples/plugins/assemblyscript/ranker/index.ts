// boost: a Quarry ranker in AssemblyScript. Each candidate's new score is
//
//     score + weight * field
//
// where field is a numeric stored field (the pipeline step must list it in
// "fields"); a candidate without a number there keeps its score. The host
// sorts the result. Configuration, both optional:
//
//     {"field": "rating", "weight": 0.5}     (defaults: "rating", 1)
//
// Build: npm run build:ranker (build/ranker.wasm)
import { registerRanker, Batch, config, jsonNumber, jsonString } from "@quarrysearch/sdk/assembly";
export { quarry_abi_v1, quarry_alloc, quarry_rewrite, quarry_rank } from "@quarrysearch/sdk/assembly";

let configured = false;
let field = "rating";
let weight: f64 = 1;

function configure(): string | null {
  const cfg = config();
  const w = jsonNumber(cfg, "weight");
  if (w == w) {
    weight = w;
  } else if (cfg.includes('"weight"')) {
    return 'boost: "weight" must be a number';
  }
  const f = jsonString(cfg, "field");
  if (f !== null) {
    field = f;
  } else if (cfg.includes('"field"')) {
    return 'boost: "field" must be a string';
  }
  configured = true;
  return null;
}

export function boost(b: Batch): string | null {
  if (!configured) {
    const err = configure();
    if (err !== null) return err;
  }
  const scores = b.scores;
  const col = b.numbers(field);
  if (col !== null) {
    // A numbers column, read in place: NaN where a candidate has none.
    for (let i = 0; i < col.length; i++) {
      const v = unchecked(col[i]);
      if (v == v) unchecked((scores[i] += weight * v));
    }
    return null;
  }
  // A values column (some value is not a number), or no such field.
  for (let i = 0; i < b.length; i++) {
    const v = b.number(field, i);
    if (v == v) scores[i] += weight * v;
  }
  return null;
}

registerRanker(boost);
