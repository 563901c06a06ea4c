/**
 * SaveAnimatedWEBP's files against the reference's (PIL's save, as its
 * SaveAnimatedWEBP calls it): the image chunks byte for byte (one lossy frame
 * at the default method through @napi-rs/image's libwebp, other single
 * frames through the packaged cwebp, animations through the packaged
 * img2webp; libvips where those are not usable), the VP8X/ANIM headers, and
 * the EXIF in PIL's layout. Expected values from bench/workflow/webp-reference.py (reference
 * venv: Pillow 12.3, libwebp 1.6). Storage plays no part: SQLite only.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pilExif, withExifChunk } from '../src/files/webp-exif.ts';
import { startWorkflow } from './helpers.ts';
import { image, loaded, run, type Server } from './nodes-helpers.ts';

const W = 37;
const H = 23;
const frameA = image(W, H, 3, (x, y) => [0, 1, 2].map((c) => (((y * W + x) * 3 + c) * 7) % 251));
const frameB = image(W, H, 3, (x, y) => [0, 1, 2].map((c) => (((y * W + x) * 3 + c) * 13) % 241));

/** Chunk ids and the first 16 hex digits of each chunk's SHA-256, as the reference script prints them. */
const REFERENCE = {
  lossy: [['VP8X', 'e5ba5567c42b0171'], ['VP8 ', '418424620df308ae']],
  lossless: [['VP8X', 'e5ba5567c42b0171'], ['VP8L', '928981a28c5f2ab1']],
  animatedLossless: [['VP8X', 'd59e171d2bc04626'], ['ANIM', 'b0f66adc83641586'], ['ANMF', '4d87cfe7057198d0'], ['ANMF', '93f9d00cc39e0615']],
};
/** Cases that need the packaged cwebp and img2webp (linux-x64): lossy animations and quality 0, which libvips cannot give. */
const REFERENCE_PACKAGED = {
  animatedLossy: [['VP8X', 'd59e171d2bc04626'], ['ANIM', 'b0f66adc83641586'], ['ANMF', '7ebc148dc054b4aa'], ['ANMF', '382ec04ca8b2c1ae']],
  animatedLossyQ0Slowest: [['VP8X', 'd59e171d2bc04626'], ['ANIM', 'b0f66adc83641586'], ['ANMF', '20ae1770c3310e46'], ['ANMF', '213b00b3b7d0733d'], ['ANMF', '87b9a0b809d9f4dd']],
  // The repeated last frame is merged into the one before it (its duration doubled), as libwebp's animation encoder does.
  animatedLosslessQ0Fastest: [['VP8X', 'd59e171d2bc04626'], ['ANIM', 'b0f66adc83641586'], ['ANMF', '6438ef45304a6449'], ['ANMF', 'e39e9b70b4fae501']],
  lossyQ0: [['VP8X', 'e5ba5567c42b0171'], ['VP8 ', '9d59d0e507ecc1f7']],
  lossyQ0Fastest: [['VP8X', 'e5ba5567c42b0171'], ['VP8 ', '495478d20e93a8ba']],
  lossySlowest: [['VP8X', 'e5ba5567c42b0171'], ['VP8 ', '2cf8c9763e37df26']],
};
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';
/** PIL's Exif.tobytes() for a prompt and five extra_pnginfo keys (Make downwards), with its `Exif\0\0` header. */
const REFERENCE_EXIF =
  '4578696600004d4d002a000000080006010b00020000000d00000056010c00020000000d00000064010d00020000000d00000072010e00020000000d00000080010f00020000001b0000008e0110000200000010000000aa00000000773a7b226b223a202277227d00007a3a7b226b223a20227a227d0000793a7b226b223a202279227d0000783a7b226b223a202278227d0000776f726b666c6f773a7b226b223a2022776f726b666c6f77227d000070726f6d70743a7b2261223a20317d00';

