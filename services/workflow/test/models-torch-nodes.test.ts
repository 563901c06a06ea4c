/**
 * A PyTorch .ckpt checkpoint over HTTP: the tiny SD1.x fixture written as a
 * Lightning-style torch zip (state dict under "state_dict", the same tensor
 * bytes as the .safetensors twin) runs the reference's default workflow and
 * gives the reference's image on that checkpoint (test/fixtures/models-reference.json),
 * so the same image as the twin; a hostile .ckpt is a node error and the server carries on.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { onOneStorage } from '@svc/testkit';
import { unloadAll } from '../src/models/sd1.ts';
import { startWorkflow } from './helpers.ts';
import { TINY, writeFixture } from './models-fixture.ts';
import { defaultWorkflow, readOutput, run, type Server } from './nodes-helpers.ts';
import { safetensorsToTorch } from './torch-zip-writer.ts';

const ref = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'models-reference.json'), 'utf8'));

onOneStorage('workflow PyTorch checkpoints', (storage) => {
  let srv: Server;
  let ckptDir: string;
  before(async () => {
    srv = await startWorkflow(storage);
    ckptDir = path.join(srv.cfg.dataDir, 'models', 'checkpoints');
    fs.mkdirSync(ckptDir, { recursive: true });
    const twin = path.join(srv.cfg.dataDir, 'tiny.safetensors');
    writeFixture(twin, TINY);
    await safetensorsToTorch(twin, path.join(ckptDir, 'tiny.ckpt'));
    fs.copyFileSync(path.join(import.meta.dirname, 'fixtures', 'torch', 'evil-os.pt'), path.join(ckptDir, 'evil.ckpt'));
  });
  after(async () => {
    await srv.close();
    await unloadAll();
  });

  test('the default workflow on a .ckpt gives the reference\'s image (the same as its .safetensors twin)', async () => {
    const r = await srv.http.get('/object_info/CheckpointLoaderSimple');
    assert.deepEqual(r.body.CheckpointLoaderSimple.input.required.ckpt_name[0], ['evil.ckpt', 'tiny.ckpt']);
    const res = await run(srv, defaultWorkflow('tiny.ckpt', 'ckpt'));
    assert.equal(res.error, undefined, JSON.stringify(res.error));
    const px = await readOutput(srv, res.outputs['9'].images[0]);
    assert.deepEqual([px.width, px.height, px.channels], [48, 32, 3]);
    const expected = Buffer.from(ref.default_workflow.bytes, 'base64');
    let off = 0;
    px.data.forEach((v, i) => {
      assert.ok(Math.abs(v - expected[i]!) <= 1, `byte ${i}: ${v} vs ${expected[i]}`);
      if (v !== expected[i]) off++;
    });
    assert.ok(off <= expected.length * 0.001, `${off} of ${expected.length} bytes differ by one level`);
  });

  test('a .ckpt whose pickle calls os.system is a node error naming the file; nothing runs and the server carries on', async () => {
    const res = await run(srv, defaultWorkflow('evil.ckpt', 'x', 16, 16));
    assert.equal(res.error?.node_id, '4');
    assert.match(res.error.exception_message, /evil\.ckpt: .*posix\.system: module posix is blocked/);
    const ok = await run(srv, defaultWorkflow('tiny.ckpt', 'again', 16, 16));
    assert.equal(ok.error, undefined, JSON.stringify(ok.error));
  });
});
