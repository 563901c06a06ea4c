import v8 from 'node:v8';

/**
 * A WebAssembly module that uses relaxed SIMD (here: f32x4.relaxed_madd),
 * compiled where the engine takes it. Node 22's V8 has the proposal on by
 * default; Node 20's (V8 11.3) has the finished implementation behind
 * `--experimental-wasm-relaxed-simd`, which V8 reads when it validates a
 * module, so it is turned on here (once, process-wide) the first time such a
 * module is refused. It adds instructions and changes nothing for modules
 * that do not use them. Returns null where the module still does not compile.
 *
 * Relaxed instructions may give either of two results (relaxed_madd: fused or
 * not), fixed for a given engine and processor; callers probe which before
 * they rely on one.
 */
let flagSet = false;

export function compileRelaxed(bytes: Uint8Array<ArrayBuffer>): WebAssembly.Module | null {
  if (!WebAssembly.validate(bytes)) {
    if (flagSet) return null;
    flagSet = true;
    try {
      v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
    } catch {
      return null;
    }
    if (!WebAssembly.validate(bytes)) return null;
  }
  try {
    return new WebAssembly.Module(bytes);
  } catch {
    return null;
  }
}
