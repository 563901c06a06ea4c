/**
 * Image and mask pipelines side by side with the reference (issue 29).
 *
 * Each row is a prompt queued over HTTP (`POST /prompt`) and awaited on the
 * WebSocket (`execution_success`), or an upload (`POST /upload/image`).
 * Each round starts a fresh process of each server (fresh data dir,
 * `--cache-none` on both so that every node runs each time) and runs every
 * row on one and then on the other, which goes first alternating by row and
 * round, so that load from other processes and the shared host's changes of
 * speed hit both sides of a row alike; the server not being timed sits idle.
 * `--by-round` runs the servers one at a time instead (all rows on one, then
 * all on the other; the method of the earlier rounds' tables). Per round and
 * row: `--warmup` untimed runs (1), then `--repeat` timed runs; the row's
 * figure is the median over all timed runs of all rounds.
 *
 *   npx tsx bench/workflow/image-pipeline.ts [--rounds 3] [--repeat 3] [--warmup 1] [--rows a,b] [--service-only] [--by-round]
 *
 * The reference (ComfyUI a125cd84, torch CPU) runs where REF_PYTHON (default
 * /work/team/refvenv/bin/python) and COMFY_DIR (default /work/team/ComfyUI)
 * exist, as ../shared/reference/models.md §6 describes: `--cpu`,
 * `--front-end-root` an empty folder, OMP_NUM_THREADS=REF_THREADS (default 1,
 * the measured best on a busy machine). Without it (or with --service-only)
 * each row is reported as the service's time alone.
 *
 * Morphology, ImageRGBToYUV / ImageYUVToRGB and Canny import kornia in the
 * reference; KORNIA_DIR (kornia's public source, pure Python over torch) goes
 * on its PYTHONPATH, with a stand-in for kornia_rs (file I/O none of them
 * uses). Where the reference cannot import kornia, those rows are left out.
 *
 * --check runs, instead of timing, each selected kernel row once on each
 * server with its image saved (SaveImage in place of GetImageSize) and
 * compares the PNGs' pixels: identical, or how many bytes differ and by how much.
 *
 * BENCH_NODE_ARGS (space-separated) go to the service's node before its script
 * (V8 flags to try).
 *
 * BENCH_EXEC_NICE=N starts the service with `--execution-nice N` (its default
 * runs prompts 5 nicer than the process, so on a busy machine its kernels get
 * less CPU than the reference's, which computes at its process's priority).
 *
 * Each row also reports the CPU time the server process spent per timed run
 * (its threads' scheduler run time in nanoseconds from /proc, with the
 * ticks of its child processes, reaped or still running: the service's
 * shell and the cwebp and img2webp runs it has reaped),
 * median over rounds: a figure that other processes' load does not move as
 * much as wall time.
 *
 * Inputs: a photo-like 1024² RGB PNG (smooth gradients plus noise, ~1.3 MB)
 * for LoadImage, and a noisier 1024² PNG of about 2.6 MB for the upload row.
 * Kernel rows end in GetImageSize → PreviewAny, so that they time the kernel
 * and not a PNG encoder; the encode rows time SaveImage / SaveAnimatedWEBP.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import WebSocket from 'ws';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    repeat: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    rows: { type: 'string' },
    'service-only': { type: 'boolean', default: false },
    check: { type: 'boolean', default: false },
    'by-round': { type: 'boolean', default: false },
  },
  strict: false,
});
const ROUNDS = Number(args.rounds);
const REPEAT = Number(args.repeat);
/** Untimed runs of each row before its timed ones, each round. */
const WARMUP = Math.max(1, Number(args.warmup));
const root = path.resolve(import.meta.dirname, '../..');
const REF_PYTHON = process.env.REF_PYTHON ?? '/work/team/refvenv/bin/python';
const COMFY_DIR = process.env.COMFY_DIR ?? '/work/team/ComfyUI';
const REF_THREADS = process.env.REF_THREADS ?? '1';
const KORNIA_DIR = process.env.KORNIA_DIR;
const withReference = !args['service-only'] && fs.existsSync(REF_PYTHON) && fs.existsSync(path.join(COMFY_DIR, 'main.py'));

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-imgbench-'));

// ---- inputs ----
function pattern(size: number, noise: number): Buffer {
  const px = Buffer.alloc(size * size * 3);
  let seed = 1;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const n = (seed >> 16) % noise;
      const i = (y * size + x) * 3;
      px[i] = ((x >> 2) + n) & 255;
      px[i + 1] = ((y >> 2) + n) & 255;
      px[i + 2] = (((x + y) >> 3) + n) & 255;
    }
  }
  return px;
}
const photoPng = await sharp(pattern(1024, 9), { raw: { width: 1024, height: 1024, channels: 3 } }).png().toBuffer();
const uploadPng = await sharp(pattern(1024, 48), { raw: { width: 1024, height: 1024, channels: 3 } }).png({ compressionLevel: 6 }).toBuffer();

// ---- rows ----
type Graph = Record<string, { class_type: string; inputs: Record<string, unknown> }>;
interface Row {
  name: string;
  prompt?: ((tag: number) => Graph) & { check?: (tag: number) => Graph };
  upload?: boolean;
  /** Its reference node imports kornia (Morphology, YCbCr, Canny): run only where the reference has it (KORNIA_DIR). */
  kornia?: boolean;
}
const load = { class_type: 'LoadImage', inputs: { image: 'bench.png' } };
const empty = { class_type: 'EmptyImage', inputs: { width: 1024, height: 1024, batch_size: 1, color: 0 } };
/**
 * source → node(s) → GetImageSize → PreviewAny; its `check` graph ends in SaveImage instead, for --check.
 * `last` names the node (output 0) or [node, output] whose image the row times.
 */
