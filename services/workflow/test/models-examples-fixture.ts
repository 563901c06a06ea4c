/**
 * The models and input images for the reference's example workflows of
 * models-examples-more.test.ts (img2img, inpainting, SDXL base + refiner, an
 * ESRGAN upscale), written under the file names the prompts ask for, and the
 * reduced form of an output image both sides compare. The bench script
 * (bench/workflow/models-reference-examples.ts) writes the same files for the
 * reference's run, so the two sides see the same bytes.
 *
 * The models are tiny and without attention at the latent's full size (as
 * EXAMPLE_TINY): the prompts' own sizes (512² up to 1024², 20–25 steps) then
 * run in seconds. The input images are generated (the reference's example.png
 * and yosemite photo are large files of the reference's repositories); the
 * prompts take any size, so they are small here.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { EXAMPLE_TINY } from './models-control-fixture.ts';
import { writeEsrgan } from './esrgan-fixture.ts';
import { writeFixture } from './models-fixture.ts';
import { writeTensors, writeXLFixture, type XLFixtureConfig } from './models-fixture-xl.ts';
import { safetensorsToTorch, torchFileBytes, type PV } from './torch-zip-writer.ts';
import { SafetensorsFile } from '../src/models/safetensors.ts';

/** SDXL base at tiny widths: three levels, attention (CLIP-L + OpenCLIP-G context) only at the quarter-size level. */
export const EXAMPLE_SDXL: XLFixtureConfig = {
  family: 'sdxl',
  unet: { ch: 32, mult: [1, 1, 2], resBlocks: 1, depth: [0, 0, 1], midDepth: 1 },
  text: { l: { hidden: 64, layers: 3, intermediate: 128 }, open: { hidden: 64, layers: 3, intermediate: 128 } },
  vae: true,
  seed: 21,
};

/** The SDXL refiner (OpenCLIP-G only, adm 2560's layout: pooled + 5×256) at the same widths. */
export const EXAMPLE_REFINER: XLFixtureConfig = {
  family: 'sdxl_refiner',
  unet: { ch: 32, mult: [1, 1, 2], resBlocks: 1, depth: [0, 0, 1], midDepth: 1 },
  text: { open: { hidden: 64, layers: 3, intermediate: 128 } },
  vae: true,
  seed: 22,
};

/** SD2's 512-inpainting-ema: a 9-channel UNet (latent, mask, masked image) with OpenCLIP-H, ε-prediction. */
export const EXAMPLE_INPAINT: XLFixtureConfig = {
  family: 'sd2',
  unet: { ch: 32, mult: [1, 2], resBlocks: 1, depth: [0, 1], midDepth: 1, inChannels: 9 },
  text: { open: { hidden: 64, layers: 3, intermediate: 128 } },
  vae: true,
  seed: 23,
};

/**
 * SD2.1 768 (the hires-fix example's v2-1_768-ema-pruned.ckpt: OpenCLIP-H, linear projections) at tiny widths, with
 * attention only at the quarter-size level, so the prompt's 768² and 1152² latents run in seconds. ε-prediction: the
 * reference tells v from ε by output_blocks.11.1's norm (SD20.model_type), a transformer at the latent's full size
 * (144² there), which would cost more than the rest together; v-prediction is tested on its own (models-xl*.test.ts).
 */
export const EXAMPLE_SD21: XLFixtureConfig = {
  family: 'sd2',
  unet: { ch: 32, mult: [1, 1, 2], resBlocks: 1, depth: [0, 0, 1], midDepth: 1 },
  text: { open: { hidden: 64, layers: 3, intermediate: 128 } },
  vae: true,
  seed: 24,
};

/** Input image sizes (any size runs the prompts unchanged). */
export const IMG2IMG_SIZE = { width: 192, height: 160 };
/** Odd heights, as the yosemite photos' 769: VAEEncodeForInpaint crops to multiples of 8. */
export const INPAINT_SIZE = { width: 224, height: 161 };
/** The outpainting example pads 128 rows above and below: 160 × 321 in all. */
export const OUTPAINT_SIZE = { width: 160, height: 65 };

/** The model files the example prompts name, as `folder/name`. */
export const EXAMPLE_MODELS = {
  sd15: 'checkpoints/v1-5-pruned-emaonly.ckpt',
  anything: 'checkpoints/Anything-V3.0.ckpt',
  vae: 'vae/vae-ft-mse-840000-ema-pruned.safetensors',
  inpaint: 'checkpoints/512-inpainting-ema.safetensors',
  base: 'checkpoints/sd_xl_base_1.0.safetensors',
  refiner: 'checkpoints/sd_xl_refiner_1.0.safetensors',
  esrgan: 'upscale_models/RealESRGAN_x2.pth',
  sd21: 'checkpoints/v2-1_768-ema-pruned.ckpt',
};

