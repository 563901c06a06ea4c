/**
 * VAEDecodeTiled and VAEEncodeTiled as the reference computes them
 * (comfy.sd.VAE.decode_tiled_ / encode_tiled_): the latent or image goes
 * through comfy.utils.tiled_scale three times, with tiles of t/2 × 2t,
 * 2t × t/2 and t × t, feathered over the overlap; the three results are
 * summed and divided by 3. Decoding then maps the decoder's output to
 * [0, 1] ((v + 1)/2, clamped); encoding first crops the image to multiples of
 * the VAE's cell about its centre and maps it to [−1, 1].
 */
import { tiledScale } from './esrgan.ts';
import { cropToCells, type FloatTensor, type VaeModel } from './sd1.ts';

/** How many tiles tiled_scale runs for one image (get_tiled_scale_steps). */
function steps(w: number, h: number, tx: number, ty: number, overlap: number): number {
  const rows = h <= ty ? 1 : Math.ceil((h - overlap) / (ty - overlap));
  const cols = w <= tx ? 1 : Math.ceil((w - overlap) / (tx - overlap));
  return rows * cols;
}

/** [tile_x, tile_y] of the three passes, in the reference's order of summation. */
const DECODE_PASSES = (t: number): Array<[number, number]> => [
  [Math.floor(t / 2), t * 2],
  [t * 2, Math.floor(t / 2)],
  [t, t],
];
const ENCODE_PASSES = (t: number): Array<[number, number]> => [
  [t, t],
  [t * 2, Math.floor(t / 2)],
  [Math.floor(t / 2), t * 2],
];

export interface TiledProgress {
  step(done: number, total: number): void;
  checkInterrupt(): void;
}

/** latent [B, C, h, w] → pixels [B, H, W, 3] in [0, 1]; `tile` and `overlap` in latent cells. */
export async function decodeTiled(vae: VaeModel, latent: FloatTensor, tile: number, overlap: number, p: TiledProgress): Promise<FloatTensor> {
  const [B, C, h, w] = latent.shape as [number, number, number, number];
  const scale = vae.downscale;
  const passes = DECODE_PASSES(tile);
  const total = B * passes.reduce((n, [tx, ty]) => n + steps(w, h, tx, ty, overlap), 0);
  let done = 0;
  let sum: Float32Array | undefined;
  let dims: number[] = [];
  for (const [tileX, tileY] of passes) {
    const r = await tiledScale({ data: latent.data, dims: [B, C, h, w] }, (t, d) => {
      p.checkInterrupt();
      return vae.decodeRaw({ shape: d, data: t }).then((o) => ({ data: o.data, dims: o.shape as number[] }));
    }, { tile, tileX, tileY, overlap, scale, outChannels: 3, step: () => p.step(++done, total) });
    dims = r.dims;
    if (!sum) sum = r.data;
    else for (let i = 0; i < sum.length; i++) sum[i] = Math.fround(sum[i]! + r.data[i]!);
  }
  const [, , H, W] = dims as [number, number, number, number];
  const px = new Float32Array(B * H * W * 3);
  const f = Math.fround;
  for (let n = 0; n < B; n++)
    for (let ch = 0; ch < 3; ch++)
      for (let i = 0; i < H * W; i++) {
        const v = f(f(f(sum![(n * 3 + ch) * H * W + i]! / 3) + 1) / 2);
        px[(n * H * W + i) * 3 + ch] = v < 0 ? 0 : v > 1 ? 1 : v;
      }
  return { shape: [B, H, W, 3], data: px };
}

/** pixels [B, H, W, ≥3] in [0, 1] → latent [B, C, H/8, W/8]; `tile` and `overlap` in pixels. */
export async function encodeTiled(vae: VaeModel, pixels: FloatTensor, tile: number, overlap: number, p: TiledProgress): Promise<FloatTensor> {
  const r = vae.downscale;
  const img = cropToCells(pixels, r);
  const [B, , h, w] = img.shape as [number, number, number, number];
  const planar = img.data;
  const passes = ENCODE_PASSES(tile);
  const total = B * passes.reduce((n, [tx, ty]) => n + steps(w, h, tx, ty, overlap), 0);
  let done = 0;
  let sum: Float32Array | undefined;
  let dims: number[] = [];
  const f = Math.fround;
  for (const [tileX, tileY] of passes) {
    const out = await tiledScale({ data: planar, dims: [B, 3, h, w] }, async (t, d) => {
      p.checkInterrupt();
      // process_input: [0, 1] → [−1, 1].
      const z = await vae.encodeRaw({ shape: d, data: t.map((v) => f(f(v * 2) - 1)) });
      return { data: z.data, dims: z.shape as number[] };
    }, { tile, tileX, tileY, overlap, scale: 1 / r, outChannels: vae.latentChannelsOut, step: () => p.step(++done, total) });
    dims = out.dims;
    if (!sum) sum = out.data;
    else for (let i = 0; i < sum.length; i++) sum[i] = f(sum[i]! + out.data[i]!);
  }
  for (let i = 0; i < sum!.length; i++) sum![i] = f(sum![i]! / 3);
  return { shape: dims, data: sum! };
}
