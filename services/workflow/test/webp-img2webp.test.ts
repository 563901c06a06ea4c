/**
 * Several RGB frames go through the packaged img2webp (files/img2webp.ts):
 * its lossless animations are libvips' files (which webp-save.test.ts pins
 * to the reference's) for the node's methods and a spread of qualities, its
 * lossy animations and quality 0 the reference's (webp-save.test.ts and the
 * digests below); the options it is given are Pillow's; a binary that is
 * missing, reports another libwebp release, cannot start, fails or writes
 * something else leaves the save to libvips; the frame files are gone
 * afterwards in every case. No server, no storage.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { type StillEncoder } from '../src/files/cwebp.ts';
import { defaultAnimationEncoder, img2webpEncoder, packagedImg2webp, withPilBackground, type AnimationEncoder } from '../src/files/img2webp.ts';
import { pilExif } from '../src/files/webp-exif.ts';
import { encodeWebp } from '../src/nodes/animated-save.ts';
import { Frame } from '../src/nodes/image-types.ts';

const W = 61;
const H = 43;
/** Gradients plus noise, shifted per frame: the encoder's choices (keyframes, sub-rectangles, blending) matter. */
function pixels(shift: number): Buffer {
  const px = Buffer.alloc(W * H * 3);
  let seed = 7 + shift;
  for (let i = 0; i < W * H; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    const n = (seed >> 16) % 13;
    const x = i % W;
    const y = Math.floor(i / W);
    px[i * 3] = (x * 4 + n + shift * 9) & 255;
    px[i * 3 + 1] = (y * 5 + n) & 255;
    px[i * 3 + 2] = ((x + y) * 2 + n + shift * 3) & 255;
  }
  return px;
}
const rgb = [0, 1, 2, 3].map(pixels);
const libwebp = (sharp.versions as Record<string, string>).webp!;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex').slice(0, 16);
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';
const noStill: StillEncoder = { encodeRgb: async () => null };
const noAnimation: AnimationEncoder = { encodeAnimationRgb: async () => null };
const frames = () => rgb.map((px) => new Frame(W, H, 3, Buffer.from(px)));
const exif = pilExif([[0x0110, 'prompt:{"a": 1}']]);

/** Folders the tests make, removed at the end. */
const made: string[] = [];
after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A stand-in img2webp: answers -version with `version`, else copies its argument file and folder listing, then runs `script`. */
function fakeImg2webp(version: string, script: string): { binary: string; args: () => string[]; listing: () => string[] } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-img2webp-fake-'));
  made.push(dir);
  const binary = path.join(dir, 'img2webp');
  const args = path.join(dir, 'args');
  const listing = path.join(dir, 'listing');
  const versionLines = `echo 'WebP Encoder version: ${version}'; echo 'WebP Mux version: ${version}'; echo 'libsharpyuv: 0.4.2'`;
  fs.writeFileSync(binary, `#!/bin/sh\nif [ "$1" = -version ]; then ${versionLines}; exit 0; fi\ncp "$1" '${args}'\nls > '${listing}'\n${script}\n`, { mode: 0o755 });
  const lines = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').trim().split('\n') : []);
  return { binary, args: () => lines(args), listing: () => lines(listing) };
}

function scratch(): { dir: () => string; empty: () => boolean } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-img2webp-scratch-'));
  made.push(dir);
  return { dir: () => dir, empty: () => fs.readdirSync(dir).length === 0 };
}

