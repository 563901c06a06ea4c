/**
 * The EXIF metadata of a saved WebP, as the reference writes it: PIL's
 * `Exif.tobytes()` (a big-endian TIFF with one IFD of ASCII entries, sorted
 * by tag, each value NUL-terminated and padded to an even length, values of
 * four bytes or less held in the entry itself) in an `EXIF` chunk after the
 * image data, announced by the VP8X header's EXIF flag. Written here rather
 * than by libvips, whose EXIF adds resolution, colour space and pixel
 * dimension tags the reference's files do not have, and by one function for
 * every encoder the service uses.
 */

/** Pillow's ASCII type: a str is encoded with errors="replace", one `?` per code point beyond ASCII. */
function asciiBytes(s: string): Buffer {
  let out = '';
  for (const ch of s) out += ch.codePointAt(0)! < 0x80 ? ch : '?';
  return Buffer.from(out, 'latin1');
}

/** A TIFF of one IFD holding `entries` ([tag, text]) as ASCII, laid out byte for byte as PIL writes it. */
export function pilExif(entries: Array<[number, string]>): Buffer {
  const sorted = [...entries].sort((a, b) => a[0] - b[0]);
  const values = sorted.map(([, text]) => Buffer.concat([asciiBytes(text), Buffer.from([0])]));
  const ifdEnd = 8 + 2 + 12 * sorted.length + 4;
  const data: Buffer[] = [];
  let dataLength = 0;
  const ifd = Buffer.alloc(ifdEnd - 8);
  ifd.writeUInt16BE(sorted.length, 0);
  sorted.forEach(([tag], i) => {
    const at = 2 + 12 * i;
    const value = values[i]!;
    ifd.writeUInt16BE(tag, at);
    ifd.writeUInt16BE(2, at + 2);
    ifd.writeUInt32BE(value.length, at + 4);
    if (value.length <= 4) value.copy(ifd, at + 8);
    else {
      ifd.writeUInt32BE(ifdEnd + dataLength, at + 8);
      const padded = value.length % 2 === 1 ? Buffer.concat([value, Buffer.from([0])]) : value;
      data.push(padded);
      dataLength += padded.length;
    }
  });
  return Buffer.concat([Buffer.from([0x4d, 0x4d, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x08]), ifd, ...data]);
}

interface Chunk {
  id: string;
  data: Buffer;
}

function riffChunks(webp: Buffer): Chunk[] {
  if (webp.length < 12 || webp.toString('latin1', 0, 4) !== 'RIFF' || webp.toString('latin1', 8, 12) !== 'WEBP') throw new Error('the WebP encoder returned no RIFF WEBP file');
  const chunks: Chunk[] = [];
  for (let at = 12; at + 8 <= webp.length; ) {
    const size = webp.readUInt32LE(at + 4);
    if (at + 8 + size > webp.length) throw new Error('the WebP encoder returned a truncated chunk');
    chunks.push({ id: webp.toString('latin1', at, at + 4), data: webp.subarray(at + 8, at + 8 + size) });
    at += 8 + size + (size & 1);
  }
  return chunks;
}

/** Canvas size and alpha of a simple-format file's one bitstream (VP8's frame header, VP8L's 32-bit header). */
function bitstreamInfo(chunk: Chunk): { width: number; height: number; alpha: boolean } {
  const d = chunk.data;
  if (chunk.id === 'VP8 ' && d.length >= 10) return { width: d.readUInt16LE(6) & 0x3fff, height: d.readUInt16LE(8) & 0x3fff, alpha: false };
  if (chunk.id === 'VP8L' && d.length >= 5 && d[0] === 0x2f) {
    const bits = d.readUInt32LE(1);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1, alpha: ((bits >>> 28) & 1) === 1 };
  }
  throw new Error(`the WebP encoder returned an unexpected ${JSON.stringify(chunk.id)} chunk`);
}

function riff(chunks: Chunk[]): Buffer {
  const parts: Buffer[] = [];
  let size = 4;
  for (const c of chunks) {
    const head = Buffer.alloc(8);
    head.write(c.id, 0, 'latin1');
    head.writeUInt32LE(c.data.length, 4);
    parts.push(head, c.data);
    size += 8 + c.data.length;
    if (c.data.length & 1) {
      parts.push(Buffer.alloc(1));
      size += 1;
    }
  }
  const header = Buffer.alloc(12);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(size, 4);
  header.write('WEBP', 8, 'latin1');
  return Buffer.concat([header, ...parts], 12 + size - 4);
}

const VP8X_EXIF = 0x08;
const VP8X_ALPHA = 0x10;

const EXIF_HEADER = Buffer.from('Exif\0\0', 'latin1');

/**
 * `webp` (as an encoder wrote it: the simple format, or VP8X with its chunks)
 * with `exif` as its EXIF chunk, replacing one it had: the extended format's
 * canonical order (VP8X, …, image or animation chunks, EXIF, XMP), as
 * libwebpmux assembles the reference's files. An animation's EXIF keeps
 * PIL's `Exif\0\0` header (its animated save passes `tobytes()` on whole; a
 * still image's drops it) and its ANIM background is PIL's default, 0
 * (libvips writes white).
 */
export function withExifChunk(webp: Buffer, exif: Buffer): Buffer {
  const chunks = riffChunks(webp).filter((c) => c.id !== 'EXIF');
  const animated = chunks.some((c) => c.id === 'ANIM');
  const exifChunk: Chunk = { id: 'EXIF', data: animated ? Buffer.concat([EXIF_HEADER, exif]) : exif };
  if (chunks[0]?.id === 'VP8X') {
    const vp8x = Buffer.from(chunks[0].data);
    vp8x[0] = vp8x[0]! | VP8X_EXIF;
    const xmp = chunks.findIndex((c) => c.id === 'XMP ');
    const rest = chunks.slice(1).map((c) => {
      if (c.id !== 'ANIM' || c.data.length < 6) return c;
      const anim = Buffer.from(c.data);
      anim.writeUInt32LE(0, 0);
      return { id: c.id, data: anim };
    });
    if (xmp > 0) rest.splice(xmp - 1, 0, exifChunk);
    else rest.push(exifChunk);
    return riff([{ id: 'VP8X', data: vp8x }, ...rest]);
  }
  if (chunks.length !== 1) throw new Error('the WebP encoder returned a simple-format file of more than one chunk');
  const info = bitstreamInfo(chunks[0]!);
  const vp8x = Buffer.alloc(10);
  vp8x[0] = VP8X_EXIF | (info.alpha ? VP8X_ALPHA : 0);
  vp8x.writeUIntLE(info.width - 1, 4, 3);
  vp8x.writeUIntLE(info.height - 1, 7, 3);
  return riff([{ id: 'VP8X', data: vp8x }, chunks[0]!, exifChunk]);
}
