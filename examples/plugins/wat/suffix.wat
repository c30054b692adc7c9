;; A Quarry rewriter written by hand in WebAssembly text, from
;; docs/plugin-abi.md alone: it appends the word " spicy" to the user's text.
;; It shows the ABI is language-neutral. Build: wat2wasm suffix.wat -o suffix.wasm
(module
  (memory 1)
  ;; The ABI version marker.
  (func (export "quarry_abi_v1"))
  ;; Requests are written at offset 1024 (up to 32 KiB).
  (func (export "quarry_alloc") (param $size i32) (result i32)
    (if (i32.gt_u (local.get $size) (i32.const 32768)) (then unreachable))
    (i32.const 1024))
  ;; rewrite(ptr, len) -> (out_ptr << 32) | out_len
  ;; The request starts with q: u32 length, then its bytes. The response,
  ;; at offset 40960: status 0, flags FlagQ (1), u32 length, q + " spicy".
  (func (export "quarry_rewrite") (param $p i32) (param $n i32) (result i64)
    (local $qlen i32)
    (local.set $qlen (i32.load (local.get $p)))
    (i32.store8 (i32.const 40960) (i32.const 0))
    (i32.store8 (i32.const 40961) (i32.const 1))
    (i32.store (i32.const 40962) (i32.add (local.get $qlen) (i32.const 6)))
    (memory.copy (i32.const 40966) (i32.add (local.get $p) (i32.const 4)) (local.get $qlen))
    ;; " spicy" = 20 73 70 69 63 79
    (i32.store8 (i32.add (i32.const 40966) (local.get $qlen)) (i32.const 0x20))
    (i32.store (i32.add (i32.const 40967) (local.get $qlen)) (i32.const 0x63697073))
    (i32.store8 (i32.add (i32.const 40971) (local.get $qlen)) (i32.const 0x79))
    (i64.or
      (i64.shl (i64.const 40960) (i64.const 32))
      (i64.extend_i32_u (i32.add (local.get $qlen) (i32.const 12))))))
