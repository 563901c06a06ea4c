import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CEPHES, fmaViaDouble, logF32, sincosF32, type Fma } from '../src/models/cephes-f32.ts';
import { Mt19937, TorchGenerator } from '../src/models/noise.ts';
import { BUF, FMA_PROBES, randnKernels } from '../src/models/randn-kernels.ts';

// torch.randn's values bit for bit: against torch's own output (hashes), and the SIMD kernels against the
// scalar JavaScript over every input the generator can give them.

const f = Math.fround;
const fixture = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'torch-randn-sha256.json'), 'utf8')) as {
  cases: Array<{ seed: string; count: number; sha256: string }>;
};
const sha = (v: Float32Array) => createHash('sha256').update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)).digest('hex');

test('randn gives torch 2.13’s values bit for bit (multiples of 16, remainders, 64-bit seeds, 3 M values)', () => {
  for (const c of fixture.cases) assert.equal(sha(new TorchGenerator(BigInt(c.seed)).randn(c.count)), c.sha256, `seed ${c.seed}, ${c.count} values`);
});

/** float32(a·b + c) with one rounding: the double sum rounded to odd (which then rounds to float32 as the exact sum does). */
const d64 = new Float64Array(1);
const w32 = new Uint32Array(d64.buffer);
const exactFma: Fma = (a, b, c) => {
  const p = a * b;
  const s = p + c;
  const v = s - p;
  const err = p - (s - v) + (c - v);
  if (err === 0) return f(s);
  d64[0] = s;
  if ((w32[0]! & 1) === 0) {
    if (err > 0 === s > 0) w32[0] = w32[0]! + 1;
    else {
      if (w32[0] === 0) w32[1] = w32[1]! - 1;
      w32[0] = (w32[0]! - 1) >>> 0;
    }
  }
  return f(d64[0]!);
};

test('the double-rounded multiply-adds equal fused ones for all 2²⁴ inputs of each function', () => {
  const a = new Float64Array(2);
  const b = new Float64Array(2);
  let bad = 0;
  for (let k = 0; k < 1 << 24; k++) {
    const u = k * 2 ** -24;
    if (!Object.is(logF32(1 - u, fmaViaDouble), logF32(1 - u, exactFma))) bad++;
    const theta = f(CEPHES.twoPi * u);
    sincosF32(theta, a, fmaViaDouble);
    sincosF32(theta, b, exactFma);
    if (!Object.is(a[0], b[0]) || !Object.is(a[1], b[1])) bad++;
  }
  assert.equal(bad, 0);
  // The check has teeth: a·b + c lying just above a float32 midpoint, by less than a double can hold.
  const [a1, b1, c1] = [2 ** 15 + 2 ** -8, 2 ** 15 - 2 ** -9, 2 ** -17 + 2 ** -40];
  assert.deepEqual([f(a1), f(b1), f(c1)], [a1, b1, c1]);
  assert.equal(exactFma(a1, b1, c1), 2 ** 30 + 128);
  assert.equal(fmaViaDouble(a1, b1, c1), 2 ** 30);
});

for (const mode of ['fused', 'emulated'] as const) test(`the SIMD Box–Muller (${mode} multiply-adds) equals the JavaScript one for all 2²⁴ uniforms, as radius and as angle`, (t) => {
  const k = randnKernels(mode);
  if (!k) return t.skip(mode === 'fused' ? 'no fused relaxed_madd here (relaxed SIMD or FMA missing)' : 'WebAssembly SIMD does not run here');
  assert.equal(k.mode, mode);
  const chunk = 1 << 16;
  k.reserve(BUF + chunk * 4 * 2 + 64);
  const trig = new Float64Array(2);
  let bad = 0;
  for (let start = 0; start < 1 << 24; start += chunk / 2) {
    // Blocks of 16: lanes 0–7 and 8–15 both take the uniforms start, start + 1, …
    const view = k.f32.subarray(BUF / 4, BUF / 4 + chunk);
    for (let b = 0; b < chunk / 16; b++) for (let j = 0; j < 8; j++) view[b * 16 + j] = view[b * 16 + j + 8] = (start + b * 8 + j) * 2 ** -24;
    k.boxMuller(BUF, chunk / 16);
    const out = k.f32.subarray(BUF / 4, BUF / 4 + chunk);
    for (let b = 0; b < chunk / 16; b++) {
      for (let j = 0; j < 8; j++) {
        const u = (start + b * 8 + j) * 2 ** -24;
        const r = f(Math.sqrt(f(-2 * logF32(f(1 - u)))));
        sincosF32(f(CEPHES.twoPi * u), trig);
        if (!Object.is(out[b * 16 + j], f(r * trig[1]!) + 0) || !Object.is(out[b * 16 + j + 8], f(r * trig[0]!) + 0)) bad++;
      }
    }
  }
  assert.equal(bad, 0);
});

test('the SIMD uniforms are the Mersenne Twister’s, across twists and from any position', (t) => {
  if (!randnKernels()) return t.skip('WebAssembly SIMD does not run here');
  for (const skip of [0, 1, 3, 623, 624, 625]) {
    const a = new Mt19937(2024);
    const b = new Mt19937(2024);
    for (let i = 0; i < skip; i++) {
      a.nextUint32();
      b.nextUint32();
    }
    const bulk = new Float32Array(5000);
    b.fillLow24(bulk, 0, 4999); // bulk: the kernels (64 or more)
    b.fillLow24(bulk, 4999, 5000); // one more: JavaScript, continuing from where the kernels left the state
    for (let i = 0; i < bulk.length; i++) if (bulk[i] !== (a.nextUint32() & 0xffffff) * 2 ** -24) assert.fail(`skip ${skip}, draw ${i}`);
    assert.equal(b.nextUint32(), a.nextUint32());
  }
});

test('the kernels take the fused multiply-add where the probe finds one (x86-64 with FMA3 here), else the emulated one', (t) => {
  const best = randnKernels();
  if (!best) return t.skip('WebAssembly SIMD does not run here');
  const fused = randnKernels('fused');
  assert.equal(best.mode, fused ? 'fused' : 'emulated');
  if (process.arch === 'x64' && fs.readFileSync('/proc/cpuinfo', 'utf8').includes(' fma ')) assert.ok(fused, 'this processor has FMA3: relaxed_madd should fuse');
  // The probe has teeth: its first three lanes tell a fused multiply-add from a multiply then add (and exactFma agrees).
  for (const [a, b, c, r] of FMA_PROBES) {
    assert.deepEqual([f(a), f(b), f(c), f(r)], [a, b, c, r], 'probe values are float32');
    assert.equal(exactFma(a, b, c), r);
  }
  assert.deepEqual(FMA_PROBES.map(([a, b, c, r]) => f(f(a * b) + c) === r), [false, false, false, true]);
});

for (const [what, env] of [
  ['the JavaScript path (no SIMD)', { WORKFLOW_IMAGE_KERNELS: 'js' }],
  ['the emulated multiply-adds', { WORKFLOW_RANDN_FMA: 'emulated' }],
] as const) test(`randn: ${what} gives the same values`, async () => {
  const { spawnSync } = await import('node:child_process');
  const script = `import { TorchGenerator } from ${JSON.stringify(path.join(import.meta.dirname, '..', 'src', 'models', 'noise.ts'))};
import { createHash } from 'node:crypto';
const v = new TorchGenerator(123456789).randn(1000003);
process.stdout.write(createHash('sha256').update(new Uint8Array(v.buffer)).digest('hex'));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, ...env }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, fixture.cases.find((c) => c.count === 1000003)!.sha256);
});
