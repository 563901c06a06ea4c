import sharp from 'sharp';

/** A solid RGBA PNG of w×h (small images keep pixel checks exact). */
export async function png(w: number, h: number, rgba: [number, number, number, number], opts: { text?: Array<[string, string]> } = {}): Promise<Buffer> {
  const raw = Buffer.alloc(w * h * 4);
  for (let i = 0; i < w * h; i++) raw.set(rgba, i * 4);
  const buf = await sharp(raw, { raw: { width: w, height: h, channels: 4 } }).png().toBuffer();
  if (!opts.text) return buf;
  const { addTextChunks } = await import('../src/files/png.ts');
  return addTextChunks(buf, opts.text);
}

/** Pixels of an image as RGBA bytes. */
export async function pixels(img: Buffer): Promise<{ data: Buffer; width: number; height: number; channels: number }> {
  const { data, info } = await sharp(img).raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

export interface Upload {
  status: number;
  body: any;
  text: string;
}

/** POSTs a multipart form the way browsers and SDKs do: the file in `image`, the other fields as text. */
export async function upload(
  url: string,
  route: string,
  file: Buffer | undefined,
  filename: string,
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
  fileField = 'image',
): Promise<Upload> {
  const form = new FormData();
  if (file) form.append(fileField, new Blob([new Uint8Array(file)], { type: 'image/png' }), filename);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const r = await fetch(url + route, { method: 'POST', body: form, headers });
  const text = await r.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, body, text };
}

/** Raw multipart with a file name no FormData would send as is (slashes, backslashes, quotes are kept). */
export async function uploadRawName(url: string, route: string, file: Buffer, filename: string, fields: Record<string, string> = {}): Promise<Upload> {
  const boundary = '----wfboundary' + Math.random().toString(16).slice(2);
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  // A quoted-string: backslash and quote escaped, so the service sees exactly `filename`.
  const quoted = filename.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r|\n/g, '');
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="${quoted}"\r\nContent-Type: image/png\r\n\r\n`, 'utf8'));
  parts.push(file, Buffer.from(`\r\n--${boundary}--\r\n`));
  const r = await fetch(url + route, { method: 'POST', body: new Uint8Array(Buffer.concat(parts)), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
  const text = await r.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, body, text };
}

export async function getBytes(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const r = await fetch(url, { headers });
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()), headers: r.headers };
}
