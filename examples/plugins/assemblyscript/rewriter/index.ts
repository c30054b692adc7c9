// stopwords: a Quarry rewriter in AssemblyScript. It lower-cases the
// user's text and drops common English words that only add noise to a
// BM25 query: "The Noodles with Chicken" becomes "noodles chicken". A
// text of stop words only is left alone.
//
// Build: npm run build:rewriter (build/rewriter.wasm)
import { registerRewriter, RewriteRequest } from "@quarrysearch/sdk/assembly";
export { quarry_abi_v1, quarry_alloc, quarry_rewrite, quarry_rank } from "@quarrysearch/sdk/assembly";

const stop = new Set<string>();
for (let i = 0, w = ["a", "an", "and", "the", "with", "of", "for", "in", "on", "or", "to"]; i < w.length; i++) {
  stop.add(w[i]);
}

export function stopwords(r: RewriteRequest): string | null {
  const words = r.q.toLowerCase().split(" ");
  const kept = new Array<string>();
  for (let i = 0; i < words.length; i++) {
    const w = words[i].trim();
    if (w.length > 0 && !stop.has(w)) kept.push(w);
  }
  if (kept.length > 0) {
    r.q = kept.join(" ");
  }
  return null;
}

registerRewriter(stopwords);
