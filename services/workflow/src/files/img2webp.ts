/**
 * Animated WebP of RGB frames through Google's img2webp (libwebp 1.6.0's
 * WebPAnimEncoder front end, a static binary shipped inside the
 * webp-converter package next to cwebp) instead of libvips' webpsave.
 * libvips does not expose the animation encoder's keyframe settings, so its
 * lossy animations were not the reference's; img2webp takes the ones
 * Pillow's _save_all passes (kmin/kmax 3/5 lossy, 9/17 lossless, as
 * gif2webp; no mixed mode, no minimize_size; loop 0; each frame's
 * quality, method and duration) and gives the reference's ANMF frames byte
 * for byte (checked for both modes, qualities 0/80/100, methods 0/4/6,
 * durations 1 to 100000 ms, 128² and 512²). It also takes quality 0, which
 * sharp refuses, and costs less CPU than libvips' build (4 photo-like 512²
 * frames, q80, method 4, this process and the child together, medians of
 * 9 on the 2-core VM: lossy 210 → 180 ms, lossless 820 → 680 ms).
 *
 * The one field img2webp cannot be told is the ANIM chunk's background
 * colour: it writes opaque white, Pillow its default background (0, 0, 0,
 * 0); the field is rewritten here. Frames go through PPM files in a
 * private temporary folder (img2webp reads files only, and its input
 * reader needs to seek): at most the node's pixel limit (checkSize, 64 Mi
 * pixels over all frames), 192 MiB. The folder is removed whatever happens
 * to the run; if the execution thread itself is terminated during it (the
 * child is killed then), or the process dies, the folder stays, and the
 * next encoder's first save removes it (its process is gone, or it is a
 * day old: no save takes that long). The
 * arguments go through a file img2webp reads them from, so the frame count
 * is not bounded by the command line's size. It is started by the thread's
 * shell (tool-runner.ts: no fork of this process), writing to a file beside
 * the frames' folder. Used only where the package
 * has the binary for this platform and it reports the libwebp release
 * sharp was built with; elsewhere, or when it fails, callers fall back to
 * sharp.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { outputOf, packagedCwebp } from './cwebp.ts';
import { newScratchFolder, writePpm } from './scratch-folders.ts';
import { toolEnvironment } from './tool-env.ts';
import { toolRunner, type ToolRunner } from './tool-runner.ts';
import { sharpLibwebpRelease } from './sharp.ts';
import type { AnimationEncoder } from './webp-encoders.ts';
import { nativeWebpAnimationEncoder } from './webp-native.ts';

export type { AnimationEncoder } from './webp-encoders.ts';

/** webp-converter's img2webp for this platform (next to its cwebp), or null where it ships none. */
export function packagedImg2webp(): string | null {
  const cwebp = packagedCwebp();
  return cwebp === null ? null : path.join(path.dirname(cwebp), 'img2webp');
}

/** The release img2webp reports for both its encoder and its muxer, or null when they differ or it does not run. */
function versionOf(binary: string): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(binary, ['-version'], { timeout: 10_000 }, (err, stdout) => {
      const text = String(stdout);
      const enc = /^WebP Encoder version: (\S+)$/m.exec(text)?.[1];
      const mux = /^WebP Mux version: (\S+)$/m.exec(text)?.[1];
      resolve(err || !enc || enc !== mux ? null : enc);
    });
  });
}

const PREFIX = 'wf-img2webp-';

/**
 * An encoder over the img2webp at `binary`, used only if it reports `libwebpVersion` (checked on the first encode);
 * frames are written under a new folder in `scratchDir`. A binary that fails to start is dropped for good; one that
 * exits with an error or writes no animation leaves that save to the caller.
 */