interface Chunk {
  id: string;
  data: Buffer;
}
function chunks(webp: Buffer): Chunk[] {
  assert.equal(webp.toString('latin1', 0, 4), 'RIFF');
  assert.equal(webp.readUInt32LE(4), webp.length - 8, 'RIFF size');
  assert.equal(webp.toString('latin1', 8, 12), 'WEBP');
  const out: Chunk[] = [];
  for (let at = 12; at < webp.length; ) {
    const n = webp.readUInt32LE(at + 4);
    out.push({ id: webp.toString('latin1', at, at + 4), data: webp.subarray(at + 8, at + 8 + n) });
    at += 8 + n + (n & 1);
  }
  return out;
}
const digest = (c: Chunk) => [c.id, createHash('sha256').update(c.data).digest('hex').slice(0, 16)];

/** The ASCII entries of a big-endian TIFF's first IFD, as [tag, text]. */
function exifEntries(tiff: Buffer): Array<[number, string]> {
  assert.equal(tiff.toString('latin1', 0, 4), 'MM\0*');
  const ifd = tiff.readUInt32BE(4);
  const n = tiff.readUInt16BE(ifd);
  const out: Array<[number, string]> = [];
  for (let i = 0; i < n; i++) {
    const at = ifd + 2 + 12 * i;
    assert.equal(tiff.readUInt16BE(at + 2), 2, 'ASCII type');
    const count = tiff.readUInt32BE(at + 4);
    const from = count <= 4 ? at + 8 : tiff.readUInt32BE(at + 8);
    out.push([tiff.readUInt16BE(at), tiff.toString('latin1', from, from + count - 1)]);
  }
  return out;
}

