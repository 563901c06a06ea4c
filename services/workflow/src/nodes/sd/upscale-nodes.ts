/**
 * The reference's upscale-model nodes (comfy_extras/nodes_upscale_model):
 * UpscaleModelLoader reads an ESRGAN-class, SwinIR, Swin2SR, HAT or DAT model
 * from models/upscale_models (src/models/esrgan.ts, swinir.ts, swin2sr.ts,
 * hat.ts, dat.ts),
 * ImageUpscaleWithModel runs it over an image in 512-pixel tiles overlapping
 * by 32 (halved while the runtime runs out of memory, down to 128) and clamps
 * the result to [0, 1].
 */
import fs from 'node:fs';
import { ModelFolders } from '../../domain/models.ts';
import { tiledScale, UpscaleModel } from '../../models/esrgan.ts';
import { ModelFileError } from '../../models/safetensors.ts';
import type { NodeDefinition, NodeEnv, NodeInputs } from '../api.ts';
import { checkSize, Frame, ImageBatch } from '../image-types.ts';

const TILE = 512;
const OVERLAP = 32;

/** An allocation failure of ONNX Runtime (its CPU arena's bad_alloc, a device's out of memory): the reference's OOM_EXCEPTION. */
export function isOutOfMemory(err: unknown): boolean {
  return err instanceof Error && /failed to allocate|bad_alloc|out of memory/i.test(err.message);
}

/** ImageUpscaleWithModel's retry: the whole image again with the tile halved after an out-of-memory, until it would be under 128. */
export async function withTileHalving<T>(attempt: (tile: number) => Promise<T>, tile = TILE): Promise<T> {
  for (;;) {
    try {
      return await attempt(tile);
    } catch (err) {
      if (!isOutOfMemory(err) || Math.floor(tile / 2) < 128) throw err;
      tile = Math.floor(tile / 2);
    }
  }
}

function nodeError(message: string, pyType = 'RuntimeError'): Error {
  return Object.assign(new Error(message), { pyType });
}

/** Loaded models by file and stat, so a prompt re-run does not rebuild the session; two are kept. */
const loaded = new Map<string, { key: string; model: Promise<UpscaleModel> }>();
const KEPT = 2;

async function openModel(file: string): Promise<UpscaleModel> {
  const st = await fs.promises.stat(file);
  const key = `${st.size}:${st.mtimeMs}:${st.ino}`;
  const hit = loaded.get(file);
  if (hit && hit.key === key) {
    loaded.delete(file);
    loaded.set(file, hit);
    return hit.model;
  }
  if (hit) void hit.model.then((m) => m.release()).catch(() => {});
  const model = UpscaleModel.open(file);
  loaded.set(file, { key, model });
  model.catch(() => loaded.delete(file));
  while (loaded.size > KEPT) {
    const [oldest, entry] = loaded.entries().next().value!;
    loaded.delete(oldest);
    void entry.model.then((m) => m.release()).catch(() => {});
  }
  return model;
}

export function upscaleModelNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  const folders = (d: NodeEnv['dirs']) => new ModelFolders(d.models, '');
  const loaderInputs = (scope?: { dirs: NodeEnv['dirs'] }): NodeInputs => ({ required: { model_name: [folders((scope ?? { dirs }).dirs).filenames('upscale_models')] } });
  return [
    {
      name: 'UpscaleModelLoader',
      displayName: 'Load Upscale Model',
      category: 'loaders',
      pythonModule: 'comfy_extras.nodes_upscale_model',
      v3Schema: true,
      inputs: loaderInputs(),
      dynamicInputs: loaderInputs,
      outputs: ['UPSCALE_MODEL'],
      execute: async ({ model_name }, ctx) => {
        const file = typeof model_name === 'string' ? folders(ctx.env.dirs).fullPath('upscale_models', model_name) : undefined;
        if (!file) throw nodeError(`Model in folder 'upscale_models' with filename '${String(model_name)}' not found.`, 'FileNotFoundError');
        try {
          return [await openModel(file)];
        } catch (err) {
          if (err instanceof ModelFileError) throw nodeError(`Upscale model ${String(model_name)}: ${err.message}`, 'UnsupportedModelError');
          throw err;
        }
      },
    },
    {
      name: 'ImageUpscaleWithModel',
      displayName: 'Upscale Image (using Model)',
      category: 'image/upscaling',
      pythonModule: 'comfy_extras.nodes_upscale_model',
      v3Schema: true,
      inputs: { required: { upscale_model: ['UPSCALE_MODEL'], image: ['IMAGE'] } },
      outputs: ['IMAGE'],
      execute: async ({ upscale_model, image }, ctx) => {
        if (!(upscale_model instanceof UpscaleModel)) throw nodeError('the upscale_model input is not an UPSCALE_MODEL');
        if (!(image instanceof ImageBatch)) throw nodeError('the image input is not an IMAGE');
        const model = upscale_model;
        const { width: W, height: H } = image;
        const B = image.frames.length;
        const s = model.scale;
        checkSize(W * s, H * s, B);
        const channels = model.config.inChannels / model.config.shuffle ** 2;
        if (channels !== 3) throw nodeError(`this upscale model takes ${channels}-channel images; IMAGE has 3`);
        // [B, H, W, 3] bytes → planar [B, 3, H, W] in [0, 1], as image.movedim(-1, -3).
        const planar = new Float32Array(B * 3 * H * W);
        image.frames.forEach((f, n) => {
          const src = f.data;
          for (let i = 0; i < H * W; i++) for (let c = 0; c < 3; c++) planar[(n * 3 + c) * H * W + i] = src[i * f.channels + c]! / 255;
        });
        const out = await withTileHalving((tileSize) => {
          const steps = (size: number) => (size <= tileSize ? 1 : Math.ceil((size - OVERLAP) / (tileSize - OVERLAP)));
          const total = B * steps(H) * steps(W);
          let done = 0;
          return tiledScale({ data: planar, dims: [B, 3, H, W] }, (tile, dims) => {
            ctx.checkInterrupt();
            return model.run(tile, dims);
          }, { tile: tileSize, overlap: OVERLAP, scale: s, outChannels: model.config.outChannels, step: () => ctx.progress(++done, total) });
        });
        const [, oc, oh, ow] = out.dims;
        if (oc !== 3) throw nodeError(`this upscale model gives ${oc}-channel images; IMAGE needs 3`);
        const frames: Frame[] = [];
        for (let n = 0; n < B; n++) {
          const bytes = Buffer.alloc(oh * ow * 3);
          for (let i = 0; i < oh * ow; i++)
            for (let c = 0; c < 3; c++) {
              const v = out.data[(n * 3 + c) * oh * ow + i]!;
              // torch.clamp(s, 0, 1), then the bytes SaveImage would write (255·v truncated).
              bytes[i * 3 + c] = Math.fround(255 * (v < 0 ? 0 : v > 1 ? 1 : v));
            }
          frames.push(new Frame(ow, oh, 3, bytes));
        }
        return [new ImageBatch(frames)];
      },
    },
  ];
}
