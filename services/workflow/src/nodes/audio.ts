import { createHash } from 'node:crypto';
import { numel, Tensor } from './latent.ts';
import { compactOpusTags } from './ogg-opus.ts';

/**
 * AUDIO values and their codecs. The reference's AUDIO is a dict
 * `{waveform: float tensor [B, C, T], sample_rate: int}`; here the same plain
 * object over a `Tensor` (latent.ts), samples nominally in [-1, 1].
 *
 * Codecs: WAV is read here (PCM 8/16/24/32-bit, IEEE float 32/64, plain and
 * WAVE_FORMAT_EXTENSIBLE); FLAC is written here (the reference's SaveAudio
 * goes through ffmpeg's FLAC encoder, which gets 16-bit samples: float →
 * lrint(x · 32768) clipped, as swresample converts); FLAC, MP3, Ogg Opus and
 * Ogg Vorbis are read with the wasm-audio-decoders packages (libFLAC,
 * mpg123, libopus, libvorbis compiled to WebAssembly), loaded on first use.
 * Decoded integer samples become floats as the reference's f32_pcm does
 * (value / 2^(bits − 1)).
 */
export interface Audio {
  waveform: Tensor;
  sample_rate: number;
  [key: string]: unknown;
}

/** Longest audio a node makes: 64 Mi samples over all channels and items (256 MiB of float32). */
export const MAX_AUDIO_SAMPLES = 64 * 1024 * 1024;

export function isAudio(v: unknown): v is Audio {
  return typeof v === 'object' && v !== null && (v as Audio).waveform instanceof Tensor && (v as Audio).waveform.ndim === 3 && Number.isFinite((v as Audio).sample_rate);
}

export function checkAudio(v: unknown): Audio {
  if (!isAudio(v)) throw new TypeError('expected AUDIO ({waveform: [B, C, T], sample_rate})');
  return v;
}

/** A [1, C, T] waveform from per-channel sample arrays. */
export function waveformOf(channels: Float32Array[]): Tensor {
  const t = channels[0]?.length ?? 0;
  if (numel([1, channels.length, t]) > MAX_AUDIO_SAMPLES) throw new RangeError(`audio of ${channels.length}×${t} samples exceeds the limit of ${MAX_AUDIO_SAMPLES}`);
  const data = new Float32Array(channels.length * t);
  channels.forEach((c, i) => data.set(c.subarray(0, t), i * t));
  return new Tensor([1, channels.length, t], data);
}

export class AudioDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ValueError';
  }
}

/** Reads a RIFF/WAVE file. */
export function decodeWav(buf: Buffer): { channels: Float32Array[]; sampleRate: number } {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') throw new AudioDecodeError('not a WAV file');
  let fmt: { format: number; channels: number; rate: number; bits: number } | undefined;
  let data: Buffer | undefined;
  for (let off = 12; off + 8 <= buf.length; ) {
    const id = buf.toString('latin1', off, off + 4);
    const len = buf.readUInt32LE(off + 4);
    const body = buf.subarray(off + 8, Math.min(buf.length, off + 8 + len));
    if (id === 'fmt ' && body.length >= 16) {
      let format = body.readUInt16LE(0);
      if (format === 0xfffe && body.length >= 26) format = body.readUInt16LE(24);
      fmt = { format, channels: body.readUInt16LE(2), rate: body.readUInt32LE(4), bits: body.readUInt16LE(14) };
    } else if (id === 'data') data = body;
    off += 8 + len + (len & 1);
  }
  if (!fmt || !data) throw new AudioDecodeError('No audio stream found in the file.');
  const { format, channels: nc, rate, bits } = fmt;
  const bytes = bits / 8;
  if (nc < 1 || !Number.isInteger(bytes) || ![1, 3].includes(format) || (format === 3 && bits !== 32 && bits !== 64) || (format === 1 && ![8, 16, 24, 32].includes(bits))) {
    throw new AudioDecodeError(`unsupported WAV encoding (format ${format}, ${bits} bits)`);
  }
  const frames = Math.floor(data.length / (bytes * nc));
  if (frames === 0) throw new AudioDecodeError('No audio frames decoded.');
  if (frames * nc > MAX_AUDIO_SAMPLES) throw new RangeError(`audio of ${nc}×${frames} samples exceeds the limit of ${MAX_AUDIO_SAMPLES}`);
  const out = Array.from({ length: nc }, () => new Float32Array(frames));
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < nc; c++) {
      const o = (i * nc + c) * bytes;
      let v: number;
      if (format === 3) v = bits === 32 ? data.readFloatLE(o) : data.readDoubleLE(o);
      else if (bits === 8) v = (data[o]! - 128) / 128;
      else if (bits === 16) v = data.readInt16LE(o) / 32768;
      else if (bits === 24) v = data.readIntLE(o, 3) / 8388608;
      else v = data.readInt32LE(o) / 2147483648;
      out[c]![i] = v;
    }
  }
  return { channels: out, sampleRate: rate };
}

