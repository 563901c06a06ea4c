import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { forEachStorage } from '@svc/testkit';
import { readTextChunks } from '../src/files/png.ts';
import { startWorkflow, waitJob } from './helpers.ts';

forEachStorage('workflow SaveImage and packs', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage, {}, { packs: ['broken-pack.mjs', 'gate-pack.mjs'] });
  });
  after(async () => {
    await srv.close();
  });

  test('a pack that fails to load is left out; the others load', async () => {
    const info = (await srv.http.get('/object_info')).body;
    assert.ok(info.TestGate, 'the good pack loaded');
    assert.equal(info.TestGate.python_module, 'custom_nodes.gate-pack');
    assert.ok(info.SaveImage);
  });

  test('SaveImage writes PNGs with the prompt and workflow in tEXt chunks and counts per prefix and subfolder', async () => {
    const workflow = { id: 'wf-save', nodes: [{ id: 1, title: 'é ✓' }] };
    const prompt = {
      1: { class_type: 'EmptyImage', inputs: { width: 8, height: 4, batch_size: 2, color: 0x102030 } },
      2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'sub/dir/Pic' } },
    };
    const r1 = await srv.http.post('/prompt', { prompt, extra_data: { extra_pnginfo: { workflow } } });
    const j1 = await waitJob(srv.http, r1.body.prompt_id);
    assert.equal(j1.status, 'completed', JSON.stringify(j1.execution_error));
    // With assets on, each saved file also carries its asset id.
    assert.deepEqual(
      j1.outputs['2'].images.map(({ id: _id, ...rest }: Record<string, unknown>) => rest),
      [
        { filename: 'Pic_00001_.png', subfolder: 'sub/dir', type: 'output' },
        { filename: 'Pic_00002_.png', subfolder: 'sub/dir', type: 'output' },
      ],
    );
    // The same prompt again is cached (no new files); another prefix counts on its own.
    const r2 = await srv.http.post('/prompt', { prompt: { ...prompt, 2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'sub/dir/Other' } } } });
    const j2 = await waitJob(srv.http, r2.body.prompt_id);
    assert.equal(j2.outputs['2'].images[0].filename, 'Other_00001_.png');
    const file = path.join(srv.cfg.dataDir, 'output', 'sub', 'dir', 'Pic_00002_.png');
    const png = fs.readFileSync(file);
    const text = readTextChunks(png);
    assert.deepEqual(JSON.parse(text.prompt!), prompt);
    assert.deepEqual(JSON.parse(text.workflow!), workflow);
    assert.ok(!/[^\x00-\x7f]/.test(text.workflow!), 'non-ASCII is escaped as Python json.dumps does');
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    assert.deepEqual([info.width, info.height, info.channels], [8, 4, 3]);
    assert.deepEqual([...data.subarray(0, 3)], [0x10, 0x20, 0x30]);
  });

  test('PreviewImage writes ComfyUI_temp_<5 letters>_NNNNN_.png to temp with the prompt chunk and reports them as type temp', async () => {
    const prompt = {
      1: { class_type: 'EmptyImage', inputs: { width: 3, height: 2, batch_size: 2, color: 0x0a0b0c } },
      2: { class_type: 'PreviewImage', inputs: { images: ['1', 0] } },
    };
    const r = await srv.http.post('/prompt', { prompt });
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'completed', JSON.stringify(j.execution_error));
    const images: Array<{ filename: string; subfolder: string; type: string }> = j.outputs['2'].images;
    assert.equal(images.length, 2);
    const m = /^ComfyUI_temp_([a-z]{5})_00001_\.png$/.exec(images[0]!.filename);
    assert.ok(m, images[0]!.filename);
    assert.equal(images[1]!.filename, `ComfyUI_temp_${m[1]}_00002_.png`);
    for (const img of images) {
      assert.deepEqual([img.subfolder, img.type], ['', 'temp']);
      assert.equal(fs.existsSync(path.join(srv.cfg.dataDir, 'output', img.filename)), false, 'previews never land in output');
      const v = await fetch(`${srv.url}/api/view?filename=${encodeURIComponent(img.filename)}&type=temp&subfolder=`);
      assert.equal(v.status, 200);
      const png = Buffer.from(await v.arrayBuffer());
      assert.deepEqual(JSON.parse(readTextChunks(png).prompt!), prompt);
      const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
      assert.deepEqual([info.width, info.height, info.channels], [3, 2, 3]);
      assert.deepEqual([...data], Array(6).fill([10, 11, 12]).flat());
    }
  });

  test('a prefix that leaves the output folder fails the node, not the server', async () => {
    const r = await srv.http.post('/prompt', {
      prompt: {
        1: { class_type: 'EmptyImage', inputs: { width: 2, height: 2, batch_size: 1, color: 0 } },
        2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: '../../escape' } },
      },
    });
    const j = await waitJob(srv.http, r.body.prompt_id);
    assert.equal(j.status, 'failed');
    assert.match(j.execution_error.exception_message, /outside the output folder/);
    assert.ok(!fs.existsSync(path.join(srv.cfg.dataDir, 'escape_00001_.png')));
  });
});