function kernel(nodes: Graph, last: string | [string, number], src: Graph[string] = load): (() => Graph) & { check: (tag: number) => Graph } {
  const out: [string, number] = typeof last === 'string' ? [last, 0] : last;
  return Object.assign(() => ({ src, ...nodes, size: { class_type: 'GetImageSize', inputs: { image: out } }, out: { class_type: 'PreviewAny', inputs: { source: ['size', 0] } } }), {
    check: (tag: number) => ({ src, ...nodes, o: save(out, tag) }),
  });
}
const scale = (method: string, w: number, h: number, crop = 'disabled', image: [string, number] = ['src', 0]) => ({ class_type: 'ImageScale', inputs: { image, upscale_method: method, width: w, height: h, crop } });
const blur = (r: number, sigma = 1, image: [string, number] = ['src', 0]) => ({ class_type: 'ImageBlur', inputs: { image, blur_radius: r, sigma } });
const save = (image: [string, number], tag: number) => ({ class_type: 'SaveImage', inputs: { images: image, filename_prefix: `bench_${tag}` } });

const centre512 = { class_type: 'ImageCrop', inputs: { image: ['src', 0], width: 512, height: 512, x: 256, y: 256 } };

/** MaskComposite nodes mc0, mc1, … applying each operation in turn to `first` with `source`. */
function maskChain(ops: string[], first: string, source: string): Graph {
  return Object.fromEntries(ops.map((operation, k) => [`mc${k}`, { class_type: 'MaskComposite', inputs: { destination: [k ? `mc${k - 1}` : first, 0], source: [source, 0], x: 0, y: 0, operation } }]));
}