type Decoded = { channelData: Float32Array[]; samplesDecoded: number; sampleRate: number; bitDepth?: number; errors?: Array<{ message: string }> };
interface WasmDecoder {
  ready: Promise<void>;
  decodeFile(data: Uint8Array): Promise<Decoded>;
  free(): void;
}

async function wasmDecode(make: () => Promise<WasmDecoder>, buf: Buffer, integer = false): Promise<{ channels: Float32Array[]; sampleRate: number }> {
  const dec = await make();
  await dec.ready;
  try {
    const r = await dec.decodeFile(new Uint8Array(buf));
    if (!r.samplesDecoded || r.channelData.length === 0) throw new AudioDecodeError(r.errors?.[0]?.message ?? 'No audio frames decoded.');
    if (r.samplesDecoded * r.channelData.length > MAX_AUDIO_SAMPLES) throw new RangeError(`audio of ${r.channelData.length}×${r.samplesDecoded} samples exceeds the limit of ${MAX_AUDIO_SAMPLES}`);
    const channels = r.channelData.map((c) => c.slice(0, r.samplesDecoded));
    // The FLAC decoder scales integers by 1 / (2^(b-1) - 1); the reference (ffmpeg, f32_pcm) by 1 / 2^(b-1).
    if (integer && r.bitDepth && r.bitDepth <= 24) {
      const max = 2 ** (r.bitDepth - 1);
      for (const c of channels) for (let i = 0; i < c.length; i++) c[i] = Math.round(c[i]! * (max - 1)) / max;
    }
    return { channels, sampleRate: r.sampleRate };
  } finally {
    dec.free();
  }
}

/** Decodes an audio file by its content: WAV, FLAC, MP3, Ogg Opus or Ogg Vorbis. */
export async function decodeAudioFile(buf: Buffer): Promise<{ channels: Float32Array[]; sampleRate: number }> {
  const magic = buf.toString('latin1', 0, 4);
  if (magic === 'RIFF') return decodeWav(buf);
  if (magic === 'fLaC') return wasmDecode(async () => new (await import('@wasm-audio-decoders/flac')).FLACDecoder() as WasmDecoder, buf, true);
  if (magic === 'OggS') {
    const head = buf.subarray(0, 512).toString('latin1');
    if (head.includes('OpusHead')) return wasmDecode(async () => new (await import('ogg-opus-decoder')).OggOpusDecoder() as unknown as WasmDecoder, compactOpusTags(buf));
    if (head.includes('\x01vorbis')) return wasmDecode(async () => new (await import('@wasm-audio-decoders/ogg-vorbis')).OggVorbisDecoder() as unknown as WasmDecoder, buf);
    if (head.includes('FLAC')) return wasmDecode(async () => new (await import('@wasm-audio-decoders/flac')).FLACDecoder() as WasmDecoder, buf, true);
    throw new AudioDecodeError('unsupported Ogg stream (Opus, Vorbis and FLAC are read)');
  }
  if (magic.startsWith('ID3') || (buf.length > 1 && buf[0] === 0xff && (buf[1]! & 0xe0) === 0xe0)) {
    return wasmDecode(async () => new (await import('mpg123-decoder')).MPEGDecoder() as unknown as WasmDecoder, buf);
  }
  throw new AudioDecodeError('No audio stream found in the file (WAV, FLAC, MP3, Ogg Opus and Ogg Vorbis are read).');
}

