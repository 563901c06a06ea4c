import { createRequire } from 'node:module';

/**
 * Ogg Opus files (RFC 7845) for SaveAudioOpus: libopus through the
 * `opusscript` package (libopus compiled to WebAssembly) in 20 ms frames at
 * the requested bit rate, muxed here into Ogg pages (RFC 3533): an OpusHead
 * page, OpusTags with the prompt and extra_pnginfo as `key=value` comments
 * (continued over pages when long), then audio pages of up to 50 packets
 * whose granule positions count 48 kHz samples after the pre-skip; the last
 * page's granule trims the padding of the final frame.
 */

interface OpusEncoder {
  encode(pcm: Buffer, frameSize: number): Buffer;
  setBitrate(bitrate: number): void;
  delete(): void;
}
type OpusCtor = (new (rate: number, channels: number, application: number) => OpusEncoder) & { Application: { AUDIO: number } };

let Opus: OpusCtor | undefined;
const opus = (): OpusCtor => (Opus ??= createRequire(import.meta.url)('opusscript') as OpusCtor);

/** The Ogg CRC-32 (polynomial 0x04C11DB7, not reflected, initial 0). */
const OGG_CRC = new Uint32Array(256).map((_, i) => {
  let c = i << 24;
  for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
  return c >>> 0;
});
function oggCrc(b: Buffer): number {
  let c = 0;
  for (const x of b) c = ((c << 8) ^ OGG_CRC[((c >>> 24) ^ x) & 0xff]!) >>> 0;
  return c;
}

/** Lays packets out in Ogg pages (a packet may continue over pages); `granuleOf(i)` is the granule after packet i. */
class OggWriter {
  private readonly pages: Buffer[] = [];
  private seq = 0;
  constructor(private readonly serial: number) {}
  /** Writes packets into pages of at most `perPage` packets; the page granule is that of its last completed packet. */
  write(packets: Buffer[], granuleOf: (i: number) => bigint, opts: { first?: boolean; last?: boolean; perPage?: number }): void {
    let segs: number[] = [];
    let body: Buffer[] = [];
    let count = 0;
    let granule = -1n; // -1: no packet ends on this page
    let startsContinued = false;
    let first = opts.first === true;
    const flush = (final: boolean) => {
      if (segs.length === 0) return;
      const header = Buffer.alloc(27 + segs.length);
      header.write('OggS', 0, 'latin1');
      header[5] = (startsContinued ? 1 : 0) | (first ? 2 : 0) | (final && opts.last ? 4 : 0);
      header.writeBigInt64LE(granule, 6);
      header.writeUInt32LE(this.serial, 14);
      header.writeUInt32LE(this.seq++, 18);
      header[26] = segs.length;
      segs.forEach((v, i) => (header[27 + i] = v));
      const page = Buffer.concat([header, ...body]);
      page.writeUInt32LE(oggCrc(page), 22);
      this.pages.push(page);
      segs = [];
      body = [];
      count = 0;
      granule = -1n;
      first = false;
      startsContinued = false;
    };
    packets.forEach((p, i) => {
      // Lacing: 255-byte segments and a final shorter one (zero-length after an exact multiple of 255).
      let off = 0;
      for (let done = false; !done; ) {
        if (segs.length === 255) {
          flush(false);
          startsContinued = off > 0;
        }
        const take = Math.min(255, p.length - off);
        segs.push(take);
        body.push(p.subarray(off, off + take));
        off += take;
        done = take < 255;
      }
      granule = granuleOf(i);
      count++;
      if (count >= (opts.perPage ?? 1) && i < packets.length - 1) flush(false);
    });
    flush(true);
  }
  bytes(): Buffer {
    return Buffer.concat(this.pages);
  }
}

/** Opus's pre-skip in 48 kHz samples (libopus' encoder look-ahead at its default settings). */
const PRE_SKIP = 312;

