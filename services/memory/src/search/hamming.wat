;; Hamming distances of 384-bit codes and int8 dot products with WebAssembly SIMD (V8 in Node 20).
;; Source of the bytes in hamming-wasm.ts: wat2wasm hamming.wat (wabt) then base64.
(module
  (import "env" "memory" (memory 1))
  ;; out[i] (u16) = popcount(codes[i] xor q) for i < n; codes are 48-byte rows.
  (func (export "hamming") (param $codes i32) (param $n i32) (param $q i32) (param $out i32)
    (local $q0 v128) (local $q1 v128) (local $q2 v128) (local $s v128) (local $end i32)
    (local.set $q0 (v128.load (local.get $q)))
    (local.set $q1 (v128.load offset=16 (local.get $q)))
    (local.set $q2 (v128.load offset=32 (local.get $q)))
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 1))))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $s
          (i8x16.add
            (i8x16.add
              (i8x16.popcnt (v128.xor (v128.load (local.get $codes)) (local.get $q0)))
              (i8x16.popcnt (v128.xor (v128.load offset=16 (local.get $codes)) (local.get $q1))))
            (i8x16.popcnt (v128.xor (v128.load offset=32 (local.get $codes)) (local.get $q2)))))
        (local.set $s (i32x4.extadd_pairwise_i16x8_u (i16x8.extadd_pairwise_i8x16_u (local.get $s))))
        (i32.store16 (local.get $out)
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $s)) (i32x4.extract_lane 1 (local.get $s)))
            (i32.add (i32x4.extract_lane 2 (local.get $s)) (i32x4.extract_lane 3 (local.get $s)))))
        (local.set $codes (i32.add (local.get $codes) (i32.const 48)))
        (local.set $out (i32.add (local.get $out) (i32.const 2)))
        (br $row))))
;; out[k] (i32) = dot(int8 row rows[k] of the vectors at v8, int16 query at q16) for k < m; rows are 384 bytes.
  (func (export "dot8") (param $v8 i32) (param $rows i32) (param $m i32) (param $q16 i32) (param $out i32)
    (local $end i32) (local $p i32) (local $j i32) (local $acc v128) (local $x v128)
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $m) (i32.const 2))))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $p (i32.add (local.get $v8) (i32.mul (i32.load (local.get $rows)) (i32.const 384))))
        (local.set $acc (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (loop $lanes
          (local.set $x (v128.load (i32.add (local.get $p) (local.get $j))))
          (local.set $acc (i32x4.add (local.get $acc)
            (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_s (local.get $x))
              (v128.load (i32.add (local.get $q16) (i32.shl (local.get $j) (i32.const 1)))))))
          (local.set $acc (i32x4.add (local.get $acc)
            (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_s (local.get $x))
              (v128.load offset=16 (i32.add (local.get $q16) (i32.shl (local.get $j) (i32.const 1)))))))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $lanes (i32.lt_u (local.get $j) (i32.const 384))))
        (i32.store (local.get $out)
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
            (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc)))))
        (local.set $rows (i32.add (local.get $rows) (i32.const 4)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $row))))
)