/** MSB-first bit writer for FLAC frames. */
class BitWriter {
  private buf = new Uint8Array(1 << 16);
  private pos = 0; // bits
  private grow(bits: number): void {
    if (this.pos + bits <= this.buf.length * 8) return;
    let n = this.buf.length * 2;
    while (n * 8 < this.pos + bits) n *= 2;
    const b = new Uint8Array(n);
    b.set(this.buf);
    this.buf = b;
  }
  write(value: number, bits: number): void {
    this.grow(bits);
    for (let i = bits - 1; i >= 0; i--) {
      const bit = Math.floor(value / 2 ** i) & 1;
      if (bit) this.buf[this.pos >> 3]! |= 0x80 >> (this.pos & 7);
      this.pos++;
    }
  }
  /** Two's complement of v in `bits` bits. */
  writeSigned(v: number, bits: number): void {
    this.write(v < 0 ? v + 2 ** bits : v, bits);
  }
  /** q zero bits then a one (unary), then the low k bits of r. */
  writeRice(u: number, k: number): void {
    const q = Math.floor(u / 2 ** k);
    this.grow(q + 1 + k);
    this.pos += q;
    this.buf[this.pos >> 3]! |= 0x80 >> (this.pos & 7);
    this.pos++;
    if (k > 0) this.write(u % 2 ** k, k);
  }
  align(): void {
    this.pos = (this.pos + 7) & ~7;
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.pos >> 3);
  }
  get bitLength(): number {
    return this.pos;
  }
}

const CRC8 = new Uint8Array(256).map((_, i) => {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 0x80 ? ((c << 1) ^ 0x07) & 0xff : (c << 1) & 0xff;
  return c;
});
const CRC16 = new Uint16Array(256).map((_, i) => {
  let c = i << 8;
  for (let k = 0; k < 8; k++) c = c & 0x8000 ? ((c << 1) ^ 0x8005) & 0xffff : (c << 1) & 0xffff;
  return c;
});
const crc8 = (b: Uint8Array) => b.reduce((c, x) => CRC8[c ^ x]!, 0);
const crc16 = (b: Uint8Array) => b.reduce((c, x) => ((c << 8) & 0xffff) ^ CRC16[(c >> 8) ^ x]!, 0);

/** float → s16 as swresample converts (lrintf(x · 32768), clipped). */
function toS16(x: number): number {
  const v = x * 32768;
  let r = Math.round(v);
  if (Math.abs(v % 1) === 0.5 && r % 2 !== 0) r -= 1;
  return r < -32768 ? -32768 : r > 32767 ? 32767 : r;
}

/** FLAC's UTF-8-like coding of a frame number. */
function utf8Number(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  let lead = 0xc0;
  let cap = 0x1f;
  while (n > cap) {
    bytes.unshift(0x80 | (n & 0x3f));
    n = Math.floor(n / 64);
    lead = 0x80 | (lead >> 1);
    cap >>= 1;
  }
  bytes.unshift(lead | n);
  return bytes;
}

const BLOCK = 4096;

const RATE_CODES: Record<number, number> = { 88200: 1, 176400: 2, 192000: 3, 8000: 4, 16000: 5, 22050: 6, 24000: 7, 32000: 8, 44100: 9, 48000: 10, 96000: 11 };

/** A frame header's sample-rate code and the value written at the header's end for the codes that need one. */
function rateCode(rate: number): { code: number; value: number; bits: number } {
  if (RATE_CODES[rate]) return { code: RATE_CODES[rate]!, value: 0, bits: 0 };
  if (rate % 1000 === 0 && rate / 1000 < 256) return { code: 12, value: rate / 1000, bits: 8 };
  if (rate < 65536) return { code: 13, value: rate, bits: 16 };
  if (rate % 10 === 0 && rate / 10 < 65536) return { code: 14, value: rate / 10, bits: 16 };
  return { code: 0, value: 0, bits: 0 };
}

/** Residuals of the fixed predictor of `order` (0..4) over one block. */
function fixedResiduals(x: Int32Array, order: number): Int32Array {
  const r = new Int32Array(x.length - order);
  for (let i = order; i < x.length; i++) {
    let p: number;
    if (order === 0) p = 0;
    else if (order === 1) p = x[i - 1]!;
    else if (order === 2) p = 2 * x[i - 1]! - x[i - 2]!;
    else if (order === 3) p = 3 * x[i - 1]! - 3 * x[i - 2]! + x[i - 3]!;
    else p = 4 * x[i - 1]! - 6 * x[i - 2]! + 4 * x[i - 3]! - x[i - 4]!;
    r[i - order] = x[i]! - p;
  }
  return r;
}

