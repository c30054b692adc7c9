//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/quarrysearch/quarry/sdk/abi"
)

// The raw ABI: exports the host calls and imports it provides. Authors never
// see these.

var inBuf, outBuf []byte

//go:wasmexport quarry_abi_v1
func abiVersion() {}

//go:wasmexport quarry_alloc
func quarryAlloc(size int32) int32 {
	if int(size) > cap(inBuf) {
		inBuf = make([]byte, size)
	}
	inBuf = inBuf[:size]
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(inBuf))))
}

func packResult(out []byte) int64 {
	outBuf = out
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | int64(len(out))
}

// input returns the request the host wrote: it must be in the buffer
// quarry_alloc handed out (which the host reuses while requests fit).
func input(ptr, n int32) ([]byte, bool) {
	if ptr != int32(uintptr(unsafe.Pointer(unsafe.SliceData(inBuf)))) || n < 0 || int(n) > cap(inBuf) {
		return nil, false
	}
	return inBuf[:n], true
}

const errInput = "request is not in the buffer quarry_alloc returned"

//go:wasmexport quarry_rewrite
func quarryRewrite(ptr, n int32) int64 {
	in, ok := input(ptr, n)
	if !ok {
		return packResult(abi.AppendError(outBuf[:0], errInput))
	}
	return packResult(HandleRewrite(in, outBuf[:0]))
}

//go:wasmexport quarry_rank
func quarryRank(ptr, n int32) int64 {
	in, ok := input(ptr, n)
	if !ok {
		return packResult(abi.AppendError(outBuf[:0], errInput))
	}
	return packResult(HandleRank(in, outBuf[:0]))
}

//go:wasmimport quarry_abi_v1 log
func hostLog(level, ptr, n int32)

//go:wasmimport quarry_abi_v1 config
func hostConfig(ptr, capacity int32) int32

// Log writes a message to the broker's log, tagged with the plugin's name.
func Log(msg string) {
	if len(msg) == 0 {
		return
	}
	hostLog(abi.LevelInfo, int32(uintptr(unsafe.Pointer(unsafe.StringData(msg)))), int32(len(msg)))
}

var config []byte

// Config returns the plugin's configuration: the JSON given with the plugin
// in its pipeline step (empty if none).
func Config() []byte {
	if config != nil {
		return config
	}
	buf := make([]byte, 1024)
	for {
		n := hostConfig(int32(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))), int32(len(buf)))
		if int(n) <= len(buf) {
			config = buf[:n:n]
			return config
		}
		buf = make([]byte, n)
	}
}

// SetNativeConfig sets what Config returns, as in native builds (so tests
// that use sdktest also build for wasip1).
func SetNativeConfig(b []byte) { config = b }
