// Command gocommand is a test plugin built as a WASI command (without
// -buildmode=c-shared): it exports the ABI with //go:wasmexport directly,
// no SDK, and its runtime starts only in _start, which the host never
// calls.
package main

//go:wasmexport quarry_abi_v1
func abiVersion() {}

//go:wasmexport quarry_alloc
func alloc(size int32) int32 { return 0 }

//go:wasmexport quarry_rewrite
func rewrite(ptr, n int32) int64 { return 0 }

func main() {}
