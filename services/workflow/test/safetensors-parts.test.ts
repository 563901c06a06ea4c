import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Tensor } from '../src/nodes/latent.ts';
import { WRITE_CHUNK, writeNewFile } from '../src/nodes/latent-files.ts';
import { encodeSafetensors, safetensorsParts } from '../src/nodes/safetensors.ts';

/** The encoder as it was before safetensorsParts (one file-sized buffer): the bytes the new one must give. */
function formerEncode(tensors: Record<string, Tensor>, metadata?: Record<string, string>): Buffer {
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  for (const n of names) {
    const t = tensors[n]!;
    header[n] = { dtype: 'F32', shape: [...t.shape], data_offsets: [offset, offset + t.data.length * 4] };
    offset += t.data.length * 4;
  }
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  const pad = (8 - (json.length % 8)) % 8;
  if (pad) json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const out = Buffer.allocUnsafe(8 + json.length + offset);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  json.copy(out, 8);
  let at = 8 + json.length;
  for (const n of names) {
    const d = tensors[n]!.data;
    for (let i = 0; i < d.length; i++) out.writeFloatLE(d[i]!, at + i * 4);
    at += d.length * 4;
  }
  return out;
}

let seed = 12345;
function random(): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
}

function randomTensor(shape: number[]): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = (random() - 0.5) * 10 ** Math.floor(random() * 10 - 5);
  if (n > 3) {
    data[0] = NaN;
    data[1] = -0;
    data[2] = Infinity;
  }
  return new Tensor(shape, data);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-st-parts-'));
after(() => fs.rmSync(work, { recursive: true, force: true }));

test('safetensorsParts: the same bytes as the former one-buffer encoder (headers of every padding, metadata, empty and offset tensors)', () => {
  const cases: [Record<string, Tensor>, Record<string, string> | undefined][] = [];
  for (let pad = 0; pad < 8; pad++) {
    cases.push([{ latent_tensor: randomTensor([1, 4, 3, 5]), latent_format_version_0: new Tensor([0], new Float32Array(0)) }, { prompt: 'x'.repeat(pad) }]);
  }
  // Non-ASCII and a lone surrogate in metadata keys and values (extra_pnginfo keys are not escaped).
  cases.push([{ latent_tensor: randomTensor([2, 4, 8, 8]) }, { 'wörk\u{1F600}': 'é\ud800', prompt: '{"a": 1}' }]);
  cases.push([{ b: randomTensor([3]), a: randomTensor([2, 2]), c: new Tensor([0], new Float32Array(0)) }, undefined]);
  // A tensor whose data is a view into a larger buffer at an offset.
  const big = randomTensor([64]).data;
  cases.push([{ latent_tensor: new Tensor([2, 3, 5], big.subarray(7, 37)) }, { prompt: '' }]);
  for (const [tensors, metadata] of cases) {
    const want = formerEncode(tensors, metadata);
    assert.deepEqual(Buffer.concat(safetensorsParts(tensors, metadata)), want);
    assert.deepEqual(encodeSafetensors(tensors, metadata), want);
  }
});

test('writeNewFile: the parts in order, EEXIST on an existing file (as writeFileSync wx)', () => {
  const tensors = { latent_tensor: randomTensor([4, 4, 48, 40]), latent_format_version_0: new Tensor([0], new Float32Array(0)) };
  const metadata = { prompt: '{"1": {"class_type": "SaveLatent"}}' };
  const file = path.join(work, 'a.latent');
  writeNewFile(file, safetensorsParts(tensors, metadata));
  assert.deepEqual(fs.readFileSync(file), formerEncode(tensors, metadata));
  assert.equal((fs.statSync(file).mode & 0o777) === (0o666 & ~process.umask()), true);
  assert.throws(() => writeNewFile(file, [new Uint8Array([1])]), (e: NodeJS.ErrnoException) => e.code === 'EEXIST');
  assert.deepEqual(fs.readFileSync(file), formerEncode(tensors, metadata));
  const empty = path.join(work, 'empty');
  writeNewFile(empty, [new Uint8Array(0), new Uint8Array(0)]);
  assert.equal(fs.statSync(empty).size, 0);
});

test('writeNewFile: writes of at most `chunk` bytes, and short writes go on after the bytes written', (t) => {
  const parts = [Buffer.from('header--'), new Uint8Array(new Float32Array([1, 2, 3, 4, 5]).buffer), Buffer.from('tail')];
  const want = Buffer.concat(parts);
  const real = fs.writeSync;
  const lengths: number[] = [];
  // Each call writes at most 3 of the bytes it is given: short writes inside every part.
  const mocked = t.mock.method(fs, 'writeSync', (fd: number, buf: Uint8Array, offset: number, length: number) => {
    lengths.push(length);
    return real(fd, buf, offset, Math.min(3, length));
  });
  const file = path.join(work, 'short');
  writeNewFile(file, parts, 7);
  t.mock.restoreAll();
  assert.deepEqual(fs.readFileSync(file), want);
  assert.ok(mocked.mock.callCount() >= Math.ceil(want.length / 3));
  assert.ok(lengths.every((n) => n <= 7));
  // A latent larger than the default chunk: several writes, the same bytes.
  const tensors = { latent_tensor: randomTensor([1, 4, 128, 160]), latent_format_version_0: new Tensor([0], new Float32Array(0)) };
  const big = path.join(work, 'big.latent');
  const counted = t.mock.method(fs, 'writeSync');
  writeNewFile(big, safetensorsParts(tensors, { prompt: 'p' }));
  assert.equal(counted.mock.callCount(), 1 + Math.ceil((128 * 160 * 16) / WRITE_CHUNK));
  t.mock.restoreAll();
  assert.deepEqual(fs.readFileSync(big), formerEncode(tensors, { prompt: 'p' }));
});
