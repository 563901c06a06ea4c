/**
 * The in-process WebP encoder (files/webp-native.ts, the addon `npm install`
 * builds from services/workflow/native/webp-encoder.c): cwebp's bytes for both
 * modes, every method and a spread of qualities (webp-cwebp.test.ts pins
 * cwebp's to libvips' and the reference's), img2webp's animations (which
 * webp-img2webp.test.ts pins to the reference's), the same bytes when encodes
 * overlap, arguments it refuses, and an addon that is missing or reports
 * another libwebp release is not used. No server, no storage.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import sharp from 'sharp';
import { defaultStillEncoder, packagedCwebp } from '../src/files/cwebp.ts';
import { defaultAnimationEncoder, img2webpEncoder, packagedImg2webp } from '../src/files/img2webp.ts';
import { encoderVersionNumber, NATIVE_WEBP_ADDON, nativeWebpAnimationEncoder, nativeWebpEncoder } from '../src/files/webp-native.ts';

const W = 97;
const H = 61;
function pixels(w = W, h = H, shift = 0): Buffer {
  const px = Buffer.alloc(w * h * 3);
  let seed = 11 + shift;
  for (let i = 0; i < w * h; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    const n = (seed >> 16) % 17;
    const x = i % w;
    const y = Math.floor(i / w);
    px[i * 3] = (x * 3 + n + shift * 9) & 255;
    px[i * 3 + 1] = (y * 4 + n) & 255;
    px[i * 3 + 2] = ((x ^ y) + n) & 255;
  }
  return px;
}
const rgb = pixels();
const libwebp = (sharp.versions as Record<string, string>).webp!;
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';
/** Where `npm install` could build it: linux-x64 with a C compiler. */
const buildable = linuxX64 && (() => {
  try {
    execFileSync(process.env.CC || 'cc', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function viaCwebp(lossless: boolean, quality: number, method: number, px = rgb, w = W, h = H): Buffer {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-native-webp-'));
  try {
    fs.writeFileSync(path.join(dir, 'in.ppm'), Buffer.concat([Buffer.from(`P6\n${w} ${h}\n255\n`), px]));
    execFileSync(packagedCwebp()!, ['-quiet', ...(lossless ? ['-lossless'] : []), '-q', String(quality), '-m', String(method), '-o', path.join(dir, 'out.webp'), '--', path.join(dir, 'in.ppm')]);
    return fs.readFileSync(path.join(dir, 'out.webp'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('WebP in this process (the native addon)', { skip: !buildable && 'the addon is built on linux-x64 with a C compiler only' }, () => {
  test('npm install built it, of the libwebp release sharp was built with, and it is the encoder SaveAnimatedWEBP uses', () => {
    assert.ok(fs.existsSync(NATIVE_WEBP_ADDON), `addon at ${NATIVE_WEBP_ADDON}`);
    const addon = createRequire(import.meta.url)(NATIVE_WEBP_ADDON) as { version(): number };
    assert.equal(addon.version(), encoderVersionNumber(libwebp));
    assert.ok(nativeWebpEncoder(libwebp));
    assert.equal(String(defaultStillEncoder().encodeRgb), String(nativeWebpEncoder(libwebp)!.encodeRgb), 'the default still encoder is the addon');
    assert.equal(String(defaultAnimationEncoder().encodeAnimationRgb), String(nativeWebpAnimationEncoder(libwebp)!.encodeAnimationRgb), 'and the default animation encoder');
  });

  test('img2webp’s animations: both modes, methods 0/2/4/6, qualities 0 to 100, 2 to 12 frames, 1 ms to 100 s a frame', async () => {
    const enc = nativeWebpAnimationEncoder(libwebp)!;
    const tool = img2webpEncoder(packagedImg2webp(), () => libwebp);
    const frames = [0, 1, 2, 3, 4].map((k) => pixels(W, H, k));
    for (const count of [2, 5, 12]) {
      const batch = Array.from({ length: count }, (_, i) => frames[i % frames.length]!);
      for (const lossless of [false, true]) {
        for (const [quality, method, delay] of [[0, 0, 1], [80, 4, 166], [100, 6, 100_000], [75, 2, 40]] as const) {
          const what = `${count} frames ${lossless ? 'lossless' : 'lossy'} q${quality} m${method} ${delay} ms`;
          const got = await enc.encodeAnimationRgb(batch, W, H, delay, lossless, quality, method);
          const want = await tool.encodeAnimationRgb(batch, W, H, delay, lossless, quality, method);
          assert.ok(got && want && got.equals(want), what);
        }
      }
    }
    // Frames above 2048² go to the tools' processes (libwebp's memory), still and animated alike.
    const big = Buffer.alloc(2049 * 2048 * 3);
    assert.equal(await nativeWebpEncoder(libwebp)!.encodeRgb(big, 2049, 2048, true, 80, 4), null);
    assert.equal(await enc.encodeAnimationRgb([big, big], 2048, 2049, 166, true, 80, 4), null);
    assert.ok(await nativeWebpEncoder(libwebp)!.encodeRgb(big, 2048, 2048, false, 80, 0), 'a 2048² frame is encoded here');
    // As img2webp's: one frame, or a run past libwebp's int timestamps, is left to the caller.
    assert.equal(await enc.encodeAnimationRgb([rgb], W, H, 166, true, 80, 4), null);
    assert.equal(await enc.encodeAnimationRgb([rgb, rgb, rgb], W, H, 0x40000000, true, 80, 4), null);
  });

  test('cwebp’s bytes: lossless and lossy, methods 0-6, qualities 0 to 100', async () => {
    const enc = nativeWebpEncoder(libwebp)!;
    for (const lossless of [true, false]) {
      for (const method of [0, 1, 2, 3, 4, 5, 6]) {
        for (const quality of [0, 1, 50, 80, 100]) {
          const got = await enc.encodeRgb(rgb, W, H, lossless, quality, method);
          assert.ok(got?.equals(viaCwebp(lossless, quality, method)), `${lossless ? 'lossless' : 'lossy'} q${quality} m${method}`);
        }
      }
    }
  });

  test('a run of encodes of other sizes and settings gives each its own bytes', async () => {
    const enc = nativeWebpEncoder(libwebp)!;
    const jobs = [
      [true, 80, 0],
      [false, 80, 4],
      [true, 100, 6],
      [false, 1, 0],
      [true, 0, 3],
      [false, 100, 6],
    ] as const;
    const inputs = jobs.map((_, i) => (i % 2 ? pixels(W + i, H) : rgb));
    const got = await Promise.all(jobs.map(([l, q, m], i) => enc.encodeRgb(inputs[i]!, i % 2 ? W + i : W, H, l, q, m)));
    jobs.forEach(([l, q, m], i) => assert.ok(got[i]!.equals(viaCwebp(l, q, m, inputs[i], i % 2 ? W + i : W, H)), `job ${i}`));
  });

  test('a raised stop flag ends an encode under way in a thread, which can then be terminated; a lowered one changes nothing', async () => {
    const addonPath = NATIVE_WEBP_ADDON;
    const lowered = new Int32Array(new SharedArrayBuffer(8)).subarray(1);
    const addon = createRequire(import.meta.url)(addonPath) as { encode(...a: unknown[]): Buffer };
    assert.ok(addon.encode(rgb, W, H, true, 80, 4, lowered).equals(viaCwebp(true, 80, 4)));
    // Pictures that take seconds at the slowest method, encoded on the thread (which blocks it) while the flag rises.
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
      const addon = require(workerData.addonPath);
      const n = 1536, px = Buffer.alloc(n * n * 3);
      for (let i = 0; i < px.length; i++) px[i] = Math.imul(i, 2654435761) >>> 24;
      const report = (what, call) => { try { call(); parentPort.postMessage(what + ': encoded'); } catch (e) { parentPort.postMessage(what + ': ' + e.message); } };
      parentPort.postMessage('started');
      report('still', () => addon.encode(px, n, n, true, 100, 6, workerData.stop));
      report('animation', () => addon.encodeAnimation([px, px, px], n, n, 100, true, 100, 6, workerData.stop));`,
      { eval: true, workerData: { addonPath, stop } },
    );
    const messages: string[] = [];
    const settled = new Promise<void>((resolve) => worker.on('message', (m: string) => (messages.push(m), messages.length === 3 && resolve())));
    await new Promise<void>((resolve) => worker.once('message', () => resolve()));
    Atomics.store(stop, 0, 1);
    await settled;
    assert.deepEqual(messages.slice(1), ['still: webp-encoder: stopped', 'animation: webp-encoder: stopped']);
    await worker.terminate();
  });

  test('arguments it refuses reject with a RangeError; nothing is read past the pixels', async () => {
    const enc = nativeWebpEncoder(libwebp)!;
    const refused: Array<[string, () => Promise<unknown>]> = [
      ['width 0', () => enc.encodeRgb(rgb, 0, H, true, 80, 4)],
      ['fewer bytes than the picture', () => enc.encodeRgb(rgb.subarray(0, rgb.length - 1), W, H, true, 80, 4)],
      ['quality 101', () => enc.encodeRgb(rgb, W, H, true, 101, 4)],
      ['quality NaN', () => enc.encodeRgb(rgb, W, H, true, NaN, 4)],
      ['method 7', () => enc.encodeRgb(rgb, W, H, true, 80, 7)],
      ['method -1', () => enc.encodeRgb(rgb, W, H, true, 80, -1)],
      ['not bytes', () => enc.encodeRgb(new Float32Array(W * H * 3) as unknown as Buffer, W, H, true, 80, 4)],
      ['width as a string', () => enc.encodeRgb(rgb, String(W) as unknown as number, H, true, 80, 4)],
    ];
    const anim = nativeWebpAnimationEncoder(libwebp)!;
    refused.push(
      ['a frame shorter than the others', () => anim.encodeAnimationRgb([rgb, rgb.subarray(0, 10)], W, H, 100, true, 80, 4)],
      ['a frame that is not bytes', () => anim.encodeAnimationRgb([rgb, {} as Buffer], W, H, 100, true, 80, 4)],
      ['an animation at quality 101', () => anim.encodeAnimationRgb([rgb, rgb], W, H, 100, true, 101, 4)],
      ['a delay of -1 (2^32 - 1 frames of a ms)', () => anim.encodeAnimationRgb([rgb, rgb], W, H, -1, true, 80, 4)],
    );
    const raw = createRequire(import.meta.url)(NATIVE_WEBP_ADDON) as { encode(...a: unknown[]): Buffer };
    refused.push(
      ['a stop flag that is not an Int32Array', async () => raw.encode(rgb, W, H, true, 80, 4, new Uint8Array(4))],
      ['an empty stop flag', async () => raw.encode(rgb, W, H, true, 80, 4, new Int32Array(0))],
      // Sizes the service sends to the tools instead (above 2048²), refused by the addon itself.
      ['height 16384', async () => raw.encode(Buffer.alloc(3 * 16384), 1, 16384, true, 80, 4)],
      ['a picture of 2^32 pixels claimed over a small buffer', async () => raw.encode(rgb, 65536, 65536, true, 80, 4)],
    );
    for (const [what, call] of refused) await assert.rejects(call, RangeError, what);
    // The largest picture libwebp takes is encoded (one row of 16383 pixels).
    assert.ok(await enc.encodeRgb(Buffer.alloc(16383 * 3, 90), 16383, 1, true, 80, 0));
    assert.ok(raw.encode(Buffer.alloc(16383 * 3, 90), 1, 16383, true, 80, 0));
  });
});

test('an addon that is missing, is not one, or reports another libwebp release is not used', () => {
  assert.equal(nativeWebpEncoder(libwebp, path.join(os.tmpdir(), 'no-such-dir', 'webp-encoder.node')), null);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-native-webp-'));
  try {
    const junk = path.join(dir, 'webp-encoder.node');
    fs.writeFileSync(junk, 'not a shared object');
    assert.equal(nativeWebpEncoder(libwebp, junk), null);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (fs.existsSync(NATIVE_WEBP_ADDON)) assert.equal(nativeWebpEncoder('1.5.0'), null);
  assert.ok(Number.isNaN(encoderVersionNumber('1.6')));
  assert.equal(encoderVersionNumber('1.6.0'), 0x010600);
});
