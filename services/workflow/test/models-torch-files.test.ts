/**
 * PyTorch zip checkpoints read in place (src/models/torch-zip.ts, pickle.ts):
 * files written by the real torch.save (test/fixtures/torch, from
 * bench/workflow/torch-fixtures.py) against their .safetensors twins, files
 * written here with torch's opcodes (test/torch-zip-writer.ts), textual
 * inversion layouts, and hostile files: each a ModelFileError naming the
 * file and the problem, never a crash or a hang.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { loadEmbedding } from '../src/models/embeddings.ts';
import { UpscaleModel } from '../src/models/esrgan.ts';
import { LoadedLora } from '../src/models/lora.ts';
import { ModelFileError, SafetensorsFile } from '../src/models/safetensors.ts';
import { writeEsrgan } from './esrgan-fixture.ts';
import { f32, Pickler, safetensorsToTorch, tensor, torchFileBytes, writeTorchFile, zipBytes, type PV } from './torch-zip-writer.ts';

const FIX = path.join(import.meta.dirname, 'fixtures', 'torch');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'torch-files-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function sameTensors(a: SafetensorsFile, b: SafetensorsFile): Promise<void> {
  assert.deepEqual([...a.tensors.keys()].sort(), [...b.tensors.keys()].sort());
  for (const [name, t] of a.tensors) {
    const u = b.info(name);
    assert.equal(t.dtype, u.dtype, name);
    assert.deepEqual(t.shape, u.shape, name);
    assert.deepEqual(await a.readBytes(t), await b.readBytes(u), `${name}: bytes`);
  }
}

async function refused(file: string, re: RegExp): Promise<void> {
  const started = Date.now();
  await assert.rejects(SafetensorsFile.open(file), (err: Error) => {
    assert.ok(err instanceof ModelFileError, `${err.name}: ${err.message}`);
    assert.ok(err.message.startsWith(`${path.basename(file)}: `), err.message);
    assert.match(err.message, re);
    return true;
  });
  assert.ok(Date.now() - started < 5000, 'refused quickly');
}

function put(name: string, bytes: Uint8Array): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, bytes);
  return f;
}

/** A torch file whose data.pkl is `body` between PROTO 2 and STOP. */
function withPickle(name: string, body: number[] | Buffer, stop = true): string {
  const pickle = Buffer.concat([Buffer.from([0x80, 2]), Buffer.from(body), Buffer.from(stop ? [0x2e] : [])]);
  return put(name, torchFileBytes({ dict: [] }, { pickle }));
}
const g = (module: string, name: string) => [0x63, ...Buffer.from(`${module}\n${name}\n`)];
const str = (s: string) => {
  const b = Buffer.from(s);
  return [0x58, b.length & 0xff, (b.length >> 8) & 0xff, 0, 0, ...b];
};