export function encodeOggOpus(channels: Float32Array[], rate: number, bitrate: number, comments: Array<[string, string]>, inputRate = rate): Buffer {
  const nc = channels.length;
  if (nc < 1 || nc > 2) throw new RangeError(`Opus files here take 1 or 2 channels, got ${nc}`);
  if (![8000, 12000, 16000, 24000, 48000].includes(rate)) throw new RangeError(`Opus encodes at 8, 12, 16, 24 or 48 kHz, not ${rate} Hz`);
  const Enc = opus();
  const enc = new Enc(rate, nc, Enc.Application.AUDIO);
  const packets: Buffer[] = [];
  const frame = rate / 50;
  const total = channels[0]!.length;
  try {
    enc.setBitrate(bitrate);
    const pcm = Buffer.alloc(frame * nc * 2);
    for (let start = 0; start < total; start += frame) {
      pcm.fill(0);
      for (let i = 0; i < frame && start + i < total; i++) {
        for (let c = 0; c < nc; c++) {
          const v = Math.round(channels[c]![start + i]! * 32768);
          pcm.writeInt16LE(v < -32768 ? -32768 : v > 32767 ? 32767 : v, (i * nc + c) * 2);
        }
      }
      packets.push(Buffer.from(enc.encode(pcm, frame)));
    }
  } finally {
    enc.delete();
  }
  const scale = 48000 / rate;
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head[8] = 1;
  head[9] = nc;
  head.writeUInt16LE(PRE_SKIP, 10);
  head.writeUInt32LE(inputRate, 12);
  head.writeInt16LE(0, 16);
  head[18] = 0;
  const vendor = Buffer.from('libopus (opusscript)', 'utf8');
  const tagParts: Buffer[] = [Buffer.from('OpusTags', 'latin1'), u32(vendor.length), vendor, u32(comments.length)];
  for (const [k, v] of comments) {
    const c = Buffer.from(`${k}=${v}`, 'utf8');
    tagParts.push(u32(c.length), c);
  }
  const serial = (Math.random() * 0x100000000) >>> 0;
  const w = new OggWriter(serial);
  w.write([head], () => 0n, { first: true });
  w.write([Buffer.concat(tagParts)], () => 0n, {});
  const end = BigInt(PRE_SKIP + Math.round(total * scale));
  w.write(packets, (i) => (i === packets.length - 1 ? end : BigInt(PRE_SKIP + (i + 1) * frame * scale)), { last: true, perPage: 50 });
  return w.bytes();
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

/** The reference's rule for Opus sample rates: over 48 kHz → 48 kHz; otherwise the next supported rate up (48 kHz when none). */
export function opusRate(rate: number): number {
  const RATES = [8000, 12000, 16000, 24000, 48000];
  if (rate > 48000) return 48000;
  if (RATES.includes(rate)) return rate;
  return RATES.find((r) => r > rate) ?? 48000;
}

/**
 * The same Ogg Opus stream with its OpusTags packet replaced by an empty one
 * when the tags span several pages (a long prompt in the comments, as this
 * module and ffmpeg write them). The wasm decoder's Ogg parser takes every
 * page after the second for audio, so it would decode the rest of the tags
 * as Opus frames; pages after the tags are kept byte for byte, renumbered.
 */
export function compactOpusTags(buf: Buffer): Buffer {
  const pages: Buffer[] = [];
  for (let off = 0; off + 27 <= buf.length && buf.toString('latin1', off, off + 4) === 'OggS'; ) {
    const nseg = buf[off + 26]!;
    let len = 27 + nseg;
    for (let i = 0; i < nseg; i++) len += buf[off + 27 + i]!;
    if (off + len > buf.length) break;
    pages.push(Buffer.from(buf.subarray(off, off + len)));
    off += len;
  }
  let done = 0;
  let headerPages = 0;
  for (const p of pages) {
    headerPages++;
    for (let i = 0; i < p[26]!; i++) if (p[27 + i]! < 255) done++;
    if (done >= 2) break;
  }
  if (done < 2 || headerPages <= 2) return buf;
  const serial = pages[0]!.readUInt32LE(14);
  const w = new OggWriter(serial);
  const vendor = Buffer.from('compacted', 'latin1');
  w.write([Buffer.concat([Buffer.from('OpusTags', 'latin1'), u32(vendor.length), vendor, u32(0)])], () => 0n, {});
  const tags = w.bytes();
  tags.writeUInt32LE(1, 18);
  tags.writeUInt32LE(0, 22);
  tags.writeUInt32LE(oggCrc(tags), 22);
  const rest = pages.slice(headerPages).map((p, i) => {
    p.writeUInt32LE(2 + i, 18);
    p.writeUInt32LE(0, 22);
    p.writeUInt32LE(oggCrc(p), 22);
    return p;
  });
  return Buffer.concat([pages[0]!, tags, ...rest]);
}