/**
 * Writes every model under `modelsDir` (models/<folder>/<name>): the SD1.5 and SD2.1 checkpoints as PyTorch .ckpt files, a
 * VAE of another seed's weights for VAELoader, and the ESRGAN as a .pth saved as Real-ESRGAN's are
 * ({"params_ema": state dict}), a pixel-unshuffled ×2 RRDBNet. Returns the .safetensors twins of the PyTorch files
 * (same tensors) for the reference's loaders.
 */
export async function writeExampleModels(modelsDir: string, scratch: string): Promise<{ sd15: string; anything: string; esrgan: string; sd21: string }> {
  for (const d of ['checkpoints', 'upscale_models', 'vae']) fs.mkdirSync(path.join(modelsDir, d), { recursive: true });
  const sd15 = path.join(scratch, 'v1-5.safetensors');
  writeFixture(sd15, EXAMPLE_TINY, 5);
  await safetensorsToTorch(sd15, path.join(modelsDir, EXAMPLE_MODELS.sd15));
  const anything = path.join(scratch, 'anything.safetensors');
  writeFixture(anything, EXAMPLE_TINY, 6);
  await safetensorsToTorch(anything, path.join(modelsDir, EXAMPLE_MODELS.anything));
  const other = path.join(scratch, 'vae-source.safetensors');
  writeFixture(other, EXAMPLE_TINY, 7);
  const src = await SafetensorsFile.open(other);
  const vae = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [k, info] of src.tensors) if (k.startsWith('first_stage_model.')) vae.set(k.slice('first_stage_model.'.length), { shape: [...info.shape], data: await src.readFloat32(k) });
  writeTensors(path.join(modelsDir, EXAMPLE_MODELS.vae), vae);
  writeXLFixture(path.join(modelsDir, EXAMPLE_MODELS.inpaint), EXAMPLE_INPAINT);
  writeXLFixture(path.join(modelsDir, EXAMPLE_MODELS.base), EXAMPLE_SDXL);
  writeXLFixture(path.join(modelsDir, EXAMPLE_MODELS.refiner), EXAMPLE_REFINER);
  const sd21 = path.join(scratch, 'v2-1-768.safetensors');
  writeXLFixture(sd21, EXAMPLE_SD21);
  await safetensorsToTorch(sd21, path.join(modelsDir, EXAMPLE_MODELS.sd21));
  const esrgan = path.join(scratch, 'esrgan-x2.safetensors');
  // spandrel reads an RRDBNet's growth as 32 whatever the file holds (esrgan-fixture.ts's UPSCALE_CASES).
  writeEsrgan(esrgan, 'new', 12, 32, { features: 8, blocks: 1 });
  const f = await SafetensorsFile.open(esrgan);
  const dict: [string, PV][] = [];
  for (const [name, info] of f.tensors) dict.push([name, { tensor: true, dtype: info.dtype, shape: [...info.shape], bytes: await f.readBytes(info) }]);
  fs.writeFileSync(path.join(modelsDir, EXAMPLE_MODELS.esrgan), torchFileBytes({ dict: [['params_ema', { dict, ordered: true }]] }, { archive: 'RealESRGAN_x2' }));
  return { sd15, anything, esrgan, sd21 };
}

/** A smooth RGB scene (sky gradient, a disc, stripes) for img2img's example.png. */
export function img2imgPixels(): { width: number; height: number; channels: 3; data: Buffer } {
  const { width, height } = IMG2IMG_SIZE;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const disc = (x - 120) ** 2 + (y - 60) ** 2 < 30 ** 2;
      const ground = y > 110 + 10 * Math.sin(x / 23);
      data[i] = disc ? 240 : ground ? 60 + ((x * 3) % 40) : 90 + (y >> 1);
      data[i + 1] = disc ? 200 : ground ? 140 + ((y * 5) % 50) : 140 + (y >> 2);
      data[i + 2] = disc ? 60 : ground ? 50 : 230 - (y >> 2);
    }
  return { width, height, channels: 3, data };
}