describe('SaveAnimatedWEBP writes the reference’s files', () => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow('sqlite');
  });
  after(async () => {
    await srv.close();
  });

  /** Saves frames A then B (two frames) or the frames named (`a`, `b`), batched by a chain of ImageBatch. */
  async function save(frames: number | string[], lossless: boolean, extra?: Record<string, unknown>, quality = 80, method = 'default'): Promise<Buffer> {
    const g: Record<string, unknown> = { ...(await loaded(srv, frameA, 'a')), ...(await loaded(srv, frameB, 'b')) };
    const names = typeof frames === 'number' ? ['a', 'b'].slice(0, frames) : frames;
    let images: unknown[] = [names[0]!, 0];
    names.slice(1).forEach((n, i) => {
      g[`batch${i}`] = { class_type: 'ImageBatch', inputs: { image1: images, image2: [n, 0] } };
      images = [`batch${i}`, 0];
    });
    g.s = { class_type: 'SaveAnimatedWEBP', inputs: { images, filename_prefix: 'webp/t', fps: 6, lossless, quality, method } };
    const r = await run(srv, g, extra ? { extra_pnginfo: extra } : undefined);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    const item = r.outputs.s.images[0];
    return fs.readFileSync(path.join(srv.cfg.dataDir, 'output', item.subfolder, item.filename));
  }

  test('one lossy frame, one lossless frame, a lossless animation: the reference’s image chunks, EXIF last', async () => {
    for (const [name, frames, lossless] of [['lossy', 1, false], ['lossless', 1, true], ['animatedLossless', 2, true]] as const) {
      const cs = chunks(await save(frames, lossless));
      assert.deepEqual(cs.slice(0, -1).map(digest), REFERENCE[name], name);
      assert.equal(cs.at(-1)!.id, 'EXIF', name);
      // VP8X: the EXIF flag (and the animation flag for two frames), canvas 37×23.
      assert.equal(cs[0]!.data[0], frames > 1 ? 0x0a : 0x08, `${name} VP8X flags`);
      assert.deepEqual([cs[0]!.data.readUIntLE(4, 3) + 1, cs[0]!.data.readUIntLE(7, 3) + 1], [W, H]);
      // The prompt in Model (0x0110), as `prompt:<json>`; an animation's EXIF keeps PIL's Exif\0\0 header.
      let exif = cs.at(-1)!.data;
      if (frames > 1) {
        assert.equal(exif.toString('latin1', 0, 6), 'Exif\0\0');
        exif = exif.subarray(6);
      }
      const entries = exifEntries(exif);
      assert.deepEqual(entries.map(([t]) => t), [0x0110]);
      assert.equal(JSON.parse(entries[0]![1].slice('prompt:'.length)).s.class_type, 'SaveAnimatedWEBP');
    }
  });

  test('lossy animations, other methods and quality 0 (through the packaged cwebp and img2webp): the reference’s image chunks', { skip: !linuxX64 && 'the package ships cwebp and img2webp for linux-x64 only here' }, async () => {
    const cases = [
      ['animatedLossy', ['a', 'b'], false, 80, 'default'],
      ['animatedLossyQ0Slowest', ['a', 'b', 'a'], false, 0, 'slowest'],
      ['animatedLosslessQ0Fastest', ['a', 'b', 'b'], true, 0, 'fastest'],
      ['lossyQ0', ['a'], false, 0, 'default'],
      ['lossyQ0Fastest', ['a'], false, 0, 'fastest'],
      ['lossySlowest', ['a'], false, 80, 'slowest'],
    ] as const;
    for (const [name, frames, lossless, quality, method] of cases) {
      const cs = chunks(await save([...frames], lossless, undefined, quality, method));
      assert.deepEqual(cs.slice(0, -1).map(digest), REFERENCE_PACKAGED[name], name);
      assert.equal(cs.at(-1)!.id, 'EXIF', name);
    }
  });

  test('PIL’s EXIF layout: tags sorted, values NUL-terminated and padded to even lengths, short ones inline', () => {
    const entries: Array<[number, string]> = [[0x0110, 'prompt:{"a": 1}']];
    ['workflow', 'x', 'y', 'z', 'w'].forEach((k, i) => entries.push([0x010f - i, `${k}:{"k": "${k}"}`]));
    assert.equal(pilExif(entries).toString('hex'), REFERENCE_EXIF.slice(12));
    // PIL's empty EXIF (no prompt, no extra_pnginfo) is still written, as an IFD of no entries.
    assert.equal(pilExif([]).toString('hex'), '4d4d002a00000008000000000000');
    // A value of up to 3 characters sits in its entry; non-ASCII becomes '?' (PIL encodes with errors="replace").
    assert.deepEqual(exifEntries(pilExif([[0x010f, 'a:1'], [0x010e, 'é:\u{1F600}']])), [[0x010e, '?:?'], [0x010f, 'a:1']]);
    // A file the encoder wrote in the simple format gains VP8X; a VP8X file keeps its chunks, EXIF replaced.
    const vp8l = Buffer.from('2f24800500cd29041000', 'hex');
    const lossless = Buffer.concat([Buffer.from('RIFF\0\0\0\0WEBPVP8L', 'latin1'), Buffer.from([vp8l.length, 0, 0, 0]), vp8l]);
    lossless.writeUInt32LE(lossless.length - 8, 4);
    const once = withExifChunk(lossless, pilExif([]));
    assert.deepEqual(chunks(once).map((c) => c.id), ['VP8X', 'VP8L', 'EXIF']);
    assert.deepEqual(chunks(withExifChunk(once, pilExif([[0x0110, 'prompt:{}']]))).map((c) => c.id), ['VP8X', 'VP8L', 'EXIF']);
    assert.equal(exifEntries(chunks(withExifChunk(once, pilExif([[0x0110, 'prompt:{}']])))[2]!.data)[0]![1], 'prompt:{}');
    assert.throws(() => withExifChunk(Buffer.from('RIFF\0\0\0\0WAVE', 'latin1'), pilExif([])), /no RIFF WEBP file/);
  });

  test('extra_pnginfo keys go from Make (0x010f) downwards, after the prompt in Model', async () => {
    const cs = chunks(await save(1, false, { workflow: { k: 1 }, second: 'v' }));
    const entries = exifEntries(cs.at(-1)!.data);
    assert.deepEqual(entries.map(([t, s]) => [t, s.split(':')[0]]), [[0x010e, 'second'], [0x010f, 'workflow'], [0x0110, 'prompt']]);
    assert.equal(entries[1]![1], 'workflow:{"k":1}');
  });
});
