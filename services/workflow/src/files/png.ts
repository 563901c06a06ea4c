import { crc32 } from 'node:zlib';

/** JSON with every non-ASCII character escaped, as Python's json.dumps writes (tEXt chunks are Latin-1). */
export function asciiJson(v: unknown): string {
  return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/**
 * The PNG with tEXt chunks (keyword → text) right after IHDR, where PIL's
 * PngInfo puts them, as the pieces of the file in order (written with one
 * writev, the encoded image is not copied).
 */
export function textChunkParts(png: Buffer, texts: Array<[string, string]>): Buffer[] {
  if (texts.length === 0) return [png];
  const ihdrEnd = 8 + 12 + png.readUInt32BE(8);
  const chunks = texts.map(([k, v]) => chunk('tEXt', Buffer.concat([Buffer.from(k, 'latin1'), Buffer.from([0]), Buffer.from(v, 'latin1')])));
  return [png.subarray(0, ihdrEnd), ...chunks, png.subarray(ihdrEnd)];
}

/** Inserts tEXt chunks (keyword → text) right after IHDR, where PIL's PngInfo puts them. */
export function addTextChunks(png: Buffer, texts: Array<[string, string]>): Buffer {
  const parts = textChunkParts(png, texts);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** Reads the tEXt chunks of a PNG (keyword → text). */
export function readTextChunks(png: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let off = 8;
  while (off + 12 <= png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString('latin1', off + 4, off + 8);
    if (type === 'tEXt') {
      const data = png.subarray(off + 8, off + 8 + len);
      const z = data.indexOf(0);
      if (z > 0) out[data.toString('latin1', 0, z)] = data.toString('latin1', z + 1);
    }
    if (type === 'IEND') break;
    off += 12 + len;
  }
  return out;
}
