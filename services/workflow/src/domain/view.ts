import sharp from '../files/sharp.ts';

export class ViewError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const PIXEL_LIMIT = 16384 * 16384;

/**
 * `?preview=fmt;quality` as the reference: webp or jpeg (webp when the format
 * is anything else or the channel names alpha), quality from the last part
 * when it is digits (default 90), RGB for jpeg and `channel=rgb`.
 */
export async function previewImage(file: string | Buffer, preview: string, channel: string): Promise<{ body: Buffer; type: string }> {
  const parts = preview.split(';');
  let format = parts[0]!;
  if ((format !== 'webp' && format !== 'jpeg') || channel.includes('a')) format = 'webp';
  const last = parts[parts.length - 1]!;
  const quality = /^\d+$/.test(last) ? Math.min(100, Math.max(1, Number(last))) : 90;
  try {
    let img = sharp(file, { limitInputPixels: PIXEL_LIMIT });
    if (format === 'jpeg' || channel === 'rgb') img = img.removeAlpha();
    const body = format === 'jpeg' ? await img.jpeg({ quality }).toBuffer() : await img.webp({ quality }).toBuffer();
    return { body, type: `image/${format}` };
  } catch {
    throw new ViewError(400, 'The file is not an image a preview can be made of');
  }
}

/** `?channel=rgb`: the colour channels as PNG; `?channel=a`: the alpha (opaque when there is none) on black, as an RGBA PNG. */
export async function channelImage(file: string | Buffer, channel: 'rgb' | 'a'): Promise<Buffer> {
  try {
    if (channel === 'rgb') return await sharp(file, { limitInputPixels: PIXEL_LIMIT }).removeAlpha().png().toBuffer();
    const { data, info } = await sharp(file, { limitInputPixels: PIXEL_LIMIT }).ensureAlpha().extractChannel(3).raw().toBuffer({ resolveWithObject: true });
    const rgba = Buffer.alloc(info.width * info.height * 4);
    for (let i = 0, j = 3; i < data.length; i++, j += 4) rgba[j] = data[i]!;
    return await sharp(rgba, { raw: { width: info.width, height: info.height, channels: 4 } }).png().toBuffer();
  } catch {
    throw new ViewError(400, 'The file is not an image whose channels can be extracted');
  }
}

/** `Content-Disposition: filename="…"` as the reference writes it, with an RFC 5987 form when the name is not plain ASCII. */
export function contentDisposition(name: string): string {
  if (/^[\x20-\x7e]*$/.test(name) && !/["\\]/.test(name)) return `filename="${name}"`;
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())}`;
}

/** Content types a browser would run or style: served as downloads, never rendered on the service's origin. */
const ACTIVE = new Set(['text/html', 'text/html-sandboxed', 'application/xhtml+xml', 'text/javascript', 'application/javascript', 'text/css', 'image/svg+xml', 'application/xml', 'text/xml']);

export function safeContentType(type: string | undefined): string {
  const base = (type ?? '').split(';')[0]!.trim().toLowerCase();
  if (!base || ACTIVE.has(base)) return 'application/octet-stream';
  return type!;
}