export function img2webpEncoder(binary: string | null, libwebpVersion: () => string, scratchDir: () => string = os.tmpdir, runner: ToolRunner = toolRunner()): AnimationEncoder {
  let usable: Promise<boolean> | undefined;
  const sweep: { swept?: Promise<void> } = {};
  return {
    async encodeAnimationRgb(frames, width, height, delayMs, lossless, quality, method) {
      if (binary === null || frames.length < 2) return null;
      // libwebp keeps timestamps in an int: a longer animation is left to the caller.
      if (frames.length * delayMs > 0x7fffffff) return null;
      usable ??= versionOf(binary).then((v) => v === libwebpVersion());
      if (!(await usable)) return null;
      const dir = await newScratchFolder(scratchDir(), PREFIX, sweep);
      if (dir === null) return null;
      try {
        // A frame that cannot be written (a full disk) leaves the save to the caller as a failed run does.
        const out = await run(runner, binary, dir, frames, width, height, delayMs, lossless, quality, method).catch(() => 'failed' as const);
        if (out === 'unstartable') usable = Promise.resolve(false);
        return Buffer.isBuffer(out) ? withPilBackground(out) : null;
      } finally {
        await fs.promises.rm(dir, { recursive: true, force: true });
      }
    },
  };
}

async function run(
  runner: ToolRunner,
  binary: string,
  dir: string,
  frames: Buffer[],
  width: number,
  height: number,
  delayMs: number,
  lossless: boolean,
  quality: number,
  method: number,
): Promise<Buffer | 'failed' | 'unstartable'> {
  // The frames, the argument file and nothing else in the folder the tool runs in; its output beside that folder.
  const work = path.join(dir, 'frames');
  await fs.promises.mkdir(work, { mode: 0o700 });
  const names: string[] = [];
  for (let i = 0; i < frames.length; i++) {
    const name = `${i}.ppm`;
    await writePpm(path.join(work, name), frames[i]!, width, height);
    names.push(name);
  }
  // Pillow's _save_all defaults (kmin/kmax from gif2webp, no mixed mode, no minimize_size); the per-frame options
  // hold for every frame after them. Frame names are relative to the folder the child runs in, so the argument
  // file (split at white space) holds no path of ours.
  const keyframes = lossless ? ['-kmin', '9', '-kmax', '17'] : ['-kmin', '3', '-kmax', '5'];
  const args = [...keyframes, '-loop', '0', '-d', String(delayMs), lossless ? '-lossless' : '-lossy', '-q', String(quality), '-m', String(method), ...names, '-o', '-'];
  const argFile = path.join(work, 'args');
  await fs.promises.writeFile(argFile, args.join('\n'), { flag: 'wx', mode: 0o600 });
  const output = path.join(dir, 'out.webp');
  const code = await runner.run(binary, [argFile], { cwd: work, stdoutFile: output });
  if (code === 'unstartable') return outputOf(spawn(binary, [argFile], { cwd: work, stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true, env: toolEnvironment() }));
  return code === 0 ? fs.promises.readFile(output) : 'failed';
}

/**
 * `webp` with the ANIM chunk's background colour set to 0 (transparent black, Pillow's default background), or
 * null when it is not an animated WebP of the layout WebPAnimEncoder writes (RIFF, VP8X, ANIM).
 */
export function withPilBackground(webp: Buffer): Buffer | null {
  const riff = webp.length >= 12 && webp.toString('latin1', 0, 4) === 'RIFF' && webp.toString('latin1', 8, 12) === 'WEBP';
  if (!riff || webp.readUInt32LE(4) + 8 !== webp.length) return null;
  // VP8X (10 bytes of data) comes first, ANIM (background colour, loop count) right after it.
  if (webp.length < 12 + 18 + 14 || webp.toString('latin1', 12, 16) !== 'VP8X' || webp.readUInt32LE(16) !== 10) return null;
  if (webp.toString('latin1', 30, 34) !== 'ANIM' || webp.readUInt32LE(34) !== 6) return null;
  webp.writeUInt32LE(0, 38);
  return webp;
}

let packaged: AnimationEncoder | undefined;

/**
 * The in-process encoder (files/webp-native.ts) where it was built, else the packaged img2webp; either is checked
 * against the libwebp release of sharp's build.
 */
export function defaultAnimationEncoder(): AnimationEncoder {
  return (packaged ??= nativeWebpAnimationEncoder(sharpLibwebpRelease()) ?? img2webpEncoder(packagedImg2webp(), sharpLibwebpRelease));
}