const METHODS = ['nearest-exact', 'bilinear', 'bicubic', 'area', 'lanczos'];
const allRows: Row[] = [
  { name: 'EmptyImage 1024² → bilinear 1536² → blur r5 σ1 → SaveImage', prompt: (t) => ({ src: empty, s: scale('bilinear', 1536, 1536), b: blur(5, 1, ['s', 0]), o: save(['b', 0], t) }) },
  { name: 'LoadImage 1024² PNG → bilinear 1536² → blur r5 σ1 → SaveImage', prompt: (t) => ({ src: load, s: scale('bilinear', 1536, 1536), b: blur(5, 1, ['s', 0]), o: save(['b', 0], t) }) },
  { name: 'POST /upload/image, 2.6 MB PNG', upload: true },
  ...METHODS.map((m) => ({ name: `ImageScale ${m} 1024² → 1536²`, prompt: kernel({ s: scale(m, 1536, 1536) }, 's') })),
  ...METHODS.map((m) => ({ name: `ImageScale ${m} 1024² → 640×480 crop center`, prompt: kernel({ s: scale(m, 640, 480, 'center') }, 's') })),
  ...[1, 5, 11, 31].map((r) => ({ name: `ImageBlur r${r} σ${r === 31 ? 5 : 1} 1024²`, prompt: kernel({ b: blur(r, r === 31 ? 5 : 1) }, 'b') })),
  ...[1, 5].map((r) => ({ name: `ImageSharpen r${r} α1 1024²`, prompt: kernel({ k: { class_type: 'ImageSharpen', inputs: { image: ['src', 0], sharpen_radius: r, sigma: 1, alpha: 1 } } }, 'k') })),
  ...(
    [
      [256, 'none'],
      [16, 'floyd-steinberg'],
      [16, 'bayer-4'],
    ] as const
  ).map(([c, d]) => ({ name: `ImageQuantize ${c} colours, dither ${d}, 1024²`, prompt: kernel({ q: { class_type: 'ImageQuantize', inputs: { image: ['src', 0], colors: c, dither: d } } }, 'q') })),
  {
    name: 'masks: ImageToMask → GrowMask 8 → FeatherMask 32 → ThresholdMask → MaskToImage, 1024²',
    prompt: kernel(
      {
        m: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'red' } },
        g: { class_type: 'GrowMask', inputs: { mask: ['m', 0], expand: 8, tapered_corners: true } },
        f: { class_type: 'FeatherMask', inputs: { mask: ['g', 0], left: 32, top: 32, right: 32, bottom: 32 } },
        t: { class_type: 'ThresholdMask', inputs: { mask: ['f', 0], value: 0.5 } },
        i: { class_type: 'MaskToImage', inputs: { mask: ['t', 0] } },
      },
      'i',
    ),
  },
  {
    name: 'GrowMask 32, tapered corners, 1024² (ImageToMask → GrowMask → MaskToImage)',
    prompt: kernel(
      {
        m: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'green' } },
        g: { class_type: 'GrowMask', inputs: { mask: ['m', 0], expand: 32, tapered_corners: true } },
        i: { class_type: 'MaskToImage', inputs: { mask: ['g', 0] } },
      },
      'i',
    ),
  },
  {
    name: 'ImageBlur r5 σ1 4096² (EmptyImage, strips)',
    prompt: kernel({ b: blur(5, 1) }, 'b', { class_type: 'EmptyImage', inputs: { width: 4096, height: 4096, batch_size: 1, color: 0x336699 } }),
  },
  {
    name: 'compositing: ImageCompositeMasked 512² onto 1024² with a mask, ImageBlend multiply',
    prompt: kernel(
      {
        small: scale('area', 512, 512),
        m: { class_type: 'SolidMask', inputs: { value: 0.5, width: 512, height: 512 } },
        c: { class_type: 'ImageCompositeMasked', inputs: { destination: ['src', 0], source: ['small', 0], x: 100, y: 200, resize_source: false, mask: ['m', 0] } },
        b: { class_type: 'ImageBlend', inputs: { image1: ['c', 0], image2: ['src', 0], blend_factor: 0.5, blend_mode: 'multiply' } },
      },
      'b',
    ),
  },
  {
    name: 'batch: RepeatImageBatch 4 → ImageBatch with a 768² image (bilinear, centre crop) → ImageFromBatch',
    prompt: kernel(
      {
        r: { class_type: 'RepeatImageBatch', inputs: { image: ['src', 0], amount: 4 } },
        small: scale('nearest-exact', 768, 768),
        j: { class_type: 'ImageBatch', inputs: { image1: ['r', 0], image2: ['small', 0] } },
        f: { class_type: 'ImageFromBatch', inputs: { image: ['j', 0], batch_index: 2, length: 3 } },
      },
      'f',
    ),
  },
  {
    name: 'transforms: ImageInvert → ImageFlip → ImageRotate 90 → ImageCrop 768² → ImagePadForOutpaint 64 (feather 40) → ImageStitch right',
    prompt: kernel(
      {
        inv: { class_type: 'ImageInvert', inputs: { image: ['src', 0] } },
        fl: { class_type: 'ImageFlip', inputs: { image: ['inv', 0], flip_method: 'y-axis: horizontally' } },
        ro: { class_type: 'ImageRotate', inputs: { image: ['fl', 0], rotation: '90 degrees' } },
        cr: { class_type: 'ImageCrop', inputs: { image: ['ro', 0], width: 768, height: 768, x: 64, y: 32 } },
        pad: { class_type: 'ImagePadForOutpaint', inputs: { image: ['cr', 0], left: 64, top: 64, right: 64, bottom: 64, feathering: 40 } },
        st: { class_type: 'ImageStitch', inputs: { image1: ['pad', 0], image2: ['src', 0], direction: 'right', match_image_size: true, spacing_width: 0, spacing_color: 'white' } },
      },
      'st',
    ),
  },
  {
    name: 'mask ops: ImageColorToMask → InvertMask → MaskComposite add (SolidMask) → CropMask 768² → JoinImageWithAlpha → SplitImageWithAlpha',
    prompt: kernel(
      {
        cm: { class_type: 'ImageColorToMask', inputs: { image: ['src', 0], color: 0x808080 } },
        iv: { class_type: 'InvertMask', inputs: { mask: ['cm', 0] } },
        so: { class_type: 'SolidMask', inputs: { value: 0.25, width: 1024, height: 1024 } },
        mc: { class_type: 'MaskComposite', inputs: { destination: ['iv', 0], source: ['so', 0], x: 0, y: 0, operation: 'add' } },
        cp: { class_type: 'CropMask', inputs: { mask: ['mc', 0], x: 128, y: 128, width: 768, height: 768 } },
        small: scale('nearest-exact', 768, 768),
        ja: { class_type: 'JoinImageWithAlpha', inputs: { image: ['small', 0], alpha: ['cp', 0] } },
        sp: { class_type: 'SplitImageWithAlpha', inputs: { image: ['ja', 0] } },
      },
      'sp',
    ),
  },
  // ---- the other image and mask nodes at their defaults and common options (issue 29 survey) ----
  ...['normal', 'screen', 'overlay', 'soft_light', 'difference'].map((mode) => ({
    name: `ImageBlend ${mode} 0.5, 1024² (image2: the image flipped)`,
    prompt: kernel({ fl: { class_type: 'ImageFlip', inputs: { image: ['src', 0], flip_method: 'x-axis: vertically' } }, b: { class_type: 'ImageBlend', inputs: { image1: ['src', 0], image2: ['fl', 0], blend_factor: 0.5, blend_mode: mode } } }, 'b'),
  })),
  { name: 'ImageScaleBy nearest-exact ×1.5, 1024²', prompt: kernel({ s: { class_type: 'ImageScaleBy', inputs: { image: ['src', 0], upscale_method: 'nearest-exact', scale_by: 1.5 } } }, 's') },
  { name: 'ImageScaleToTotalPixels lanczos 0.5 MP, 1024²', prompt: kernel({ s: { class_type: 'ImageScaleToTotalPixels', inputs: { image: ['src', 0], upscale_method: 'lanczos', megapixels: 0.5, resolution_steps: 1 } } }, 's') },
  { name: 'ImageScaleToMaxDimension area 512, 1024²', prompt: kernel({ s: { class_type: 'ImageScaleToMaxDimension', inputs: { image: ['src', 0], upscale_method: 'area', largest_size: 512 } } }, 's') },
  { name: 'ResizeAndPadImage 768×512 white area, 1024²', prompt: kernel({ s: { class_type: 'ResizeAndPadImage', inputs: { image: ['src', 0], target_width: 768, target_height: 512, padding_color: 'white', interpolation: 'area' } } }, 's') },
  {
    name: 'ImageCompositeMasked resize_source: 512² and its mask resized onto 1024²',
    prompt: kernel(
      {
        small: scale('nearest-exact', 512, 512),
        m: { class_type: 'ImageToMask', inputs: { image: ['small', 0], channel: 'blue' } },
        c: { class_type: 'ImageCompositeMasked', inputs: { destination: ['src', 0], source: ['small', 0], x: 0, y: 0, resize_source: true, mask: ['m', 0] } },
      },
      'c',
    ),
  },
  {
    name: 'MaskComposite multiply → subtract → and → or → xor, 1024² (ImageToMask red, green)',
    prompt: kernel(
      {
        r: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'red' } },
        g: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'green' } },
        ...maskChain(['multiply', 'subtract', 'and', 'or', 'xor'], 'r', 'g'),
        i: { class_type: 'MaskToImage', inputs: { mask: ['mc4', 0] } },
      },
      'i',
    ),
  },
  {
    name: 'FeatherMask 64 each side, 1024² (ImageToMask → FeatherMask → MaskToImage)',
    prompt: kernel({ m: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'red' } }, f: { class_type: 'FeatherMask', inputs: { mask: ['m', 0], left: 64, top: 64, right: 64, bottom: 64 } }, i: { class_type: 'MaskToImage', inputs: { mask: ['f', 0] } } }, 'i'),
  },
  {
    name: 'ThresholdMask 0.5, 1024² (ImageToMask → ThresholdMask → MaskToImage)',
    prompt: kernel({ m: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'red' } }, t: { class_type: 'ThresholdMask', inputs: { mask: ['m', 0], value: 0.5 } }, i: { class_type: 'MaskToImage', inputs: { mask: ['t', 0] } } }, 'i'),
  },
  { name: 'ImageAddNoise seed 0 strength 0.5, 1024²', prompt: kernel({ n: { class_type: 'ImageAddNoise', inputs: { image: ['src', 0], seed: 0, strength: 0.5 } } }, 'n') },
  // kornia's morphology and Canny take the reference seconds at 1024², so these run on its centre 512² (ImageCrop: the PNG's own bytes).
  ...(
    [
      ['erode', 3],
      ['close', 5],
      ['gradient', 3],
      ['bottom_hat', 3],
    ] as const
  ).map(([op, k]) => ({ name: `Morphology ${op} k${k}, 512² centre crop`, kornia: true, prompt: kernel({ small: centre512, mo: { class_type: 'Morphology', inputs: { image: ['small', 0], operation: op, kernel_size: k } } }, 'mo') })),
  {
    name: 'ImageRGBToYUV → ImageYUVToRGB, 1024²',
    kornia: true,
    prompt: kernel({ yuv: { class_type: 'ImageRGBToYUV', inputs: { image: ['src', 0] } }, rgb: { class_type: 'ImageYUVToRGB', inputs: { Y: ['yuv', 0], U: ['yuv', 1], V: ['yuv', 2] } } }, 'rgb'),
  },
  { name: 'Canny 0.4 / 0.8, 512² centre crop', kornia: true, prompt: kernel({ small: centre512, c: { class_type: 'Canny', inputs: { image: ['small', 0], low_threshold: 0.4, high_threshold: 0.8 } } }, 'c') },
  ...['DST', 'SRC_OVER'].map((mode) => ({
    name: `PorterDuffImageComposite ${mode}, 1024² (alphas: ImageToMask red, green)`,
    prompt: kernel(
      {
        fl: { class_type: 'ImageFlip', inputs: { image: ['src', 0], flip_method: 'x-axis: vertically' } },
        sa: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'red' } },
        da: { class_type: 'ImageToMask', inputs: { image: ['src', 0], channel: 'green' } },
        pd: { class_type: 'PorterDuffImageComposite', inputs: { source: ['src', 0], source_alpha: ['sa', 0], destination: ['fl', 0], destination_alpha: ['da', 0], mode } },
      },
      'pd',
    ),
  })),
  {
    name: 'LoadImageMask red (→ MaskToImage), 1024² PNG',
    prompt: kernel({ i: { class_type: 'MaskToImage', inputs: { mask: ['src', 0] } } }, 'i', { class_type: 'LoadImageMask', inputs: { image: 'bench.png', channel: 'red' } }),
  },
  { name: 'EmptyImage 1024² colour 0x336699', prompt: kernel({}, 'src', { class_type: 'EmptyImage', inputs: { width: 1024, height: 1024, batch_size: 1, color: 0x336699 } }) },
  { name: 'ImagePadForOutpaint 128 each side, no feather, 1024²', prompt: kernel({ pad: { class_type: 'ImagePadForOutpaint', inputs: { image: ['src', 0], left: 128, top: 128, right: 128, bottom: 128, feathering: 0 } } }, 'pad') },
  {
    name: 'ImageCrop 512² → RepeatImageBatch 4, 1024²',
    prompt: kernel({ cr: { class_type: 'ImageCrop', inputs: { image: ['src', 0], width: 512, height: 512, x: 256, y: 256 } }, rp: { class_type: 'RepeatImageBatch', inputs: { image: ['cr', 0], amount: 4 } } }, 'rp'),
  },
  {
    name: 'SaveAnimatedPNG 4 frames 1024², compress_level 4 (RepeatImageBatch 4)',
    prompt: (t) => ({ src: load, r: { class_type: 'RepeatImageBatch', inputs: { image: ['src', 0], amount: 4 } }, o: { class_type: 'SaveAnimatedPNG', inputs: { images: ['r', 0], filename_prefix: `bench_${t}`, fps: 6, compress_level: 4 } } }),
  },
  ...(
    [
      ['LatentUpscaleBy nearest-exact ×1.5', { class_type: 'LatentUpscaleBy', inputs: { samples: ['src', 0], upscale_method: 'nearest-exact', scale_by: 1.5 } }],
      ['LatentUpscale bilinear 1536²', { class_type: 'LatentUpscale', inputs: { samples: ['src', 0], upscale_method: 'bilinear', width: 1536, height: 1536, crop: 'disabled' } }],
      ['LatentUpscale bislerp 1536²', { class_type: 'LatentUpscale', inputs: { samples: ['src', 0], upscale_method: 'bislerp', width: 1536, height: 1536, crop: 'disabled' } }],
    ] as const
  ).map(([name, node]) => ({
    name: `${name}, 4 latents of 1024² (EmptyLatentImage → SaveLatent)`,
    prompt: (t: number) => ({ src: { class_type: 'EmptyLatentImage', inputs: { width: 1024, height: 1024, batch_size: 4 } }, u: node, o: { class_type: 'SaveLatent', inputs: { samples: ['u', 0], filename_prefix: `latents/bench_${t}` } } }),
  })),
  { name: 'PNG: LoadImage 1024² → SaveImage', prompt: (t) => ({ src: load, o: save(['src', 0], t) }) },
  { name: 'WebP: LoadImage 1024² → SaveAnimatedWEBP (lossy q80)', prompt: (t) => ({ src: load, o: { class_type: 'SaveAnimatedWEBP', inputs: { images: ['src', 0], filename_prefix: `bench_${t}`, fps: 6, lossless: false, quality: 80, method: 'default' } } }) },
  { name: 'WebP lossless (the node’s default): LoadImage 1024² → SaveAnimatedWEBP', prompt: (t) => ({ src: load, o: { class_type: 'SaveAnimatedWEBP', inputs: { images: ['src', 0], filename_prefix: `bench_${t}`, fps: 6, lossless: true, quality: 80, method: 'default' } } }) },
  ...(['fastest', 'slowest'] as const).flatMap((method) =>
    [false, true].map((lossless) => ({
      name: `WebP ${lossless ? 'lossless' : 'lossy q80'} method ${method}: LoadImage 1024² → SaveAnimatedWEBP`,
      prompt: (t: number) => ({ src: load, o: { class_type: 'SaveAnimatedWEBP', inputs: { images: ['src', 0], filename_prefix: `bench_${t}`, fps: 6, lossless, quality: 80, method } } }),
    })),
  ),
];
const wanted = args.rows ? String(args.rows).split(',') : undefined;
const selected = wanted ? allRows.filter((r, i) => wanted.some((w) => (/^\d+$/.test(w) ? String(i) === w : r.name.includes(w)))) : allRows;

