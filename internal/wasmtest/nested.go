package wasmtest

import "bytes"

// Nested returns a module of funcs functions of type () -> (), each a body
// of locals i64 locals and depth nested empty blocks: the shape whose
// compile time grows with the square of depth. It is assembled here, as
// wat2wasm itself crashes on deep nesting; it is no plugin (no memory, no
// exports), only something to compile.
func Nested(funcs, depth, locals int) []byte {
	body := uleb(nil, 0)
	if locals > 0 {
		body = append(uleb(uleb(nil, 1), uint64(locals)), 0x7e) // one group of i64
	}
	body = append(body, bytes.Repeat([]byte{0x02, 0x40}, depth)...) // block (no result)
	body = append(body, bytes.Repeat([]byte{0x0b}, depth+1)...)     // end, and the function's
	fn, code := uleb(nil, uint64(funcs)), uleb(nil, uint64(funcs))
	for range funcs {
		fn = append(fn, 0) // type 0
		code = append(uleb(code, uint64(len(body))), body...)
	}
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range []struct {
		id   byte
		body []byte
	}{{1, []byte{1, 0x60, 0, 0}}, {3, fn}, {10, code}} {
		out = append(uleb(append(out, s.id), uint64(len(s.body))), s.body...)
	}
	return out
}

func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		if v >>= 7; v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