describe('PyTorch files written by torch.save', () => {
  test('a module state dict (OrderedDict with _metadata, fp32/fp16/bf16/int64, a 0-d tensor) equals its safetensors twin', async () => {
    const pt = await SafetensorsFile.open(path.join(FIX, 'state.pt'));
    assert.equal(pt.format, 'torch');
    await sameTensors(pt, await SafetensorsFile.open(path.join(FIX, 'state.safetensors')));
    assert.equal(pt.info('half.weight').dtype, 'F16');
    assert.equal(pt.info('bf16.weight').dtype, 'BF16');
    assert.equal(pt.info('1.num_batches_tracked').dtype, 'I64');
    assert.deepEqual(pt.info('scalar').shape, []);
    // The byte ranges are the file's own: graphs point external data at them.
    const raw = fs.readFileSync(path.join(FIX, 'state.pt'));
    const t = pt.info('3.weight');
    assert.deepEqual(raw.subarray(pt.fileOffset('3.weight'), pt.fileOffset('3.weight') + t.end - t.begin), await pt.readBytes(t));
    assert.deepEqual([...(await pt.readFloat32('half.weight'))], [...(await (await SafetensorsFile.open(path.join(FIX, 'state.safetensors'))).readFloat32('half.weight'))]);
  });

  test('a Lightning .ckpt: the state dict under "state_dict" (shared storages, views at an offset, a Parameter), the callback object and numpy scalars beside it read as data', async () => {
    const ck = await SafetensorsFile.open(path.join(FIX, 'lightning.ckpt'));
    await sameTensors(ck, await SafetensorsFile.open(path.join(FIX, 'lightning.safetensors')));
    assert.equal(ck.fileOffset('model.a'), ck.fileOffset('model.tied'));
    assert.deepEqual([...(await ck.readFloat32('model.rows'))], [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
  });

  test('a textual inversion (string_to_param) gives the twin\'s vectors', async () => {
    const a = await loadEmbedding(path.join(FIX, 'ti.pt'));
    const b = await loadEmbedding(path.join(FIX, 'ti.safetensors'));
    assert.equal(a.length, 2);
    assert.deepEqual(a, b);
  });

  test('refused: a transposed tensor, the legacy format, os.system and builtins.eval (nothing runs)', async () => {
    await refused(path.join(FIX, 'transposed.pt'), /tensor "t": not contiguous \(size \[3, 2\], stride \[1, 3\]\)/);
    await refused(path.join(FIX, 'legacy.pt'), /legacy PyTorch pickle/);
    await refused(path.join(FIX, 'evil-os.pt'), /posix\.system: module posix is blocked/);
    await refused(path.join(FIX, 'evil-eval.pt'), /builtins\.eval, which is not an allowed global/);
    await assert.rejects(loadEmbedding(path.join(FIX, 'evil-os.pt')), /blocked/);
  });
});

describe('PyTorch files written here with torch\'s opcodes', () => {
  const values = new Float32Array([1, -2.5, 3.25, 1e-3, 7, 8]);
  const sd: PV = {
    ordered: true,
    metadata: true,
    dict: [
      ['w', tensor('F32', [2, 3], f32(values))],
      ['h', tensor('F16', [2], new Uint8Array([0x00, 0x3c, 0x00, 0xc0]))], // 1, -2
      ['b', tensor('BF16', [1, 2], new Uint8Array([0x80, 0x3f, 0x40, 0x40]))], // 1, 3
      ['n', tensor('I64', [1], new Uint8Array([5, 0, 0, 0, 0, 0, 0, 0]))],
      ['p', tensor('F32', [2], f32([4, 5]), { parameter: true })],
      ['w.row1', tensor('F32', [3], new Uint8Array(), { storageKey: '0', storageOffset: 3 })],
      ['empty', tensor('F32', [0, 4], new Uint8Array())],
      ['step', 12],
      ['nested', [[[['deep']]]]],
    ],
  };
  const check = async (file: string) => {
    const f = await SafetensorsFile.open(file);
    assert.deepEqual([...f.tensors.keys()], ['w', 'h', 'b', 'n', 'p', 'w.row1', 'empty']);
    assert.deepEqual([...(await f.readFloat32('w'))], [...values]);
    assert.deepEqual([...(await f.readFloat32('h'))], [1, -2]);
    assert.deepEqual([...(await f.readFloat32('b'))], [1, 3]);
    assert.deepEqual([...(await f.readFloat32('p'))], [4, 5]);
    assert.deepEqual([...(await f.readFloat32('w.row1'))], [1e-3, 7, 8].map(Math.fround));
    assert.deepEqual(f.info('empty').shape, [0, 4]);
    assert.equal(f.info('n').dtype, 'I64');
  };

  test('a state dict: every dtype, a Parameter, a view at a storage offset, an empty tensor; non-tensor values skipped', async () => {
    const file = path.join(dir, 'sd.pt');
    writeTorchFile(file, sd);
    await check(file);
  });

  test('the reference\'s unwrapping: "state_dict", a lone dict value, else the whole dict', async () => {
    for (const [name, v] of [
      ['wrapped.ckpt', { dict: [['state_dict', sd], ['epoch', 3]] }],
      ['lone.pth', { dict: [['model', sd]] }],
    ] as [string, PV][]) {
      writeTorchFile(path.join(dir, name), v);
      await check(path.join(dir, name));
    }
    writeTorchFile(path.join(dir, 'lone-tensor.pt'), { dict: [['only', tensor('F32', [1], f32([2]))]] });
    assert.deepEqual([...(await SafetensorsFile.open(path.join(dir, 'lone-tensor.pt'))).tensors.keys()], ['only']);
    writeTorchFile(path.join(dir, 'bad-sd.pt'), { dict: [['state_dict', 3]] });
    await refused(path.join(dir, 'bad-sd.pt'), /"state_dict" is a int, not a dict/);
    writeTorchFile(path.join(dir, 'list.pt'), [1, 2]);
    await refused(path.join(dir, 'list.pt'), /holds a list, not a state dict/);
  });

  test('zip64 records and a deflated data.pkl are read; the name does not matter, the content does', async () => {
    await check(put('z64.pt', torchFileBytes(sd, { zip64: true })));
    await check(put('deflated-pkl.pt', torchFileBytes(sd, { deflate: ['data.pkl'] })));
    await check(put('named.safetensors', torchFileBytes(sd)));
  });

  test('an upscale model .pth and a LoRA .pt load as their safetensors twins', async () => {
    const st = path.join(dir, 'x4.safetensors');
    writeEsrgan(st, 'old');
    await safetensorsToTorch(st, path.join(dir, 'x4.pth'), 'none');
    const [a, b] = [await UpscaleModel.open(path.join(dir, 'x4.pth')), await UpscaleModel.open(st)];
    assert.equal(JSON.stringify(a.config), JSON.stringify(b.config));
    assert.equal(a.file.format, 'torch');
    await sameTensors(a.file, b.file);
    const lora: PV = {
      dict: [
        ['lora_unet_a.lora_up.weight', tensor('F16', [4, 2], new Uint8Array(16).fill(0x3c))],
        ['lora_unet_a.lora_down.weight', tensor('F32', [2, 4], f32([1, 2, 3, 4, 5, 6, 7, 8]))],
        ['lora_unet_a.alpha', tensor('F32', [], f32([1]))],
      ],
    };
    writeTorchFile(path.join(dir, 'lora.pt'), lora);
    const l = await LoadedLora.load(path.join(dir, 'lora.pt'), new Map([['lora_unet_a', 'model.a.weight']]));
    assert.deepEqual([...l.patches.keys()], ['model.a.weight']);
    assert.equal(l.patches.get('model.a.weight')!.alpha, 1);
  });

  test('textual inversion layouts: string_to_param, a list of dicts, the encoder key, bundle_emb, the first value', async () => {
    const rows = (n: number, w: number, base = 0) => tensor('F32', [n, w], f32(Array.from({ length: n * w }, (_, i) => base + i)));
    const cases: [PV, number[][]][] = [
      [{ dict: [['string_to_token', { dict: [['*', 265]] }], ['string_to_param', { dict: [['*', rows(2, 3)]] }], ['name', 'x']] }, [[0, 1, 2], [3, 4, 5]]],
      [[{ dict: [['a', rows(1, 3, 10)], ['skip', rows(1, 2)]] }, { dict: [['b', rows(2, 3, 20)]] }], [[10, 11, 12], [20, 21, 22], [23, 24, 25]]],
      [{ dict: [['clip_g', rows(1, 3, 5)], ['clip_l', rows(1, 3, 50)]] }, [[50, 51, 52]]],
      [{ dict: [['bundle_emb.a.string_to_param.*', rows(1, 3, 1)], ['lora.x', rows(1, 3)], ['bundle_emb.b.string_to_param.*', rows(1, 3, 2)]] }, [[1, 2, 3], [2, 3, 4]]],
      [{ dict: [['first', tensor('F32', [3], f32([9, 8, 7]))], ['second', rows(1, 3)]] }, [[9, 8, 7]]],
    ];
    for (const [i, [v, want]] of cases.entries()) {
      const f = path.join(dir, `emb${i}.pt`);
      writeTorchFile(f, v);
      assert.deepEqual((await loadEmbedding(f, 'clip_l', 3)).map((r) => [...r]), want, `case ${i}`);
    }
    // A pickle torch.load refuses: the reference's safe_load_embed_zip reads the raw storages instead (the last of ≥ 768 floats).
    const vec = Array.from({ length: 2 * 768 }, (_, i) => i / 7);
    const refusedPickle = Buffer.from([0x80, 2, ...g('argparse', 'Namespace'), 0x29, 0x52, 0x2e]);
    fs.writeFileSync(path.join(dir, 'emb-raw.pt'), torchFileBytes({ dict: [['small', tensor('F32', [4], f32([1, 2, 3, 4]))], ['e', tensor('F32', [2, 768], f32(vec))], ['tail', tensor('F32', [2], f32([0, 0]))]] }, { pickle: refusedPickle }));
    const raw = await loadEmbedding(path.join(dir, 'emb-raw.pt'));
    assert.deepEqual(raw.map((r) => r.length), [768, 768]);
    assert.deepEqual([...raw[1]!], vec.slice(768).map(Math.fround));
    fs.writeFileSync(path.join(dir, 'emb-none.pt'), torchFileBytes({ dict: [['small', tensor('F32', [4], f32([1, 2, 3, 4]))]] }, { pickle: refusedPickle }));
    await assert.rejects(loadEmbedding(path.join(dir, 'emb-none.pt')), /emb-none\.pt: archive\/data\.pkl: the pickle asks for argparse\.Namespace.*no raw storage holds an embedding/);
    writeTorchFile(path.join(dir, 'emb-bad.pt'), { dict: [['string_to_param', { dict: [['*', 'no']] }]] });
    await assert.rejects(loadEmbedding(path.join(dir, 'emb-bad.pt')), /emb-bad\.pt: string_to_param\["\*"\] is not a tensor/);
  });
});

describe('hostile PyTorch files: a clear ModelFileError, never a crash or a hang', () => {
  test('globals outside the allowlist are refused by name and never run', async () => {
    await refused(withPickle('os.pt', [...g('os', 'system'), ...str('echo x'), 0x85, 0x52]), /os\.system: module os is blocked/);
    await refused(withPickle('sub.pt', [...g('subprocess', 'Popen')]), /subprocess\.Popen, which is not an allowed global/);
    await refused(withPickle('getattr.pt', [...g('__builtin__', 'getattr')]), /builtins\.getattr, which is not an allowed global/);
    await refused(withPickle('storage-call.pt', [...g('torch', 'FloatStorage'), 0x29, 0x52]), /torch\.FloatStorage cannot be called/);
    await refused(withPickle('sparse.pt', [...g('torch._utils', '_rebuild_sparse_tensor'), 0x29, 0x52]), /this kind of tensor .* is not supported/);
    await refused(withPickle('newobj.pt', [...g('torch._utils', '_rebuild_tensor_v2'), 0x29, 0x81]), /NEWOBJ of torch\._utils\._rebuild_tensor_v2/);
    await refused(withPickle('persid.pt', [...str('module'), 0x85, 0x51]), /only storages can be loaded/);
    await refused(withPickle('stack-global.pt', [...str('os'), ...str('system'), 0x93]), /unsupported pickle opcode STACK_GLOBAL/);
    await refused(withPickle('build-dict.pt', [0x7d, 0x7d, 0x62]), /BUILD on a dict/);
    await refused(withPickle('append-tuple.pt', [0x29, 0x4e, 0x61]), /APPEND to a tuple/);
  });

  test('bounds: nesting, memo indices, string lengths, truncated pickles, copy amplification', async () => {
    await refused(withPickle('marks.pt', Array(5000).fill(0x28)), /more than 4096 nested MARKs/);
    await refused(withPickle('memo.pt', [0x6a, 0xff, 0xff, 0xff, 0xff]), /memo entry 4294967295 is read before it is written/);
    await refused(withPickle('string.pt', [0x58, 0xff, 0xff, 0xff, 0xff]), /BINUNICODE of 4294967295 bytes exceeds the limit/);
    await refused(withPickle('short.pt', [0x58, 0x10, 0, 0, 0, 0x41]), /truncated pickle: BINUNICODE/);
    await refused(withPickle('nostop.pt', [0x7d], false), /truncated pickle: an opcode/);
    await refused(withPickle('empty-stop.pt', []), /STOP on an empty stack/);
    await refused(withPickle('utf8.pt', [0x58, 2, 0, 0, 0, 0xc3, 0x28]), /not valid UTF-8/);
    // A deep list (100 000 levels) is only data: loading it neither recurses nor fails.
    const deep = [0x7d, ...str('deep'), ...Array(100_000).fill(0x5d), ...Array(99_999).fill(0x61), 0x73];
    assert.equal((await SafetensorsFile.open(withPickle('deep.pt', deep))).tensors.size, 0);
    // One dict of 20 000 items copied by Counter(d) 20 000 times would be quadratic: the budget stops it.
    const big: number[] = [0x7d, 0x71, 0, 0x28];
    for (let i = 0; i < 20_000; i++) big.push(0x4a, i & 0xff, (i >> 8) & 0xff, i >> 16, 0, 0x4e);
    big.push(0x75, ...g('collections', 'Counter'), 0x71, 1);
    for (let i = 0; i < 20_000; i++) big.push(0x68, 1, 0x68, 0, 0x85, 0x52);
    await refused(withPickle('amplify.pt', big), /builds or copies far more values than its size accounts for/);
  });

  test('zip structure: truncated, not a PyTorch zip, overlapping and out-of-range entries, big-endian, compressed storages', async () => {
    const good = torchFileBytes({ dict: [['w', tensor('F32', [2], f32([1, 2]))]] });
    await refused(put('truncated.pt', good.subarray(0, good.length >> 1)), /no zip end record/);
    await refused(put('tiny.pt', Buffer.from('PK\u0003\u0004')), /too short for a zip/);
    await refused(put('plain.zip', zipBytes([['readme.txt', Buffer.from('hi')]])), /not a PyTorch file/);
    await refused(put('nopkl.pt', zipBytes([['a/readme.txt', Buffer.from('hi')]])), /no a\/data\.pkl/);
    const centrals = (b: Buffer) => {
      const at: number[] = [];
      for (let i = b.indexOf(0x50); i >= 0 && i + 4 <= b.length; i = b.indexOf(0x50, i + 1)) if (b.readUInt32LE(i) === 0x02014b50) at.push(i);
      return at;
    };
    const overlap = Buffer.from(good);
    const cs = centrals(overlap);
    overlap.writeUInt32LE(overlap.readUInt32LE(cs[4]! + 42), cs[5]! + 42); // version's entry points at data/0's header
    await refused(put('overlap.pt', overlap), /overlap|local header names another file/);
    const outside = Buffer.from(good);
    outside.writeUInt32LE(outside.length + 100, cs[4]! + 42);
    await refused(put('outside.pt', outside), /runs past the entries' area/);
    const big = Buffer.from(good);
    big.writeUInt32LE(0x7fffffff, cs[4]! + 20);
    big.writeUInt32LE(0x7fffffff, cs[4]! + 24);
    await refused(put('bigentry.pt', big), /runs past the entries' area|overlap/);
    const endian = Buffer.from(good);
    const bo = endian.indexOf('little');
    endian.write('bigend', bo);
    await refused(put('endian.pt', endian), /only little-endian files are read/);
    await refused(put('deflated.pt', torchFileBytes({ dict: [['w', tensor('F32', [2], f32([1, 2]))]] }, { deflate: ['data/0'] })), /tensor "w": its storage data\/0 is compressed/);
  });

  test('tensors that do not fit their storage, negative or inconsistent strides, missing storages, unsupported dtypes', async () => {
    const one = (name: string, t: PV) => put(name, torchFileBytes({ dict: [['t', t]] }));
    await refused(one('past.pt', tensor('F32', [4], f32([1, 2]))), /tensor "t": elements \[0, 4\) run past its storage data\/0 \(8 bytes\)/);
    await refused(one('claims.pt', tensor('F32', [2], f32([1, 2]), { numel: 3 })), /storage data\/0 holds 8 bytes, less than its 3 elements/);
    await refused(one('offset.pt', tensor('F32', [2], f32([1, 2]), { storageOffset: 1 })), /elements \[1, 3\) run past/);
    await refused(one('negstride.pt', tensor('F32', [2], f32([1, 2]), { stride: [-1] })), /not contiguous \(size \[2\], stride \[-1\]\)/);
    await refused(one('zerostride.pt', tensor('F32', [2, 2], f32([1, 2]), { stride: [0, 1] })), /not contiguous/);
    await refused(one('negsize.pt', tensor('F32', [-2], f32([1, 2]), { stride: [1] })), /negative size/);
    await refused(one('bigshape.pt', tensor('F32', [2 ** 31 - 1, 2 ** 31 - 1, 2 ** 31 - 1], f32([1]))), /too large|run past|expected integers/);
    // A storage key that names no zip entry.
    const p = new Pickler();
    p.byte(0x80, 2, 0x7d).put().str('t').value(tensor('F32', [1], f32([1]), { storageKey: 'nothere' })).byte(0x73, 0x2e);
    const pickle = Buffer.from((p as unknown as { out: number[] }).out);
    await refused(put('missing.pt', torchFileBytes({ dict: [] }, { pickle })), /storage data\/nothere is missing from the zip/);
    const complex = [0x7d, ...str('t'), ...g('torch._utils', '_rebuild_tensor_v2'), 0x28, 0x28, ...str('storage'), ...g('torch', 'ComplexFloatStorage'), ...str('0'), ...str('cpu'), 0x4b, 1, 0x74, 0x51, 0x4b, 0, 0x4b, 1, 0x85, 0x4b, 1, 0x85, 0x89, ...g('collections', 'OrderedDict'), 0x29, 0x52, 0x74, 0x52, 0x73];
    await refused(withPickle('complex.pt', complex), /tensor "t": dtype torch\.ComplexFloatStorage is not supported/);
  });
});
