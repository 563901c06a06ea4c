import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { asciiJson } from '../files/png.ts';
import type { NodeDefinition, NodeEnv, NodeScope } from './api.ts';
import { imagePath, saveImagePath } from './image-io.ts';
import { isLatent, type Latent, MAX_LATENT_VALUES, Tensor } from './latent.ts';
import { decodeSafetensors, safetensorsParts } from './safetensors.ts';

/**
 * SaveLatent and LoadLatent (nodes.py): `.latent` files are safetensors with
 * `latent_tensor` and an empty `latent_format_version_0` marker; a file
 * without the marker is an old one, scaled by 1 / 0.18215 when loaded.
 */

function listLatents(inputDir: string): string[] {
  try {
    return fs
      .readdirSync(inputDir, { withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.latent'))
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

function existingLatent(dirs: NodeEnv['dirs'], name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  try {
    const file = imagePath(dirs, name);
    return fs.statSync(file).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The most one write() hands the kernel. A file's page cache is allocated per
 * write call, in folios as large as the call allows (ext4 since Linux 6.16):
 * one 2.4 MB write takes 2 MB folios, which on a VM that reports free 2 MB
 * blocks to its host are likely blocks the host has taken back, every page of
 * them faulted in again inside the copy. Measured on this project's VM: the
 * same 2.4 MB took 0.4 to 5 ms of CPU in one write, 0.4 to 0.8 ms in 256 KB
 * writes.
 */
export const WRITE_CHUNK = 256 * 1024;

/** Creates `file` (EEXIST when it exists, as writeFileSync's `wx`) with the bytes of `parts` in order, at most `chunk` bytes a write. */
export function writeNewFile(file: string, parts: readonly Uint8Array[], chunk = WRITE_CHUNK): void {
  const fd = fs.openSync(file, 'wx');
  try {
    for (const part of parts) {
      // A short write (a signal, a full disk on the next call) goes on after the bytes that made it.
      for (let at = 0; at < part.byteLength; ) at += fs.writeSync(fd, part, at, Math.min(chunk, part.byteLength - at));
    }
  } finally {
    fs.closeSync(fd);
  }
}

export function latentFileNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  const scoped = (scope?: NodeScope) => scope?.dirs ?? dirs;
  return [
    {
      name: 'SaveLatent',
      category: '_for_testing',
      inputs: {
        required: { samples: ['LATENT'], filename_prefix: ['STRING', { default: 'latents/ComfyUI' }] },
        hidden: { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' },
      },
      outputs: [],
      outputNode: true,
      execute: async ({ samples, filename_prefix, prompt, extra_pnginfo }, ctx) => {
        if (!isLatent(samples)) throw new TypeError('expected a LATENT');
        const { folder, filename, subfolder, counter: first } = saveImagePath(String(filename_prefix), ctx.env.dirs.output, 0, 0);
        let counter = first;
        const metadata: Record<string, string> = { prompt: prompt === undefined || prompt === null ? '' : asciiJson(prompt) };
        if (extra_pnginfo && typeof extra_pnginfo === 'object') for (const [k, v] of Object.entries(extra_pnginfo)) metadata[k] = asciiJson(v);
        // The header, then the latent's own float32 bytes: no file-sized copy of the latent first.
        const parts = safetensorsParts({ latent_tensor: (samples as Latent).samples, latent_format_version_0: new Tensor([0], new Float32Array(0)) }, metadata);
        for (;;) {
          const file = `${filename}_${String(counter).padStart(5, '0')}_.latent`;
          try {
            writeNewFile(path.join(folder, file), parts);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
              counter++;
              continue;
            }
            throw err;
          }
          const item: Record<string, unknown> = { filename: file, subfolder, type: 'output' };
          const extra = await ctx.env.fileWritten?.({ filename: file, subfolder, type: 'output' });
          if (extra) Object.assign(item, extra);
          return { ui: { latents: [item] } };
        }
      },
    },
    {
      name: 'LoadLatent',
      category: '_for_testing',
      inputs: { required: { latent: [[]] } },
      dynamicInputs: (scope) => ({ required: { latent: [listLatents(scoped(scope).input)] } }),
      outputs: ['LATENT'],
      validateInputs: { inputs: ['latent'], fn: ({ latent }, scope) => (existingLatent(scoped(scope), latent) ? true : `Invalid latent file: ${latent}`) },
      isChanged: ({ latent }, scope) => {
        const file = existingLatent(scoped(scope), latent);
        return file ? createHash('sha256').update(fs.readFileSync(file)).digest('hex') : NaN;
      },
      execute: ({ latent }, ctx) => {
        const file = existingLatent(ctx.env.dirs, latent);
        if (!file) throw Object.assign(new Error(`Invalid latent file: ${latent}`), { pyType: 'FileNotFoundError' });
        const { tensors } = decodeSafetensors(fs.readFileSync(file), MAX_LATENT_VALUES);
        const t = tensors.latent_tensor;
        if (!t) throw Object.assign(new Error("'latent_tensor'"), { pyType: 'KeyError' });
        const multiplier = 'latent_format_version_0' in tensors ? 1 : Math.fround(1 / 0.18215);
        const data = new Float32Array(t.data.length);
        for (let i = 0; i < data.length; i++) data[i] = t.data[i]! * multiplier;
        return [{ samples: new Tensor(t.shape, data) } satisfies Latent];
      },
    },
  ];
}
