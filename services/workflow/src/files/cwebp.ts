/**
 * WebP of one RGB frame through Google's release build of cwebp
 * (libwebp 1.6.0, a static binary shipped inside the webp-converter package)
 * instead of libvips' webpsave. Both run libwebp's lossless encoder with the
 * same configuration (the quality, the method, no `exact`, one thread) and
 * give the same bytes, as does the reference's Pillow (checked for methods
 * 0-6 and a spread of qualities from 0 to 100). libvips' build of the
 * library took about 20 % more CPU per 1024² photo-like frame at q80 /
 * method 4 than Google's or Pillow's on the 2-core VM (alternating runs,
 * medians of 20: cwebp 570 ms with its start and the pixels piped in,
 * Pillow 547, sharp 670). The thread's shell starts it (tool-runner.ts: a
 * fork of this process cost 5-13 ms of its CPU and a storm of page faults
 * after it), with the picture in a PPM file of a private folder and the
 * WebP written to a file there; where no shell runs, it is started here with
 * the picture piped in. The binary is used only where the package has one for
 * this platform and it reports the libwebp release sharp was built with (the
 * bytes are that release's encoder's); elsewhere, or when it cannot be
 * started, callers fall back to sharp. Lossy frames that @napi-rs/image
 * does not take (methods other than 4) come here too: cwebp's lossy files
 * are the reference's as well (methods 0/4/6, qualities 0, 1 and 80), and
 * it takes quality 0, which sharp refuses.
 */
import { execFile, spawn, type ChildProcessByStdio } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import { trackChild } from '../processes/child-processes.ts';
import { newScratchFolder, writePpm } from './scratch-folders.ts';
import { sharpLibwebpRelease } from './sharp.ts';
import { toolEnvironment } from './tool-env.ts';
import { toolRunner, type ToolRunner } from './tool-runner.ts';
import type { StillEncoder } from './webp-encoders.ts';
import { nativeWebpEncoder } from './webp-native.ts';

export type { StillEncoder } from './webp-encoders.ts';

/** webp-converter's cwebp for this platform, or null where it ships none (only linux-x64 is of use here). */
export function packagedCwebp(): string | null {
  if (process.platform !== 'linux' || process.arch !== 'x64') return null;
  try {
    const main = createRequire(import.meta.url).resolve('webp-converter');
    return path.join(path.dirname(main), '..', 'bin', 'libwebp_linux', 'bin', 'cwebp');
  } catch {
    return null;
  }
}

/** The first line of `cwebp -version` (the libwebp release), or null when the binary does not run. */
function versionOf(binary: string): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(binary, ['-version'], { timeout: 10_000 }, (err, stdout) => resolve(err ? null : String(stdout).split('\n')[0]!.trim()));
  });
}

/**
 * An encoder over the cwebp at `binary`, used only if it reports `libwebpVersion` (checked on the first encode).
 * A binary that fails to start is dropped for good; one that exits with an error leaves that frame to the caller.
 */
export function cwebpEncoder(binary: string | null, libwebpVersion: () => string, scratchDir: () => string = os.tmpdir, runner: ToolRunner = toolRunner()): StillEncoder {
  let usable: Promise<boolean> | undefined;
  const sweep: { swept?: Promise<void> } = {};
  return {
    async encodeRgb(rgb, width, height, lossless, quality, method) {
      if (binary === null) return null;
      usable ??= versionOf(binary).then((v) => v === libwebpVersion());
      if (!(await usable)) return null;
      const out = await runInShell(runner, binary, scratchDir(), sweep, rgb, width, height, lossless, quality, method);
      if (out === 'unstartable') usable = Promise.resolve(false);
      return Buffer.isBuffer(out) ? out : null;
    },
  };
}

const PREFIX = 'wf-cwebp-';

/** cwebp started by the thread's shell, on files in a private folder; 'unstartable' only if that binary cannot start when run from here either. */
async function runInShell(runner: ToolRunner, binary: string, scratch: string, sweep: { swept?: Promise<void> }, rgb: Buffer, width: number, height: number, lossless: boolean, quality: number, method: number): Promise<Buffer | 'failed' | 'unstartable'> {
  const dir = await newScratchFolder(scratch, PREFIX, sweep);
  if (dir === null) return run(binary, rgb, width, height, lossless, quality, method);
  try {
    const input = path.join(dir, 'in.ppm');
    const output = path.join(dir, 'out.webp');
    await writePpm(input, rgb, width, height);
    const code = await runner.run(binary, ['-quiet', ...(lossless ? ['-lossless'] : []), '-q', String(quality), '-m', String(method), '-o', output, '--', input]);
    if (code === 'unstartable') return await run(binary, rgb, width, height, lossless, quality, method);
    return code === 0 ? await fs.promises.readFile(output) : 'failed';
  } catch {
    // A picture that cannot be written (a full disk) leaves the frame to the caller, as a failed run does.
    return 'failed';
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

function run(binary: string, rgb: Buffer, width: number, height: number, lossless: boolean, quality: number, method: number): Promise<Buffer | 'failed' | 'unstartable'> {
  return new Promise((resolve) => {
    // `-- -` reads the picture (PPM: RGB, maxval 255) from stdin; `-o -` writes the file to stdout.
    const mode = lossless ? ['-lossless'] : [];
    const child = spawn(binary, ['-quiet', ...mode, '-q', String(quality), '-m', String(method), '-o', '-', '--', '-'], { stdio: ['pipe', 'pipe', 'ignore'], windowsHide: true, env: toolEnvironment() });
    // A child that dies early closes its stdin: the write fails, and the exit status tells.
    child.stdin.on('error', () => {});
    void outputOf(child).then(resolve);
    child.stdin.write(`P6\n${width} ${height}\n255\n`);
    child.stdin.end(rgb);
  });
}

/**
 * What a libwebp tool wrote to stdout when it exits with 0; 'failed' for another exit, 'unstartable' when the binary
 * could not be started. The child is listed meanwhile, so that stopping a stuck execution thread kills it too
 * (processes/child-processes.ts).
 */
export function outputOf(child: ChildProcessByStdio<Writable | null, Readable, null>): Promise<Buffer | 'failed' | 'unstartable'> {
  return new Promise((resolve) => {
    const untrack = trackChild(child.pid);
    const out: Buffer[] = [];
    // A binary that cannot be started gives 'error' (and may give 'close' too): the first answer wins.
    child.on('error', () => {
      untrack();
      resolve('unstartable');
    });
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.on('close', (code) => {
      untrack();
      resolve(code === 0 ? Buffer.concat(out) : 'failed');
    });
  });
}

let packaged: StillEncoder | undefined;

/**
 * The in-process encoder (files/webp-native.ts) where it was built, else the packaged cwebp; either is checked against
 * the libwebp release of sharp's build.
 */
export function defaultStillEncoder(): StillEncoder {
  return (packaged ??= nativeWebpEncoder(sharpLibwebpRelease()) ?? cwebpEncoder(packagedCwebp(), sharpLibwebpRelease));
}
