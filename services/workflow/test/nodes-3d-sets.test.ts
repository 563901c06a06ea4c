import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage, type StorageKind } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import { image, putInput, readOutput, run, type Server } from './nodes-helpers.ts';

/**
 * The 3D viewer nodes (nodes_load_3d) and LoadImageSetFromFolderNode
 * (nodes_train). Expected pixels of the resized set were computed with the
 * reference's PIL calls (Image.resize LANCZOS, Image.crop) on the same bytes.
 */

/** A 6×3 RGB image and the first image's 4×4 size: what the set loader must fit it to. */
const wide = image(6, 3, 3, (x, y) => [(x * 40 + y * 10) % 256, (x * 7 + y * 60) % 256, (x * x * 9 + y) % 256]);
const STRETCHED = [10, 0, 1, 69, 9, 26, 131, 20, 96, 190, 30, 203, 14, 29, 1, 73, 39, 26, 135, 50, 96, 194, 60, 203, 26, 95, 3, 85, 105, 28, 147, 116, 98, 206, 126, 205, 30, 125, 3, 89, 135, 28, 151, 146, 98, 210, 156, 205];
const CROPPED = [0, 0, 0, 40, 7, 9, 80, 14, 36, 120, 21, 81, 10, 60, 1, 50, 67, 10, 90, 74, 37, 130, 81, 82, 20, 120, 2, 60, 127, 11, 100, 134, 38, 140, 141, 83, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

forEachStorage('3D viewer and image set nodes', (storage: StorageKind) => {
  let srv: Server;

  before(async () => {
    srv = await startWorkflow(storage);
    const input = path.join(srv.cfg.dataDir, 'input');
    fs.mkdirSync(path.join(input, '3d', 'sub'), { recursive: true });
    fs.writeFileSync(path.join(input, '3d', 'a.glb'), 'glTF');
    fs.writeFileSync(path.join(input, '3d', 'sub', 'b.obj'), 'v 0 0 0\n');
    fs.writeFileSync(path.join(input, '3d', 'c.txt'), 'not a model');
    await putInput(srv, 'set/1.png', image(4, 4, 3, () => [200, 100, 50]));
    await putInput(srv, 'set/2.png', wide);
    fs.mkdirSync(path.join(input, 'set', 'inner'), { recursive: true });
  });
  after(() => srv.close());

  test('object_info: the model files below input/3d, the capture widgets, the input subfolders', async () => {
    const info = (await srv.http.get('/object_info')).body;
    assert.deepEqual(info.Load3D.input.required.model_file, [['3d/a.glb', '3d/sub/b.obj'], { file_upload: true }]);
    assert.deepEqual(info.Load3D.input.required.image, ['LOAD_3D', {}]);
    assert.deepEqual(info.Load3D.output, ['IMAGE', 'MASK', 'STRING', 'IMAGE', 'IMAGE', 'LOAD3D_CAMERA', 'VIDEO']);
    assert.deepEqual(info.Load3D.output_name, ['image', 'mask', 'mesh_path', 'normal', 'lineart', 'camera_info', 'recording_video']);
    assert.equal(info.Load3D.experimental, true);
    assert.equal(info.Load3D.category, '3d');
    assert.deepEqual(info.Load3DAnimation.input.required.model_file[0], ['3d/a.glb']);
    assert.equal(info.Preview3D.output_node, true);
    assert.deepEqual(info.Preview3D.input.optional.camera_info, ['LOAD3D_CAMERA', {}]);
    assert.equal(info.Preview3DAnimation.display_name, 'Preview 3D - Animation');
    const set = info.LoadImageSetFromFolderNode;
    assert.deepEqual(set.input.required.folder[0].filter((f: string) => f.startsWith('set')), ['set', 'set/inner']);
    assert.deepEqual(set.input.optional.resize_method, [['None', 'Stretch', 'Crop', 'Pad'], { default: 'None' }]);
    assert.equal(set.display_name, 'Load Image Dataset from Folder');
  });

  test("Load3D loads the viewer's captures from temp and passes the model path and camera on to Preview3D", async () => {
    const temp = path.join(srv.cfg.dataDir, 'temp');
    fs.mkdirSync(temp, { recursive: true });
    const sharp = (await import('sharp')).default;
    const png = (r: number, a = 255) => sharp(Buffer.from(new Array(8 * 6).fill([r, 10, 20, a]).flat()), { raw: { width: 8, height: 6, channels: 4 } }).png().toBuffer();
    fs.writeFileSync(path.join(temp, 'cap.png'), await png(90));
    fs.writeFileSync(path.join(temp, 'mask.png'), await png(0, 0));
    fs.writeFileSync(path.join(temp, 'normal.png'), await png(128));
    fs.writeFileSync(path.join(temp, 'line.png'), await png(255));
    const camera = { position: { x: 1, y: 2, z: 3 }, target: { x: 0, y: 0, z: 0 }, zoom: 1, cameraType: 'perspective' };
    const capture = { image: 'cap.png [temp]', mask: 'mask.png [temp]', normal: 'normal.png [temp]', lineart: 'line.png [temp]', camera_info: camera, recording: '' };
    const r = await run(srv, {
      '1': { class_type: 'Load3D', inputs: { model_file: '3d/a.glb', image: capture, width: 1024, height: 1024 } },
      '2': { class_type: 'Preview3D', inputs: { model_file: ['1', 2], camera_info: ['1', 5] } },
      '3': { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'l3d' } },
      '4': { class_type: 'MaskToImage', inputs: { mask: ['1', 1] } },
      '5': { class_type: 'SaveImage', inputs: { images: ['4', 0], filename_prefix: 'l3dmask' } },
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(r.outputs['2'].result, ['3d/a.glb', camera]);
    const img = await readOutput(srv, r.outputs['3'].images[0]);
    assert.deepEqual([img.width, img.height, img.data.slice(0, 3)], [8, 6, [90, 10, 20]]);
    // The mask output is LoadImage's mask of the mask pass: 1 - alpha.
    const mask = await readOutput(srv, r.outputs['5'].images[0]);
    assert.deepEqual(mask.data.slice(0, 3), [255, 255, 255]);
  });

  test('Load3D: a capture that is not an object, or names a missing file, fails the node clearly', async () => {
    const bad = await run(srv, { '1': { class_type: 'Load3D', inputs: { model_file: '3d/a.glb', image: 'x', width: 8, height: 8 } }, '2': { class_type: 'Preview3D', inputs: { model_file: ['1', 2] } } });
    assert.equal(bad.error?.exception_type, 'TypeError');
    const missing = await run(srv, {
      '1': { class_type: 'Load3D', inputs: { model_file: '3d/a.glb', image: { image: 'nope.png [temp]', mask: 'nope.png [temp]', normal: 'nope.png [temp]', lineart: 'nope.png [temp]', camera_info: null, recording: '' }, width: 8, height: 8 } },
      '2': { class_type: 'Preview3D', inputs: { model_file: ['1', 2] } },
    });
    assert.equal(missing.error?.exception_type, 'FileNotFoundError');
    const traversal = await srv.http.post('/prompt', { prompt: { '1': { class_type: 'Load3D', inputs: { model_file: '../secret.glb', image: {}, width: 8, height: 8 } }, '2': { class_type: 'Preview3D', inputs: { model_file: ['1', 2] } } } });
    assert.equal(traversal.status, 400);
    assert.deepEqual(traversal.body.node_errors['1'].errors[0], {
      type: 'value_not_in_list',
      message: 'Value not in list',
      details: "model_file: '../secret.glb' not in ['3d/a.glb', '3d/sub/b.obj']",
      extra_info: { input_name: 'model_file', input_config: [['3d/a.glb', '3d/sub/b.obj'], { file_upload: true }], received_value: '../secret.glb' },
    });
    const folder = await srv.http.post('/prompt', { prompt: { '1': { class_type: 'LoadImageSetFromFolderNode', inputs: { folder: '..' } }, '2': { class_type: 'SaveImage', inputs: { images: ['1', 0] } } } });
    assert.equal(folder.status, 400);
    assert.equal(folder.body.node_errors['1'].errors[0].type, 'value_not_in_list');
    // A model file added after start is valid at once (the list is read at validation, as the reference's INPUT_TYPES).
    fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', '3d', 'new.stl'), 'solid x');
    const added = await srv.http.post('/prompt', { prompt: { '1': { class_type: 'Load3D', inputs: { model_file: '3d/new.stl', image: {}, width: 8, height: 8 } }, '2': { class_type: 'Preview3D', inputs: { model_file: ['1', 2] } } } });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    fs.rmSync(path.join(srv.cfg.dataDir, 'input', '3d', 'new.stl'));
  });

  test('LoadImageSetFromFolderNode: refuses a size mismatch, stretches with PIL LANCZOS, crops from the top left', async () => {
    const none = await run(srv, { '1': { class_type: 'LoadImageSetFromFolderNode', inputs: { folder: 'set', resize_method: 'None' } }, '2': { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'set' } } });
    assert.equal(none.error?.exception_type, 'ValueError');
    assert.match(none.error?.exception_message, /does not match the first image/);
    for (const [method, want] of [['Stretch', STRETCHED], ['Pad', STRETCHED], ['Crop', CROPPED]] as const) {
      const r = await run(srv, { '1': { class_type: 'LoadImageSetFromFolderNode', inputs: { folder: 'set', resize_method: method } }, '2': { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: `set_${method}` } } });
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      const [first, second] = r.outputs['2'].images;
      assert.deepEqual((await readOutput(srv, first)).data.slice(0, 3), [200, 100, 50]);
      const px = await readOutput(srv, second);
      assert.deepEqual([px.width, px.height], [4, 4]);
      assert.deepEqual(px.data, want, method);
    }
    const empty = await run(srv, { '1': { class_type: 'LoadImageSetFromFolderNode', inputs: { folder: 'set/inner' } }, '2': { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'empty' } } });
    assert.equal(empty.error?.exception_message, 'No valid images found in input\n');
  });
});
