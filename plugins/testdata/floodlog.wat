;; A rewriter that changes nothing and logs a 4 KiB line 2,000 times a
;; call: what a plugin that floods its team's log rate costs (plugins
;; TestLogOverRateNotBuilt, node TestAttackIsolation).
(module
  (import "quarry_abi_v1" "log" (func $log (param i32 i32 i32)))
  (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (local $i i32)
    (local.set $i (i32.const 2000))
    (loop $more
      (call $log (i32.const 1) (i32.const 8192) (i32.const 4096))
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (br_if $more (local.get $i)))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))
