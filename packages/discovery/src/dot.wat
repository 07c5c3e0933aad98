;; Dot products of one query against `n` contiguous rows, 8 floats per step
;; (two f32x4 accumulators). `strideBytes` must be a multiple of 32.
;; The bytes embedded in src/simd.ts come from `wat2wasm --enable-simd dot.wat` (wabt 1.0.37).
(module
  (import "env" "memory" (memory 1))
  (func (export "dots")
    (param $m i32) (param $q i32) (param $out i32) (param $n i32) (param $strideBytes i32)
    (local $r i32) (local $j i32) (local $a v128) (local $b v128)
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $r) (local.get $n)))
        (local.set $a (v128.const i32x4 0 0 0 0))
        (local.set $b (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (block $end
          (loop $cols
            (br_if $end (i32.ge_u (local.get $j) (local.get $strideBytes)))
            (local.set $a
              (f32x4.add (local.get $a)
                (f32x4.mul
                  (v128.load (i32.add (local.get $m) (local.get $j)))
                  (v128.load (i32.add (local.get $q) (local.get $j))))))
            (local.set $b
              (f32x4.add (local.get $b)
                (f32x4.mul
                  (v128.load offset=16 (i32.add (local.get $m) (local.get $j)))
                  (v128.load offset=16 (i32.add (local.get $q) (local.get $j))))))
            (local.set $j (i32.add (local.get $j) (i32.const 32)))
            (br $cols)))
        (local.set $a (f32x4.add (local.get $a) (local.get $b)))
        (f32.store (local.get $out)
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a)) (f32x4.extract_lane 1 (local.get $a)))
            (f32.add (f32x4.extract_lane 2 (local.get $a)) (f32x4.extract_lane 3 (local.get $a)))))
        (local.set $m (i32.add (local.get $m) (local.get $strideBytes)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $rows)))))