/** An RGBA photo stand-in whose transparent blob is the inpainting mask (LoadImage's mask is 1 − alpha), with a soft edge. */
export function inpaintPixels(): { width: number; height: number; channels: 4; data: Buffer } {
  const { width, height } = INPAINT_SIZE;
  const data = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      data[i] = (x * 5 + y) % 256;
      data[i + 1] = 100 + Math.round(80 * Math.sin(y / 11));
      data[i + 2] = (x * y) % 200;
      const r = Math.hypot((x - 130) / 50, (y - 70) / 38);
      data[i + 3] = r < 1 ? 0 : r < 1.15 ? Math.round(((r - 1) / 0.15) * 255) : 255;
    }
  return { width, height, channels: 4, data };
}

/** An RGB landscape stand-in for the outpainting example. */
export function outpaintPixels(): { width: number; height: number; channels: 3; data: Buffer } {
  const { width, height } = OUTPAINT_SIZE;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const ridge = y > 30 + 12 * Math.sin(x / 13);
      data[i] = ridge ? 70 + ((x + y) % 30) : 150 + (x >> 2);
      data[i + 1] = ridge ? 110 + ((x * 7) % 40) : 180;
      data[i + 2] = ridge ? 60 : 220 - y;
    }
  return { width, height, channels: 3, data };
}

/**
 * Writes the prompts' input images under `inputDir`: example.png (img2img), yosemite_inpaint_example.png
 * (inpainting, its mask in the alpha channel), yosemite_outpaint_example.png (outpainting).
 */
export async function writeExampleInputs(inputDir: string): Promise<void> {
  fs.mkdirSync(inputDir, { recursive: true });
  const inputs = [
    ['example.png', img2imgPixels()],
    ['yosemite_inpaint_example.png', inpaintPixels()],
    ['yosemite_outpaint_example.png', outpaintPixels()],
  ] as const;
  for (const [name, px] of inputs)
    fs.writeFileSync(path.join(inputDir, name), await sharp(px.data, { raw: { width: px.width, height: px.height, channels: px.channels } }).png().toBuffer());
}

/** Sampled pixels: the k-th is pixel (k·104729) mod (width·height), k < SAMPLES. */
export const SAMPLES = 2048;
/** Block means on a GRID × GRID grid (blocks of ⌊size / GRID⌋, the remainder left out). */
export const GRID = 32;

/** An output image reduced to commit: its size, sampled pixels' bytes and block means (rounded), as models-reference-examples.py writes them. */
export interface Reduced {
  shape: [height: number, width: number, channels: number];
  samples: string;
  means: string;
  /** The reference's run with every IMAGE that a node computes held as 8-bit, as the service holds it (where it matters). */
  bytes?: Reduced;
}

export function sampleIndex(k: number, n: number): number {
  return Number((BigInt(k) * 104729n) % BigInt(n));
}

/** The sampled bytes and the unrounded block means of interleaved `data` (width × height × channels). */
export function reduceImage(width: number, height: number, channels: number, data: ArrayLike<number>): { samples: number[]; means: number[] } {
  const samples: number[] = [];
  for (let k = 0; k < SAMPLES; k++) {
    const p = sampleIndex(k, width * height);
    for (let c = 0; c < channels; c++) samples.push(data[p * channels + c]!);
  }
  const bw = Math.floor(width / GRID);
  const bh = Math.floor(height / GRID);
  const means: number[] = [];
  for (let gy = 0; gy < GRID; gy++)
    for (let gx = 0; gx < GRID; gx++)
      for (let c = 0; c < channels; c++) {
        let s = 0;
        for (let y = gy * bh; y < (gy + 1) * bh; y++) for (let x = gx * bw; x < (gx + 1) * bw; x++) s += data[(y * width + x) * channels + c]!;
        means.push(s / (bw * bh));
      }
  return { samples, means };
}

/**
 * What the frontend adds when it loads an example whose prompt predates an input: the inpainting examples'
 * VAEEncodeForInpaint has no grow_mask_by (the input came later; their workflows' node has no widget values), so
 * those prompts queued as they are fail validation on the reference and here alike, and the page, loading the
 * workflow, gives the widget its default (6).
 */
export const FRONTEND_DEFAULTS: Record<string, Record<string, Record<string, unknown>>> = {
  inpaint_example: { '26': { grow_mask_by: 6 } },
  inpaint_anythingv3_woman: { '26': { grow_mask_by: 6 } },
};

/** The example's prompt as queued: the fixture's, with FRONTEND_DEFAULTS' inputs where `frontend` asks for them. */
export function examplePrompt(dir: string, name: string, frontend = false): Record<string, { class_type: string; inputs: Record<string, unknown> }> {
  const prompt = JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'));
  if (frontend) for (const [id, inputs] of Object.entries(FRONTEND_DEFAULTS[name] ?? {})) Object.assign(prompt[id].inputs, inputs);
  return prompt;
}
