/**
 * The sampler nodes' previews as the reference's latent_preview.py: with
 * `--preview-method` auto or latent2rgb, each step's denoised latent through
 * the latent format's latent→RGB factors; with taesd, through the TAESD
 * decoder in models/vae_approx (`taesd_decoder.*` for SD1.x, `taesdxl_decoder.*`
 * for SDXL), falling back to latent→RGB when there is none, as the reference.
 * The image becomes a JPEG (quality 95) sized as ImageOps.contain to
 * `--preview-size` (bilinear) and goes out as a binary preview frame.
 */
import { ModelFolders } from '../../domain/models.ts';
import sharp from '../../files/sharp.ts';
import { latentToRgb, previewSettings } from '../../models/preview.ts';
import { loadCheckpoint } from '../../models/sd1.ts';
import { TaesdVae } from '../../models/taesd.ts';
import type { NodeContext } from '../api.ts';

interface Rgb {
  width: number;
  height: number;
  data: Uint8Array;
}

/** The TAESD decoder file for a latent format, if models/vae_approx has one. */
function taesdDecoderPath(models: string, format: string): string | undefined {
  const f = new ModelFolders(models, '');
  const prefix = format === 'sdxl' ? 'taesdxl_decoder' : 'taesd_decoder';
  const name = f.filenames('vae_approx').find((n) => n.startsWith(prefix));
  return name ? f.fullPath('vae_approx', name) : undefined;
}

/** A step callback sending previews (`step`) and `done`, which resolves once every preview is sent; undefined when previews are off. */
export function stepPreviewer(
  ctx: NodeContext,
  factors?: readonly (readonly number[])[],
  bias?: readonly number[],
  format = 'sd15',
): { step: (x0: Float32Array, shape: readonly number[]) => void; done: () => Promise<void> } | undefined {
  const { method, size } = previewSettings();
  if (method === 'none') return undefined;
  const decoderPath = method === 'taesd' ? taesdDecoderPath(ctx.env.dirs.models, format) : undefined;
  // TAESDPreviewerImpl: taesd.decode(x0[:1]) with scale 1 and shift 0, then preview_to_image.
  let taesd: Promise<TaesdVae> | undefined;
  const toRgb = async (x0: Float32Array, shape: readonly number[]): Promise<Rgb> => {
    if (!decoderPath) return latentToRgb(x0, shape, factors, bias);
    taesd ??= loadCheckpoint(decoderPath, 'taesd').then((c) => new TaesdVae(c, null, 1, 0, false));
    const [, c, h, w] = shape as [number, number, number, number];
    const px = await (await taesd).decode({ shape: [1, c, h, w], data: x0.slice(0, c * h * w) });
    const [, H, W] = px.shape as [number, number, number];
    return { width: W, height: H, data: Uint8Array.from(px.data, (v) => Math.trunc(Math.fround(v * 255))) };
  };
  let pending: Promise<void> = Promise.resolve();
  const step = (x0: Float32Array, shape: readonly number[]) => {
    const latent = x0.slice();
    // One preview at a time, in step order; a failed one only loses that preview.
    pending = pending
      .then(() => toRgb(latent, shape))
      .then((img) => {
        // ImageOps.contain: the largest size within size×size that keeps the aspect ratio.
        const ratio = img.width / img.height;
        const [w, h] = ratio >= 1 ? [size, Math.max(1, Math.round(size / ratio))] : [Math.max(1, Math.round(size * ratio)), size];
        return sharp(img.data, { raw: { width: img.width, height: img.height, channels: 3 } }).resize(w, h, { fit: 'fill', kernel: 'linear' }).jpeg({ quality: 95 }).toBuffer();
      })
      .then((jpeg) => ctx.preview(jpeg, 'jpeg'))
      .catch(() => {});
  };
  return { step, done: () => pending };
}
