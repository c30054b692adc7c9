;; A linear ranker written by hand (benchmark fixture): score' = score +
;; 0.3 * field 0, read in place from the request's first (numbers) column.
;; The host sorts the result (flag 1). No language runtime: it measures the
;; ABI and the host.
(module
  (memory 4)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param $size i32) (result i32)
    (if (i32.gt_u (local.get $size) (i32.const 120000)) (then unreachable))
    (i32.const 1024))
  (func (export "quarry_rank") (param $p i32) (param $len i32) (result i64)
    (local $nf i32) (local $n i32) (local $i i32) (local $scores i32) (local $col i32) (local $w i32)
    ;; skip q and context
    (local.set $p (i32.add (local.get $p) (i32.add (i32.const 4) (i32.load (local.get $p)))))
    (local.set $p (i32.add (local.get $p) (i32.add (i32.const 4) (i32.load (local.get $p)))))
    ;; skip the field names
    (local.set $nf (i32.load (local.get $p)))
    (local.set $p (i32.add (local.get $p) (i32.const 4)))
    (local.set $i (i32.const 0))
    (block $done (loop $names
      (br_if $done (i32.ge_u (local.get $i) (local.get $nf)))
      (local.set $p (i32.add (local.get $p) (i32.add (i32.const 4) (i32.load (local.get $p)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $names)))
    ;; the count, then skip the ids in one step by their total size
    (local.set $n (i32.load (local.get $p)))
    (local.set $p (i32.add (local.get $p) (i32.add (i32.const 8) (i32.load (i32.add (local.get $p) (i32.const 4))))))
    (local.set $scores (local.get $p))
    ;; the first column: kind byte, padding to 8 (the request starts at an
    ;; aligned 1024), then n f64
    (local.set $col (i32.and
      (i32.add (i32.add (local.get $scores) (i32.mul (local.get $n) (i32.const 8))) (i32.const 8))
      (i32.const -8)))
    ;; response at 131072: status 0, flags 1, count, entries
    (i32.store8 (i32.const 131072) (i32.const 0))
    (i32.store8 (i32.const 131073) (i32.const 1))
    (i32.store (i32.const 131074) (local.get $n))
    (local.set $w (i32.const 131078))
    (local.set $i (i32.const 0))
    (block $done (loop $rank
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (i32.store (local.get $w) (local.get $i))
      (f64.store (i32.add (local.get $w) (i32.const 4))
        (f64.add
          (f64.load (i32.add (local.get $scores) (i32.mul (local.get $i) (i32.const 8))))
          (f64.mul (f64.const 0.3) (f64.load (i32.add (local.get $col) (i32.mul (local.get $i) (i32.const 8)))))))
      (local.set $w (i32.add (local.get $w) (i32.const 12)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $rank)))
    (i64.or (i64.shl (i64.const 131072) (i64.const 32))
            (i64.extend_i32_u (i32.add (i32.const 6) (i32.mul (local.get $n) (i32.const 12)))))))