// ---- servers ----
async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

interface Running {
  url: string;
  proc: ChildProcess;
  dir: string;
  /** What the server has written to stdout and stderr so far. */
  output(): string;
}

async function waitReady(url: string, proc: ChildProcess, log: () => string): Promise<void> {
  const t0 = Date.now();
  while (Date.now() - t0 < 180_000) {
    if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}): ${log().slice(-2000)}`);
    try {
      const r = await fetch(`${url}/system_stats`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server at ${url} not ready after 180 s: ${log().slice(-2000)}`);
}

/**
 * torchvision and torchsde: the local index has only CUDA builds of the first
 * and not the second, and the reference imports them at start-up for what no
 * image node uses (Stable Cascade, Cosmos and ACE models; SDE samplers). Where
 * REF_PYTHON lacks one, a stand-in package whose every attribute fails when
 * used goes on the reference's PYTHONPATH (none of these rows reaches it).
 */
function pythonStandIns(): string | undefined {
  const dir = path.join(work, 'py-stand-ins');
  let any = false;
  const mods: [string, string[]][] = [
    ['torchvision', ['transforms', 'models']],
    ['torchsde', []],
  ];
  if (KORNIA_DIR) mods.push(['kornia_rs', []]);
  for (const [mod, subs] of mods) {
    if (spawnSync(REF_PYTHON, ['-c', `import ${mod}`], { stdio: 'ignore' }).status === 0) continue;
    any = true;
    const pkg = path.join(dir, mod);
    fs.mkdirSync(pkg, { recursive: true });
    const body = (name: string) =>
      [
        `# Stand-in for ${mod} (not installed): the image rows of the benchmark never use it.`,
        'class _Missing:',
        '    def __init__(self, name): self._name = name',
        '    def __getattr__(self, a): return _Missing(self._name + "." + a)',
        `    def __call__(self, *a, **k): raise ImportError("${mod} is not installed (" + self._name + ")")`,
        `def __getattr__(name): return _Missing("${name}." + name)`,
        '',
      ].join('\n');
    fs.writeFileSync(path.join(pkg, '__init__.py'), body(mod));
    for (const sub of subs) fs.writeFileSync(path.join(pkg, `${sub}.py`), body(`${mod}.${sub}`));
  }
  return any ? dir : undefined;
}
let standIns: string | undefined | null = null;
/** The reference's PYTHONPATH: stand-ins, then KORNIA_DIR. */
function refPythonPath(): string | undefined {
  if (standIns === null) standIns = pythonStandIns();
  const parts = [standIns, KORNIA_DIR].filter((p): p is string => !!p);
  return parts.length ? parts.join(path.delimiter) : undefined;
}

