import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow } from './helpers.ts';
import type { Server } from './nodes-helpers.ts';

const METHODS = ['nearest-exact', 'bilinear', 'area', 'bicubic', 'lanczos'];

/** Every image/mask node: [class, category, outputs, python_module]. */
const NODES: Array<[string, string, string[], string]> = [
  ['LoadImage', 'image', ['IMAGE', 'MASK'], 'nodes'],
  ['LoadImageMask', 'mask', ['MASK'], 'nodes'],
  ['SaveImage', 'image', [], 'nodes'],
  ['PreviewImage', 'image', [], 'nodes'],
  ['EmptyImage', 'image', ['IMAGE'], 'nodes'],
  ['ImageScale', 'image/upscaling', ['IMAGE'], 'nodes'],
  ['ImageScaleBy', 'image/upscaling', ['IMAGE'], 'nodes'],
  ['ImageInvert', 'image', ['IMAGE'], 'nodes'],
  ['ImageBatch', 'image', ['IMAGE'], 'nodes'],
  ['ImagePadForOutpaint', 'image', ['IMAGE', 'MASK'], 'nodes'],
  ['ImageScaleToTotalPixels', 'image/upscaling', ['IMAGE'], 'comfy_extras.nodes_post_processing'],
  ['ImageBlend', 'image/postprocessing', ['IMAGE'], 'comfy_extras.nodes_post_processing'],
  ['ImageBlur', 'image/postprocessing', ['IMAGE'], 'comfy_extras.nodes_post_processing'],
  ['ImageSharpen', 'image/postprocessing', ['IMAGE'], 'comfy_extras.nodes_post_processing'],
  ['ImageQuantize', 'image/postprocessing', ['IMAGE'], 'comfy_extras.nodes_post_processing'],
  ['ImageCrop', 'image/transform', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['ImageStitch', 'image/transform', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['ImageRotate', 'image/transform', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['ImageFlip', 'image/transform', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['ImageFromBatch', 'image/batch', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['RepeatImageBatch', 'image/batch', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['GetImageSize', 'image', ['INT', 'INT', 'INT'], 'comfy_extras.nodes_images'],
  ['ImageScaleToMaxDimension', 'image/upscaling', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['ResizeAndPadImage', 'image/transform', ['IMAGE'], 'comfy_extras.nodes_images'],
  ['ImageCompositeMasked', 'image', ['IMAGE'], 'comfy_extras.nodes_mask'],
  ['ImageToMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['ImageColorToMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['MaskToImage', 'mask', ['IMAGE'], 'comfy_extras.nodes_mask'],
  ['SolidMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['InvertMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['CropMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['GrowMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['FeatherMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['ThresholdMask', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['MaskComposite', 'mask', ['MASK'], 'comfy_extras.nodes_mask'],
  ['MaskPreview', 'mask', [], 'comfy_extras.nodes_mask'],
  ['JoinImageWithAlpha', 'mask/compositing', ['IMAGE'], 'comfy_extras.nodes_compositing'],
  ['SplitImageWithAlpha', 'mask/compositing', ['IMAGE', 'MASK'], 'comfy_extras.nodes_compositing'],
];

forEachStorage('workflow image node schemas', (storage) => {
  let srv: Server;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('every image and mask node is listed with its category, outputs and module', async () => {
    const r = await srv.http.get('/object_info');
    assert.equal(r.status, 200);
    for (const [name, category, outputs, module] of NODES) {
      const info = r.body[name];
      assert.ok(info, `${name} missing`);
      assert.equal(info.category, category, name);
      assert.deepEqual(info.output, outputs, name);
      assert.equal(info.python_module, module, name);
      assert.deepEqual(info.output_is_list, outputs.map(() => false), name);
      assert.equal('essentials_category' in info, true, name);
    }
  });

  test('a V1 node of nodes.py: ImageScale exactly as the reference renders it', async () => {
    const r = await srv.http.get('/object_info/ImageScale');
    assert.deepEqual(r.body.ImageScale, {
      input: {
        required: {
          image: ['IMAGE'],
          upscale_method: [METHODS],
          width: ['INT', { default: 512, min: 0, max: 16384, step: 1 }],
          height: ['INT', { default: 512, min: 0, max: 16384, step: 1 }],
          crop: [['disabled', 'center']],
        },
      },
      input_order: { required: ['image', 'upscale_method', 'width', 'height', 'crop'] },
      is_input_list: false,
      output: ['IMAGE'],
      output_is_list: [false],
      output_name: ['IMAGE'],
      name: 'ImageScale',
      display_name: 'Upscale Image',
      description: '',
      python_module: 'nodes',
      category: 'image/upscaling',
      output_node: false,
      has_intermediate_output: false,
      deprecated: false,
      experimental: false,
      dev_only: false,
      api_node: false,
      search_aliases: ['resize', 'resize image', 'scale image', 'image resize', 'zoom', 'zoom in', 'change size'],
      essentials_category: 'Image Tools',
    });
  });

  test('V3 nodes: options objects on every input, COMBO with multiselect, null output tooltips, advanced flags', async () => {
    let r = await srv.http.get('/object_info/ImageSharpen');
    const sharpen = r.body.ImageSharpen;
    assert.deepEqual(sharpen.input.required, {
      image: ['IMAGE', {}],
      sharpen_radius: ['INT', { default: 1, min: 1, max: 31, step: 1, advanced: true }],
      sigma: ['FLOAT', { default: 1.0, min: 0.1, max: 10.0, step: 0.01, advanced: true }],
      alpha: ['FLOAT', { default: 1.0, min: 0.0, max: 5.0, step: 0.01, advanced: true }],
    });
    assert.deepEqual(sharpen.output_tooltips, [null]);
    r = await srv.http.get('/object_info/MaskComposite');
    assert.deepEqual(r.body.MaskComposite.input.required.operation, ['COMBO', { multiselect: false, options: ['multiply', 'add', 'subtract', 'and', 'or', 'xor'] }]);
    assert.deepEqual(r.body.MaskComposite.search_aliases, ['combine masks', 'blend masks', 'layer masks']);
    r = await srv.http.get('/object_info/ImageStitch');
    const stitch = r.body.ImageStitch;
    assert.deepEqual(stitch.input.required.direction, ['COMBO', { default: 'right', multiselect: false, options: ['right', 'down', 'left', 'up'] }]);
    assert.deepEqual(stitch.input.optional, { image2: ['IMAGE', {}] });
    assert.deepEqual(stitch.input_order, { required: ['image1', 'direction', 'match_image_size', 'spacing_width', 'spacing_color'], optional: ['image2'] });
    assert.equal(stitch.display_name, 'Image Stitch');
    r = await srv.http.get('/object_info/GrowMask');
    assert.deepEqual(r.body.GrowMask.input.required.expand, ['INT', { default: 0, min: -16384, max: 16384, step: 1 }]);
    assert.deepEqual(r.body.GrowMask.input.required.tapered_corners, ['BOOLEAN', { default: true, advanced: true }]);
    r = await srv.http.get('/object_info/ImageBlend');
    assert.equal(r.body.ImageBlend.essentials_category, 'Image Tools');
    assert.deepEqual(r.body.ImageBlend.input.required.blend_mode[1].options, ['normal', 'multiply', 'screen', 'overlay', 'soft_light', 'difference']);
    r = await srv.http.get('/object_info/GetImageSize');
    assert.deepEqual(r.body.GetImageSize.output_name, ['width', 'height', 'batch_size']);
  });

  test('image loaders offer the input folder as a combo; output nodes carry their hidden inputs and metadata', async () => {
    const r = await srv.http.get('/object_info');
    assert.ok(Array.isArray(r.body.LoadImage.input.required.image[0]));
    assert.deepEqual(r.body.LoadImage.input.required.image[1], { image_upload: true });
    assert.deepEqual(r.body.LoadImageMask.input.required.channel, [['alpha', 'red', 'green', 'blue']]);
    assert.equal(r.body.LoadImageMask.display_name, 'Load Image (as Mask)');
    assert.equal(r.body.LoadImage.essentials_category, 'Basics');
    assert.deepEqual(r.body.SaveImage.input.hidden, { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' });
    assert.equal(r.body.SaveImage.description, 'Saves the input images to your ComfyUI output directory.');
    assert.equal(r.body.PreviewImage.output_node, true);
    assert.equal(r.body.MaskPreview.output_node, true);
    assert.equal(r.body.ImageBatch.deprecated, true);
    assert.deepEqual(r.body.ImagePadForOutpaint.input.required.feathering, ['INT', { default: 40, min: 0, max: 16384, step: 1, advanced: true }]);
  });

  test('out-of-range widget values are refused at validation with the reference errors', async () => {
    const r = await srv.http.post('/prompt', {
      prompt: {
        s: { class_type: 'SolidMask', inputs: { value: 2, width: 0, height: 99999 } },
        p: { class_type: 'MaskPreview', inputs: { mask: ['s', 0] } },
        b: { class_type: 'EmptyImage', inputs: { width: 4, height: 4, batch_size: 1, color: 0 } },
        q: { class_type: 'ImageQuantize', inputs: { image: ['b', 0], colors: 300, dither: 'atkinson' } },
        o: { class_type: 'PreviewImage', inputs: { images: ['q', 0] } },
      },
    });
    assert.equal(r.status, 400);
    assert.deepEqual(
      r.body.node_errors.s.errors.map((e: any) => [e.type, e.extra_info.input_name]),
      [
        ['value_bigger_than_max', 'value'],
        ['value_smaller_than_min', 'width'],
        ['value_bigger_than_max', 'height'],
      ],
    );
    assert.deepEqual(
      r.body.node_errors.q.errors.map((e: any) => [e.type, e.extra_info.input_name]),
      [
        ['value_bigger_than_max', 'colors'],
        ['value_not_in_list', 'dither'],
      ],
    );
  });
});
