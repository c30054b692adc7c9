// Package plugins is Quarry's WebAssembly host, on wazero. A team's
// rewriters and rankers are compiled once (with an on-disk compilation
// cache), checked against the ABI (sdk/abi) before anything runs, and kept
// as a pool of warm instances per plugin version. Every call has a memory
// cap, a time budget and an output cap. The budget is kept by
// instrumenting each module before it is compiled (plugins/internal/preempt:
// a counter at every function entry and loop head, and an interrupt a
// per-instance timer sets), which costs loop-heavy guests far less than
// wazero's own check (Config.CloseOnContextDone); a trap, timeout or malformed output discards that instance
// and returns a typed error the broker turns into the step's failure
// policy.
//
// Guests get WASI only as far as a Go wasip1 reactor needs it, with no
// file system, network or environment, a virtual clock and seeded
// randomness: the same input always gives the same output. The host
// functions are log and the plugin's own config.
package plugins