const refHasKornia = withReference && selected.some((r) => r.kornia) && spawnSync(REF_PYTHON, ['-c', 'import kornia.morphology, kornia.filters, kornia.color'], { stdio: 'ignore', env: { ...process.env, PYTHONPATH: refPythonPath() ?? '' } }).status === 0;
if (withReference && !refHasKornia && selected.some((r) => r.kornia)) console.error('the reference cannot import kornia (set KORNIA_DIR to its source): its rows are left out');
const rows = selected.filter((r) => !r.kornia || !withReference || refHasKornia);

async function start(kind: 'service' | 'reference', round: number): Promise<Running> {
  const dir = path.join(work, `${kind}-${round}`);
  fs.mkdirSync(path.join(dir, 'input'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'input', 'bench.png'), photoPng);
  const port = await freePort();
  let out = '';
  let proc: ChildProcess;
  if (kind === 'service') {
    proc = spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), path.join(root, 'scripts/run-service.mjs'), 'workflow', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dir, '--cache-none', '--disable-assets', ...(process.env.BENCH_EXEC_NICE ? ['--execution-nice', process.env.BENCH_EXEC_NICE] : [])], {
      cwd: root,
      env: { ...process.env, LOG_REQUESTS: '0', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } else {
    const pythonPath = refPythonPath();
    const fe = path.join(dir, 'frontend');
    for (const d of [fe, path.join(dir, 'custom_nodes'), path.join(dir, 'models'), path.join(dir, 'output'), path.join(dir, 'temp'), path.join(dir, 'user')]) fs.mkdirSync(d, { recursive: true });
    proc = spawn(
      REF_PYTHON,
      ['main.py', '--cpu', '--listen', '127.0.0.1', '--port', String(port), '--base-directory', dir, '--front-end-root', fe, '--cache-none', '--disable-auto-launch', '--disable-all-custom-nodes', '--database-url', `sqlite:///${path.join(dir, 'comfy.db')}`, '--verbose', 'WARNING'],
      { cwd: COMFY_DIR, env: { ...process.env, OMP_NUM_THREADS: REF_THREADS, ...(pythonPath ? { PYTHONPATH: pythonPath } : {}) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
  }
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  await waitReady(url, proc, () => out);
  console.error(`${kind} ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { url, proc, dir, output: () => out };
}

async function stop(r: Running): Promise<void> {
  // BENCH_SERVER_LOG: each server's output (V8 traces from BENCH_NODE_ARGS, say) appended to that file.
  if (process.env.BENCH_SERVER_LOG) r.proc.once('exit', () => fs.appendFileSync(process.env.BENCH_SERVER_LOG!, r.output()));
  if (r.proc.exitCode !== null) return;
  const exited = new Promise((res) => r.proc.once('exit', res));
  r.proc.kill('SIGTERM');
  const timer = setTimeout(() => r.proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

// ---- measuring ----
let tagSeq = 0;
/** A prompt's end that came over the WebSocket before its POST /prompt answer was read (a fast prompt on a loaded machine). */
const earlyEnds = new Map<string, any>();
async function runPrompt(srv: Running, ws: WebSocket, waiters: Map<string, (m: any) => void>, clientId: string, graph: Graph): Promise<number> {
  const t0 = performance.now();
  await queuePrompt(srv, waiters, clientId, graph);
  return performance.now() - t0;
}

/** Queues a prompt and waits for its end; its id. */
async function queuePrompt(srv: Running, waiters: Map<string, (m: any) => void>, clientId: string, graph: Graph): Promise<string> {
  const res = await fetch(`${srv.url}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: graph, client_id: clientId }) });
  const body = (await res.json()) as { prompt_id?: string };
  if (!res.ok || !body.prompt_id) throw new Error(`queue refused: ${JSON.stringify(body)}`);
  const msg = earlyEnds.get(body.prompt_id) ?? (await new Promise<any>((r) => waiters.set(body.prompt_id!, r)));
  earlyEnds.delete(body.prompt_id);
  waiters.delete(body.prompt_id);
  if (msg.type !== 'execution_success') throw new Error(`prompt failed: ${JSON.stringify(msg.data).slice(0, 1000)}`);
  return body.prompt_id;
}

