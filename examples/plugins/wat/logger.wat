;; A rewriter that changes nothing and says so: one line through the ABI's
;; log import (level info) and one on stdout (WASI fd_write), for each
;; request. `quarry plugin logs INDEX NAME` shows both with the request id
;; of the search they served (docs/plugins.md, "Logs").
;; Build: wat2wasm logger.wat -o logger.wasm
(module
  (import "quarry_abi_v1" "log" (func $log (param i32 i32 i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory 1)
  (data (i32.const 64) "rewrite: q left as it is")
  (data (i32.const 128) "hello from stdout\n")
  ;; One iovec for fd_write: the line at 128, 18 bytes.
  (data (i32.const 256) "\80\00\00\00\12\00\00\00")
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  ;; rewrite: log, print, and answer status 0 with no field changed.
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (call $log (i32.const 1) (i32.const 64) (i32.const 24))
    (drop (call $fd_write (i32.const 1) (i32.const 256) (i32.const 1) (i32.const 300)))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))