function writeSubframe(w: BitWriter, x: Int32Array, bps: number): void {
  if (x.every((v) => v === x[0])) {
    w.write(0, 8); // CONSTANT
    w.writeSigned(x[0]!, bps);
    return;
  }
  let best = { order: 0, res: fixedResiduals(x, 0), cost: Infinity };
  for (let order = 0; order <= Math.min(4, x.length - 1); order++) {
    const res = fixedResiduals(x, order);
    let cost = 0;
    for (const v of res) cost += Math.abs(v);
    if (cost < best.cost) best = { order, res, cost };
  }
  const { order, res } = best;
  // Rice parameter from the mean magnitude (≤ 14: 15 escapes in the 4-bit method), at least 1: with 0,
  // a run of zero residuals is a run of 1 bits, and a stream parser (codec-parser, in front of libFLAC in
  // the wasm decoder) then lost whole frames of very compressible audio.
  const mean = res.length ? best.cost / res.length : 0;
  const k = Math.min(14, Math.max(1, Math.floor(Math.log2(mean + 1))));
  w.write(0, 1);
  w.write(0b001000 | order, 6); // FIXED
  w.write(0, 1); // no wasted bits
  for (let i = 0; i < order; i++) w.writeSigned(x[i]!, bps);
  w.write(0, 2); // Rice, 4-bit parameters
  w.write(0, 4); // partition order 0
  w.write(k, 4);
  for (const v of res) w.writeRice(v >= 0 ? v * 2 : -v * 2 - 1, k);
}

/**
 * A 16-bit FLAC file of the channels (fixed blocks of 4096, fixed
 * predictors of order 0–4 chosen per subframe, Rice-coded residuals), with
 * the given Vorbis comments (`key=value`) as the reference's container
 * metadata, and the MD5 of the samples in STREAMINFO.
 */
export function encodeFlac(channels: Float32Array[], sampleRate: number, comments: Array<[string, string]>): Buffer {
  const nc = channels.length;
  if (nc < 1 || nc > 8) throw new RangeError(`FLAC takes 1 to 8 channels, got ${nc}`);
  if (!Number.isInteger(sampleRate) || sampleRate < 1 || sampleRate > 655350) throw new RangeError(`invalid sample rate ${sampleRate}`);
  const total = channels[0]!.length;
  const pcm = channels.map((c) => Int32Array.from(c, toS16));
  const md5 = createHash('md5');
  const interleaved = Buffer.alloc(total * nc * 2);
  for (let i = 0; i < total; i++) for (let c = 0; c < nc; c++) interleaved.writeInt16LE(pcm[c]![i]!, (i * nc + c) * 2);
  md5.update(interleaved);
  const rate = rateCode(sampleRate);
  const frames: Uint8Array[] = [];
  let minFrame = Infinity;
  let maxFrame = 0;
  for (let start = 0, n = 0; start < total; start += BLOCK, n++) {
    const len = Math.min(BLOCK, total - start);
    const w = new BitWriter();
    w.write(0b11111111111110, 14);
    w.write(0, 1); // reserved
    w.write(0, 1); // fixed block size
    w.write(len === BLOCK ? 12 : 7, 4); // 4096, or 16-bit (size - 1) at the header's end
    w.write(rate.code, 4); // the sample rate in every header: decoders may start at any frame
    w.write(nc - 1, 4); // independent channels
    w.write(0b100, 3); // 16 bits per sample
    w.write(0, 1);
    for (const b of utf8Number(n)) w.write(b, 8);
    if (len !== BLOCK) w.write(len - 1, 16);
    if (rate.bits) w.write(rate.value, rate.bits);
    w.write(crc8(w.bytes()), 8);
    for (let c = 0; c < nc; c++) writeSubframe(w, pcm[c]!.subarray(start, start + len), 16);
    w.align();
    const body = w.bytes();
    const frame = new Uint8Array(body.length + 2);
    frame.set(body);
    const crc = crc16(body);
    frame[body.length] = crc >> 8;
    frame[body.length + 1] = crc & 0xff;
    frames.push(frame);
    minFrame = Math.min(minFrame, frame.length);
    maxFrame = Math.max(maxFrame, frame.length);
  }
  const info = new BitWriter();
  info.write(BLOCK, 16);
  info.write(BLOCK, 16);
  info.write(frames.length ? minFrame : 0, 24);
  info.write(maxFrame, 24);
  info.write(sampleRate, 20);
  info.write(nc - 1, 3);
  info.write(15, 5);
  info.write(total, 36);
  const streaminfo = Buffer.concat([Buffer.from(info.bytes()), md5.digest()]);
  const vendor = Buffer.from('ComfyUI-compatible workflow service', 'utf8');
  const parts: Buffer[] = [u32le(vendor.length), vendor, u32le(comments.length)];
  for (const [k, v] of comments) {
    const c = Buffer.from(`${k}=${v}`, 'utf8');
    parts.push(u32le(c.length), c);
  }
  const vorbis = Buffer.concat(parts);
  const block = (type: number, last: boolean, body: Buffer) => Buffer.concat([Buffer.from([(last ? 0x80 : 0) | type, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff]), body]);
  if (vorbis.length >= 1 << 24) throw new RangeError('metadata too large for a FLAC block');
  return Buffer.concat([Buffer.from('fLaC', 'latin1'), block(0, false, streaminfo), block(4, true, vorbis), ...frames.map((f) => Buffer.from(f.buffer, f.byteOffset, f.length))]);
}