async function upload(srv: Running): Promise<number> {
  const t0 = performance.now();
  const form = new FormData();
  form.append('image', new Blob([uploadPng], { type: 'image/png' }), 'upload.png');
  form.append('overwrite', 'true');
  const res = await fetch(`${srv.url}/upload/image`, { method: 'POST', body: form });
  if (!res.ok) throw new Error(`upload: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return performance.now() - t0;
}

const times: Record<'service' | 'reference', number[][]> = { service: rows.map(() => []), reference: rows.map(() => []) };
/** CPU time (user + system, all threads, from /proc) the server spent per timed run of each row, one entry per round. */
const cpuTimes: Record<'service' | 'reference', number[][]> = { service: rows.map(() => []), reference: rows.map(() => []) };
const TICK_MS = 1000 / (Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100);

/** The utime, stime, cutime and cstime fields of a /proc stat line, in clock ticks. */
function statTicks(stat: string): [number, number, number, number] {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [Number(f[11]), Number(f[12]), Number(f[13]), Number(f[14])];
}

/**
 * Ticks of the process's live children (the service's long-lived shell that
 * starts cwebp and img2webp, and what that shell has reaped), in ms: their
 * time reaches the process's own counters only when they are reaped.
 */
function liveChildrenTicksMs(pid: number): number {
  let ms = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      let children: string[] = [];
      try {
        children = fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      } catch {
        // no such file (an old kernel) or the thread has exited
      }
      for (const child of children) {
        try {
          const [u, s, cu, cs] = statTicks(fs.readFileSync(`/proc/${child}/stat`, 'utf8'));
          ms += (u + s + cu + cs) * TICK_MS;
        } catch {
          // exited between the listing and the read
        }
      }
    }
  } catch {
    // the process has gone
  }
  return ms;
}

/** CPU milliseconds a process has used so far by its clock-tick counters: all its threads, exited ones included, and its children, reaped or live (10 ms steps). */
function processCpuTicksMs(pid: number): number {
  try {
    const [u, s, cu, cs] = statTicks(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return (u + s + cu + cs) * TICK_MS + liveChildrenTicksMs(pid);
  } catch {
    return NaN;
  }
}

/**
 * CPU milliseconds a process has used so far (Linux; NaN elsewhere): its
 * live threads' scheduler run time in nanoseconds
 * (/proc/<pid>/task/<tid>/schedstat) and its reaped children's ticks. The
 * tick counters move in 10 ms steps, too coarse for rows of a few
 * milliseconds; a thread that exits takes its time with it (BENCH_VERBOSE
 * prints both figures: the servers' threads live as long as they do).
 */
function processCpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // exited between the listing and the read
      }
    }
    const [, , cu, cs] = statTicks(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return ns / 1e6 + (cu + cs) * TICK_MS + liveChildrenTicksMs(pid);
  } catch {
    return NaN;
  }
}

/** Each thread's CPU (ms) by thread id, the main thread as "main" (BENCH_VERBOSE=2 prints where a row's CPU went). */
function threadCpuMs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const comm = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
        const ns = Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
        out.set(tid === String(pid) ? 'main' : `${comm}:${tid}`, ns / 1e6);
      } catch {
        // exited between the listing and the read
      }
    }
  } catch {
    // the process has gone
  }
  return out;
}

async function connect(srv: Running, clientId: string): Promise<{ ws: WebSocket; waiters: Map<string, (m: any) => void> }> {
  const ws = new WebSocket(`${srv.url.replace('http', 'ws')}/ws?clientId=${clientId}`);
  await new Promise((r, j) => {
    ws.once('open', r);
    ws.once('error', j);
  });
  const waiters = new Map<string, (m: any) => void>();
  ws.on('message', (data, binary) => {
    if (binary) return;
    const m = JSON.parse(String(data));
    const id = m.data?.prompt_id;
    if (m.type !== 'execution_success' && m.type !== 'execution_error') return;
    if (waiters.has(id)) waiters.get(id)!(m);
    else if (id) earlyEnds.set(id, m);
  });
  return { ws, waiters };
}

interface Side {
  kind: 'service' | 'reference';
  srv: Running;
  ws: WebSocket;
  waiters: Map<string, (m: any) => void>;
  clientId: string;
  started: number;
}

async function open(kind: 'service' | 'reference', round: number): Promise<Side> {
  const srv = await start(kind, round);
  const clientId = `bench-${kind}-${round}`;
  const { ws, waiters } = await connect(srv, clientId);
  return { kind, srv, ws, waiters, clientId, started: performance.now() };
}

async function close(side: Side): Promise<void> {
  side.ws.close();
  await stop(side.srv);
  fs.rmSync(side.srv.dir, { recursive: true, force: true });
}

/** One row on one server: the warm-up runs, then the timed runs and the server's CPU over them. */
async function measureRow(side: Side, i: number, row: Row): Promise<void> {
  const { kind, srv, ws, waiters, clientId } = side;
  const once = () => (row.upload ? upload(srv) : runPrompt(srv, ws, waiters, clientId, row.prompt!(tagSeq++)));
  const rowAt = performance.now() - side.started;
  let warm = 0;
  for (let k = 0; k < WARMUP; k++) warm = await once();
  const cpu0 = processCpuMs(srv.proc.pid!);
  const ticks0 = processCpuTicksMs(srv.proc.pid!);
  const threads0 = process.env.BENCH_VERBOSE === '2' ? threadCpuMs(srv.proc.pid!) : undefined;
  for (let k = 0; k < REPEAT; k++) times[kind][i]!.push(await once());
  cpuTimes[kind][i]!.push((processCpuMs(srv.proc.pid!) - cpu0) / REPEAT);
  if (process.env.BENCH_VERBOSE) {
    const ticks = (processCpuTicksMs(srv.proc.pid!) - ticks0) / REPEAT;
    console.error(`  ${kind} ${row.name} (from ${(rowAt / 1000).toFixed(2)} s): warm-up ${warm.toFixed(0)} ms, then ${times[kind][i]!.slice(-REPEAT).map((t) => t.toFixed(0)).join(', ')}; CPU ${cpuTimes[kind][i]!.at(-1)!.toFixed(1)} ms a run (by ticks ${ticks.toFixed(1)})`);
    if (threads0) {
      const parts = [...threadCpuMs(srv.proc.pid!)].map(([t, ms]) => [t, (ms - (threads0.get(t) ?? 0)) / REPEAT] as const).filter(([, ms]) => ms >= 0.1);
      console.error(`    per run by thread: ${parts.map(([t, ms]) => `${t} ${ms.toFixed(1)}`).join(', ')}`);
    }
  }
}

/** --by-round: one server at a time, all rows on it, then the other's. */
async function measureRound(kind: 'service' | 'reference', round: number): Promise<void> {
  const side = await open(kind, round);
  try {
    for (const [i, row] of rows.entries()) await measureRow(side, i, row);
  } finally {
    await close(side);
  }
}

/**
 * The default with the reference: both servers started for the round, and
 * each row run on one then the other (which goes first alternating by row and
 * round), so that a change in the machine's speed during the round (the
 * shared host's) hits both sides of a row alike. The server not being timed
 * sits idle.
 */
async function measureRowsInterleaved(round: number): Promise<void> {
  const service = await open('service', round);
  try {
    const reference = await open('reference', round);
    try {
      for (const [i, row] of rows.entries()) {
        const pair = (round + i) % 2 ? [reference, service] : [service, reference];
        for (const side of pair) await measureRow(side, i, row);
      }
    } finally {
      await close(reference);
    }
  } finally {
    await close(service);
  }
}

interface Pixels {
  width: number;
  height: number;
  channels: number;
  data: Buffer;
}

/** --check: each kernel row once, its image saved as PNG and read back through /history and /view. */
async function savedImages(kind: 'service' | 'reference'): Promise<(Pixels | undefined)[]> {
  const srv = await start(kind, 0);
  const { ws, waiters } = await connect(srv, `check-${kind}`);
  try {
    const out: (Pixels | undefined)[] = [];
    for (const row of rows) {
      if (!row.prompt?.check) {
        out.push(undefined);
        continue;
      }
      const id = await queuePrompt(srv, waiters, `check-${kind}`, row.prompt.check(tagSeq++));
      const hist = (await (await fetch(`${srv.url}/history/${id}`)).json()) as Record<string, { outputs: Record<string, { images?: { filename: string; subfolder: string; type: string }[] }> }>;
      const img = hist[id]!.outputs.o!.images![0]!;
      const png = Buffer.from(await (await fetch(`${srv.url}/view?${new URLSearchParams({ filename: img.filename, subfolder: img.subfolder, type: img.type })}`)).arrayBuffer());
      const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
      out.push({ width: info.width, height: info.height, channels: info.channels, data });
    }
    return out;
  } finally {
    ws.close();
    await stop(srv);
    fs.rmSync(srv.dir, { recursive: true, force: true });
  }
}

function compare(a: Pixels, b: Pixels): string {
  if (a.width !== b.width || a.height !== b.height || a.channels !== b.channels) return `sizes differ: ${a.width}×${a.height}×${a.channels} / ${b.width}×${b.height}×${b.channels}`;
  let n = 0;
  let max = 0;
  for (let i = 0; i < a.data.length; i++) {
    const d = Math.abs(a.data[i]! - b.data[i]!);
    if (d) {
      n++;
      if (d > max) max = d;
    }
  }
  return n === 0 ? 'identical' : `${n} of ${a.data.length} bytes differ, by at most ${max}`;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

try {
  if (args.check) {
    if (!withReference) throw new Error('--check needs the reference');
    const mine = await savedImages('service');
    const ref = await savedImages('reference');
    console.log('| row | service vs reference (8-bit PNG pixels) |\n|---|---|');
    for (const [i, row] of rows.entries()) console.log(`| ${row.name} | ${mine[i] && ref[i] ? compare(mine[i], ref[i]) : 'not checked (no kernel image)'} |`);
  } else {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which goes first, so neither always runs on a machine the other just warmed.
      const t0 = performance.now();
      if (withReference && !args['by-round']) {
        await measureRowsInterleaved(round);
        console.error(`round ${round + 1}/${ROUNDS}: both done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
        continue;
      }
      const order: ('service' | 'reference')[] = withReference ? (round % 2 ? ['reference', 'service'] : ['service', 'reference']) : ['service'];
      for (const kind of order) {
        const t1 = performance.now();
        await measureRound(kind, round);
        console.error(`round ${round + 1}/${ROUNDS}: ${kind} done in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
      }
    }
    console.log(`image and mask pipelines, ${ROUNDS} rounds × ${REPEAT} runs, ${withReference && !args['by-round'] ? 'rows interleaved' : 'servers one at a time'} (medians, ms; ratio = reference / service, above 1 = the service is faster)`);
    console.log(withReference ? `reference: ComfyUI (${COMFY_DIR}) on ${REF_PYTHON}, --cpu, OMP_NUM_THREADS=${REF_THREADS}; load average ${os.loadavg()[0]!.toFixed(1)}` : 'reference: not run (service only)');
    console.log('| row | service | reference | ratio | server CPU per run: service / reference | CPU ratio |');
    console.log('|---|---|---|---|---|---|');
    for (const [i, row] of rows.entries()) {
      const s = median(times.service[i]!);
      const r = median(times.reference[i]!);
      const sc = median(cpuTimes.service[i]!);
      const rc = median(cpuTimes.reference[i]!);
      console.log(`| ${row.name} | ${s.toFixed(1)} | ${withReference ? r.toFixed(1) : '–'} | ${withReference ? `${(r / s).toFixed(2)}×` : '–'} | ${sc.toFixed(0)} / ${withReference ? rc.toFixed(0) : '–'} ms | ${withReference ? `${(rc / sc).toFixed(2)}×` : '–'} |`);
    }
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
