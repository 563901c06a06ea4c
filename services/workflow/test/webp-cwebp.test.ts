/**
 * One RGB frame (lossless, or lossy at methods @napi-rs/image does not
 * take) goes through the packaged cwebp (files/cwebp.ts) where the in-process
 * encoder was not built (webp-native.test.ts, which holds it to these bytes):
 * its bytes are libvips' (whose files webp-save.test.ts pins to the
 * reference's) for the node's methods and a spread of qualities, and the
 * reference's at quality 0, which sharp refuses; a binary
 * that is missing, reports another libwebp release, cannot start or fails
 * leaves the frame to libvips, with the same file (lossy too; lossy quality
 * 0 and methods 0/6 against the reference in webp-save.test.ts). No server,
 * no storage.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import { cwebpEncoder, packagedCwebp, type StillEncoder } from '../src/files/cwebp.ts';
import { pilExif } from '../src/files/webp-exif.ts';
import { encodeWebp } from '../src/nodes/animated-save.ts';
import { Frame } from '../src/nodes/image-types.ts';

const W = 61;
const H = 43;
/** Gradients plus noise: enough structure that the encoder's choices (transforms, cache, LZ77) matter. */
function pixels(): Buffer {
  const px = Buffer.alloc(W * H * 3);
  let seed = 7;
  for (let i = 0; i < W * H; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    const n = (seed >> 16) % 13;
    const x = i % W;
    const y = Math.floor(i / W);
    px[i * 3] = (x * 4 + n) & 255;
    px[i * 3 + 1] = (y * 5 + n) & 255;
    px[i * 3 + 2] = ((x + y) * 2 + n) & 255;
  }
  return px;
}
const rgb = pixels();
const viaLibvips = (quality: number, method: number) => sharp(rgb, { raw: { width: W, height: H, channels: 3 } }).webp({ lossless: true, quality, effort: method }).toBuffer();
const libwebp = (sharp.versions as Record<string, string>).webp!;
/** The packaged cwebp as the service uses it where the in-process encoder was not built (webp-native.test.ts). */
const packaged = () => cwebpEncoder(packagedCwebp(), () => libwebp);

function fakeCwebp(script: string): { binary: string; calls: () => string[] } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-cwebp-'));
  const binary = path.join(dir, 'cwebp');
  const log = path.join(dir, 'calls');
  fs.writeFileSync(binary, `#!/bin/sh\necho "$1" >> '${log}'\n${script}\n`, { mode: 0o755 });
  return { binary, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []) };
}

const linuxX64 = process.platform === 'linux' && process.arch === 'x64';

describe('lossless WebP through the packaged cwebp', () => {
  test('the package has the binary here, of the libwebp release sharp was built with', { skip: !linuxX64 && 'the package ships cwebp for linux-x64 only here' }, async () => {
    const binary = packagedCwebp();
    assert.ok(binary && fs.existsSync(binary), `cwebp at ${binary}`);
    assert.notEqual(await packaged().encodeRgb(rgb, W, H, true, 80, 4), null, 'the packaged encoder is usable');
  });

  test('libvips’ bytes for the node’s methods (fastest, default, slowest) and qualities 1 to 100', { skip: !linuxX64 && 'no packaged cwebp here' }, async () => {
    const enc = packaged();
    for (const method of [0, 4, 6]) {
      for (const quality of [1, 30, 75, 80, 100]) {
        const got = await enc.encodeRgb(rgb, W, H, true, quality, method);
        assert.ok(got, `q${quality} m${method} encoded`);
        assert.ok(got.equals(await viaLibvips(quality, method)), `q${quality} m${method}: the same file as libvips'`);
      }
    }
  });

  test('quality 0 (the node’s minimum, which sharp refuses): the reference’s files', { skip: !linuxX64 && 'no packaged cwebp here' }, async () => {
    // SHA-256 (first 16 hex digits) of PIL's save(format='WEBP', save_all=True, lossless=True, quality=0, method=m)
    // of these pixels, in the reference venv (Pillow 12.3, libwebp 1.6.0).
    const pil: Record<number, string> = { 0: 'd9b1011876ca28bb', 4: '2d9fdc468ae73e9c', 6: '0915286d7e4d6bf7' };
    for (const method of [0, 4, 6]) {
      const got = await packaged().encodeRgb(rgb, W, H, true, 0, method);
      assert.ok(got, `m${method} encoded`);
      assert.equal(createHash('sha256').update(got).digest('hex').slice(0, 16), pil[method], `m${method}`);
    }
  });

  test('no binary, one that is missing or reports another release: not used', async () => {
    assert.equal(await cwebpEncoder(null, () => libwebp).encodeRgb(rgb, W, H, true, 80, 4), null);
    assert.equal(await cwebpEncoder(path.join(os.tmpdir(), 'no-such-dir', 'cwebp'), () => libwebp).encodeRgb(rgb, W, H, true, 80, 4), null);
    const other = fakeCwebp('echo 0.9.9; exit 0');
    const enc = cwebpEncoder(other.binary, () => libwebp);
    assert.equal(await enc.encodeRgb(rgb, W, H, true, 80, 4), null);
    assert.equal(await enc.encodeRgb(rgb, W, H, true, 80, 4), null);
    assert.deepEqual(other.calls(), ['-version'], 'asked once, never run for a picture');
  });

  test('a run that fails leaves that frame to the caller; the binary stays in use', async () => {
    const failing = fakeCwebp(`if [ "$1" = -version ]; then echo ${libwebp}; echo 'libsharpyuv: 0.4.2'; exit 0; fi\ncat > /dev/null; exit 3`);
    const enc = cwebpEncoder(failing.binary, () => libwebp);
    assert.equal(await enc.encodeRgb(rgb, W, H, true, 80, 4), null);
    assert.equal(await enc.encodeRgb(rgb, W, H, true, 80, 4), null);
    assert.deepEqual(failing.calls(), ['-version', '-quiet', '-quiet']);
    // One that dies without reading its input (a closed stdin) is a failure too, not an error.
    const early = fakeCwebp(`if [ "$1" = -version ]; then echo ${libwebp}; exit 0; fi\nexit 1`);
    assert.equal(await cwebpEncoder(early.binary, () => libwebp).encodeRgb(Buffer.alloc(1024 * 1024 * 3), 1024, 1024, true, 80, 4), null);
  });

  test('SaveAnimatedWEBP’s file is the same with the binary or without it (libvips), lossless and lossy', async () => {
    const unusable: StillEncoder = { encodeRgb: async () => null };
    const exif = pilExif([[0x0110, 'prompt:{"a": 1}']]);
    for (const lossless of [true, false]) {
      for (const [quality, method] of [[80, 4], [100, 6], [1, 0], [75, 6]] as const) {
        const frame = () => [new Frame(W, H, 3, Buffer.from(rgb))];
        const fallback = await encodeWebp(frame(), 166, lossless, quality, method, exif, unusable);
        assert.ok(fallback.equals(await encodeWebp(frame(), 166, lossless, quality, method, exif)), `${lossless ? 'lossless' : 'lossy'} q${quality} m${method}`);
      }
    }
  });
});