function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

/** Largest resampling filter (phases × taps) built: 4 Mi doubles, 32 MiB. */
const MAX_RESAMPLE_TAPS = 4 * 1024 * 1024;

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/**
 * torchaudio.functional.resample (sinc_interp_hann, lowpass_filter_width 6,
 * rolloff 0.99) over the last dimension of [B, C, T].
 */
export function resample(w: Tensor, orig: number, target: number, checkInterrupt: () => void = () => {}): Tensor {
  if (orig === target) return w;
  if (!Number.isInteger(orig) || !Number.isInteger(target) || orig <= 0 || target <= 0) throw new RangeError(`cannot resample from ${orig} Hz to ${target} Hz`);
  const g = gcd(orig, target);
  const of = orig / g;
  const nf = target / g;
  const base = Math.min(of, nf) * 0.99;
  const width = Math.ceil((6 * of) / base);
  const taps = 2 * width + of;
  // Rates with a small common divisor (44100 → 44099) make torchaudio's polyphase filter huge; refuse
  // instead of allocating gigabytes (the reference would try).
  if (nf * taps > MAX_RESAMPLE_TAPS) throw new RangeError(`resampling from ${orig} Hz to ${target} Hz needs a filter of ${nf * taps} taps, over the limit of ${MAX_RESAMPLE_TAPS}`);
  const kernel = new Float64Array(nf * taps);
  for (let p = 0; p < nf; p++) {
    for (let k = 0; k < taps; k++) {
      let t = (-p / nf + (k - width) / of) * base;
      t = Math.max(-6, Math.min(6, t));
      const win = Math.cos((t * Math.PI) / 6 / 2) ** 2;
      t *= Math.PI;
      kernel[p * taps + k] = (t === 0 ? 1 : Math.sin(t) / t) * win * (base / of);
    }
  }
  const T = w.dim(-1);
  const rows = w.data.length / T;
  const outLen = Math.ceil((nf * T) / of);
  if (rows * outLen > MAX_AUDIO_SAMPLES) throw new RangeError('resampled audio exceeds the limit');
  const out = new Float32Array(rows * outLen);
  for (let r = 0; r < rows; r++) {
    checkInterrupt();
    const src = w.data.subarray(r * T, (r + 1) * T);
    for (let j = 0; j * nf < outLen; j++) {
      const origin = j * of - width; // index into the unpadded signal of tap 0
      for (let p = 0; p < nf && j * nf + p < outLen; p++) {
        let s = 0;
        const kk = p * taps;
        for (let k = 0; k < taps; k++) {
          const i = origin + k;
          if (i >= 0 && i < T) s += src[i]! * kernel[kk + k]!;
        }
        out[r * outLen + j * nf + p] = s;
      }
    }
  }
  return new Tensor([...w.shape.slice(0, -1), outLen], out);
}
