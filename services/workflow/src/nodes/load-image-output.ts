import type { NodeDefinition, NodeEnv } from './api.ts';
import { imageFileInput, loadImageFile } from './image-io.ts';
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
      ...imageFileInput(dirs),
      execute: async ({ image }, ctx) => {
        const { image: img, mask } = await loadImageFile(ctx.env, image);
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
      ...imageFileInput(dirs),
      execute: async ({ image }, ctx) => [(await loadImageFile(ctx.env, image)).image],
    },
  ];
}
