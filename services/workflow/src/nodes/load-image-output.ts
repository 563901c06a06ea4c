import type { NodeDefinition, NodeEnv } from './api.ts';
import { decodeImage, imageChanged, readableImage } from './image-io.ts';
import { MAX_RESOLUTION } from './image-types.ts';

/**
 * LoadImageOutput (nodes.py): LoadImage over the output folder. Its input is
 * a bare COMBO whose choices the frontend fetches from
 * `/internal/files/output`; the value is an annotated name such as
 * `name.png [output]` (a bare name means the input folder, as LoadImage's
 * VALIDATE_INPUTS resolves it), so no list check applies, only the file
 * check.
 */
export function loadImageOutputNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  return [
    {
      name: 'LoadImageOutput',
      displayName: 'Load Image (from Outputs)',
      description: 'Load an image from the output folder. When the refresh button is clicked, the node will update the image list and automatically select the first image, allowing for easy iteration.',
      category: 'image',
      experimental: true,
      inputs: {
        required: {
          image: ['COMBO', { image_upload: true, image_folder: 'output', remote: { route: '/internal/files/output', refresh_button: true, control_after_refresh: 'first' } }],
        },
      },
      outputs: ['IMAGE', 'MASK'],
      validateInputs: {
        inputs: ['image'],
        fn: async ({ image }, scope) => ((await readableImage(scope ?? { dirs }, image)) ? true : `Invalid image file: ${image}`),
      },
      isChanged: ({ image }, scope) => imageChanged(scope ?? { dirs }, image),
      execute: async ({ image }, ctx) => {
        const file = await readableImage(ctx.env, image);
        if (!file) throw Object.assign(new Error(`Invalid image file: ${image}`), { pyType: 'FileNotFoundError' });
        const { image: img, mask } = await decodeImage(file);
        return [img, mask];
      },
    },
    {
      // WebcamCapture (nodes_webcam) is LoadImage with a frame the frontend captured and uploaded.
      name: 'WebcamCapture',
      displayName: 'Webcam Capture',
      category: 'image',
      pythonModule: 'comfy_extras.nodes_webcam',
      inputs: {
        required: {
          image: ['WEBCAM', {}],
          width: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
          height: ['INT', { default: 0, min: 0, max: MAX_RESOLUTION, step: 1 }],
          capture_on_queue: ['BOOLEAN', { default: true }],
        },
      },
      outputs: ['IMAGE'],
      validateInputs: {
        inputs: ['image'],
        fn: async ({ image }, scope) => ((await readableImage(scope ?? { dirs }, image)) ? true : `Invalid image file: ${image}`),
      },
      isChanged: ({ image }, scope) => imageChanged(scope ?? { dirs }, image),
      execute: async ({ image }, ctx) => {
        const file = await readableImage(ctx.env, image);
        if (!file) throw Object.assign(new Error(`Invalid image file: ${image}`), { pyType: 'FileNotFoundError' });
        return [(await decodeImage(file)).image];
      },
    },
  ];
}
