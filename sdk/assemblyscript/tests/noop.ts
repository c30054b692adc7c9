// A benchmark plugin on the AssemblyScript SDK (plugins/langbench_test.go):
// a rewriter that changes nothing, to measure the cost of a call itself.
import { registerRewriter, RewriteRequest } from "../assembly/index";
export { quarry_abi_v1, quarry_alloc, quarry_rewrite, quarry_rank } from "../assembly/index";

registerRewriter((r: RewriteRequest): string | null => null);