describe('animated WebP through the packaged img2webp', () => {
  test('the package has the binary here, of the libwebp release sharp was built with', { skip: !linuxX64 && 'the package ships img2webp for linux-x64 only here' }, async () => {
    const binary = packagedImg2webp();
    assert.ok(binary && fs.existsSync(binary), `img2webp at ${binary}`);
    assert.notEqual(await img2webpEncoder(binary, () => libwebp).encodeAnimationRgb(rgb, W, H, 166, false, 80, 4), null, 'the packaged encoder is usable');
  });

  test('lossless: libvips’ files for the node’s methods and qualities 1 to 100, with the frame files gone', { skip: !linuxX64 && 'no packaged img2webp here' }, async () => {
    const tmp = scratch();
    const enc = img2webpEncoder(packagedImg2webp(), () => libwebp, tmp.dir);
    for (const method of [0, 4, 6]) {
      for (const quality of [1, 75, 100]) {
        const got = await enc.encodeAnimationRgb(rgb, W, H, 166, true, quality, method);
        assert.ok(got, `q${quality} m${method} encoded`);
        const viaLibvips = await encodeWebp(frames(), 166, true, quality, method, exif, noStill, noAnimation);
        assert.ok((await encodeWebp(frames(), 166, true, quality, method, exif, noStill, enc)).equals(viaLibvips), `q${quality} m${method}: the same file as libvips'`);
      }
    }
    assert.ok(tmp.empty(), 'no frame files left');
  });

  test('lossy and quality 0: the reference’s files', { skip: !linuxX64 && 'no packaged img2webp here' }, async () => {
    // SHA-256 (first 16 hex digits) of PIL's save(format='WEBP', save_all=True, duration=166, lossless=…, quality=q,
    // method=m) of these four frames, in the reference venv (Pillow 12.3, libwebp 1.6.0): webp-reference.py's `img2webp`.
    const pil: Record<string, string> = {
      'lossy q80 m4': 'd0ecaf6d2ba39d2b',
      'lossy q0 m0': '6c9ff3808b5d1c3e',
      'lossy q100 m6': '7727090fcdb5a050',
      'lossless q0 m4': 'a0f32577e40c292b',
    };
    // The packaged img2webp, and the encoder SaveAnimatedWEBP uses (the in-process one where npm install built it).
    for (const [which, enc] of [['img2webp', img2webpEncoder(packagedImg2webp(), () => libwebp)], ['the default', defaultAnimationEncoder()]] as const) {
      for (const key of Object.keys(pil)) {
        const [mode, q, m] = key.split(' ') as [string, string, string];
        const got = await enc.encodeAnimationRgb(rgb, W, H, 166, mode === 'lossless', Number(q.slice(1)), Number(m.slice(1)));
        assert.ok(got, `${which}: ${key} encoded`);
        assert.equal(sha(got), pil[key], `${which}: ${key}`);
      }
    }
    // libvips refuses quality 0; without the binary such a save fails as before.
    await assert.rejects(encodeWebp(frames(), 166, false, 0, 4, exif, noStill, noAnimation), /quality/);
    assert.ok(await encodeWebp(frames(), 166, false, 0, 4, exif), 'with it, quality 0 is saved');
  });

  test('Pillow’s options, the per-frame ones before the frames; the files in a folder of their own', async () => {
    const tmp = scratch();
    const fake = fakeImg2webp(libwebp, 'exit 3');
    const enc = img2webpEncoder(fake.binary, () => libwebp, tmp.dir);
    assert.equal(await enc.encodeAnimationRgb(rgb, W, H, 100000, false, 0, 6), null);
    assert.deepEqual(fake.args(), ['-kmin', '3', '-kmax', '5', '-loop', '0', '-d', '100000', '-lossy', '-q', '0', '-m', '6', '0.ppm', '1.ppm', '2.ppm', '3.ppm', '-o', '-']);
    assert.deepEqual(fake.listing(), ['0.ppm', '1.ppm', '2.ppm', '3.ppm', 'args']);
    assert.equal(await enc.encodeAnimationRgb(rgb.slice(0, 2), W, H, 1, true, 80, 0), null);
    assert.deepEqual(fake.args(), ['-kmin', '9', '-kmax', '17', '-loop', '0', '-d', '1', '-lossless', '-q', '80', '-m', '0', '0.ppm', '1.ppm', '-o', '-']);
    assert.ok(tmp.empty(), 'no frame files left after a failed run');
  });

  test('no binary, one that is missing, reports another release or mismatched parts: not used', async () => {
    const tmp = scratch();
    assert.equal(await img2webpEncoder(null, () => libwebp, tmp.dir).encodeAnimationRgb(rgb, W, H, 166, false, 80, 4), null);
    assert.equal(await img2webpEncoder(path.join(os.tmpdir(), 'no-such-dir', 'img2webp'), () => libwebp, tmp.dir).encodeAnimationRgb(rgb, W, H, 166, false, 80, 4), null);
    const other = fakeImg2webp('0.9.9', 'exit 0');
    const enc = img2webpEncoder(other.binary, () => libwebp, tmp.dir);
    assert.equal(await enc.encodeAnimationRgb(rgb, W, H, 166, false, 80, 4), null);
    assert.equal(await enc.encodeAnimationRgb(rgb, W, H, 166, false, 80, 4), null);
    assert.deepEqual(other.args(), [], 'never run for frames');
    const mixed = fakeImg2webp(libwebp, 'exit 0');
    fs.writeFileSync(mixed.binary, `#!/bin/sh\necho 'WebP Encoder version: ${libwebp}'; echo 'WebP Mux version: 0.9.9'\n`, { mode: 0o755 });
    assert.equal(await img2webpEncoder(mixed.binary, () => libwebp, tmp.dir).encodeAnimationRgb(rgb, W, H, 166, false, 80, 4), null);
    assert.ok(tmp.empty());
  });

  test('a run that fails or writes something else leaves the save to the caller, with no files left', async () => {
    const tmp = scratch();
    for (const script of ['exit 3', 'echo not-a-webp; exit 0', 'kill -9 $$']) {
      const fake = fakeImg2webp(libwebp, script);
      const enc = img2webpEncoder(fake.binary, () => libwebp, tmp.dir);
      assert.equal(await enc.encodeAnimationRgb(rgb, W, H, 166, true, 80, 4), null, script);
      assert.equal(await enc.encodeAnimationRgb(rgb, W, H, 166, true, 80, 4), null, `${script}, again: the binary stays in use`);
      assert.equal(fake.listing().length, 5, `${script}: run both times`);
    }
    assert.ok(tmp.empty());
    // A scratch folder that cannot be used leaves the save to the caller too.
    const fake = fakeImg2webp(libwebp, 'exit 0');
    const missing = path.join(tmp.dir(), 'no-such-dir');
    assert.equal(await img2webpEncoder(fake.binary, () => libwebp, () => missing).encodeAnimationRgb(rgb, W, H, 166, true, 80, 4), null);
    assert.deepEqual(fake.listing(), [], 'never run');
  });

  test('the ANIM background is rewritten to Pillow’s (0) only in a file of WebPAnimEncoder’s layout', () => {
    const file = Buffer.alloc(12 + 18 + 14);
    file.write('RIFF', 0, 'latin1');
    file.writeUInt32LE(file.length - 8, 4);
    file.write('WEBPVP8X', 8, 'latin1');
    file.writeUInt32LE(10, 16);
    file.write('ANIM', 30, 'latin1');
    file.writeUInt32LE(6, 34);
    file.writeUInt32LE(0xffffffff, 38);
    assert.equal(withPilBackground(Buffer.from(file))!.readUInt32LE(38), 0);
    const wrongSize = Buffer.from(file);
    wrongSize.writeUInt32LE(1, 4);
    assert.equal(withPilBackground(wrongSize), null);
    const noAnim = Buffer.from(file);
    noAnim.write('ANMF', 30, 'latin1');
    assert.equal(withPilBackground(noAnim), null);
  });

  test('SaveAnimatedWEBP’s lossless animation is the same with the binary or without it; other batches stay with libvips', async () => {
    for (const [quality, method] of [[80, 4], [100, 6], [1, 0]] as const) {
      const fallback = await encodeWebp(frames(), 166, true, quality, method, exif, noStill, noAnimation);
      assert.ok(fallback.equals(await encodeWebp(frames(), 166, true, quality, method, exif)), `q${quality} m${method}`);
    }
    // RGBA frames are not the node's (IMAGE is RGB) and are not given to img2webp.
    let asked = 0;
    const counting: AnimationEncoder = { encodeAnimationRgb: async () => (asked++, null) };
    const rgba = [0, 1].map(() => new Frame(W, H, 4, Buffer.alloc(W * H * 4, 200)));
    await encodeWebp(rgba, 166, true, 80, 4, exif, noStill, counting);
    assert.equal(asked, 0);
  });
  test('frame folders nobody will remove (a dead process\'s, or a day old) go at the next encoder\'s first save; a live process\'s recent ones stay', async () => {
    const sc = scratch();
    const dead = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.once('exit', () => resolve(child.pid!));
    });
    const mk = (name: string) => {
      fs.mkdirSync(path.join(sc.dir(), name));
      fs.writeFileSync(path.join(sc.dir(), name, 'frame-0.ppm'), 'P6');
      return name;
    };
    mk(`wf-img2webp-${dead}-aaaa`);
    const recent = mk(`wf-img2webp-${process.pid}-bbbb`);
    const old = mk(`wf-img2webp-${process.pid}-cccc`);
    const dayAgo = new Date(Date.now() - 25 * 3600_000);
    fs.utimesSync(path.join(sc.dir(), old), dayAgo, dayAgo);
    const other = mk('wf-img2webp-fake-dddd');
    const fake = fakeImg2webp(libwebp, 'exit 1');
    assert.equal(await img2webpEncoder(fake.binary, () => libwebp, sc.dir).encodeAnimationRgb(rgb, W, H, 100, true, 80, 4), null);
    assert.deepEqual(fs.readdirSync(sc.dir()).sort(), [recent, other].sort());
  });
});
