import path from 'node:path';
import type { NodeDefinition, NodeEnv, NodeInputs, NodeScope } from './api.ts';
import { loadImageFile, readableImage } from './image-io.ts';
import { walkInput } from './input-files.ts';
import { Video } from './video.ts';

/**
 * The reference's 3D viewer nodes (comfy_extras/nodes_load_3d). The viewer
 * itself is the frontend's: it shows the model file, and on queue uploads
 * what it rendered (image, mask, normal and line-art passes, optionally a
 * recording) to temp; the widget's value names those files. The backend
 * loads them as LoadImage does and passes the model path and camera on.
 */

/** Model files Load3D offers: everything below input/3d with these suffixes, as `3d/…` paths. */
const MODEL_EXT = /\.(gltf|glb|obj|fbx|stl)$/i;
const ANIMATED_EXT = /\.(gltf|glb|fbx)$/i;
/** Bounds the walk of input/3d, so a huge tree never stalls object_info. */
const MAX_LISTED = 10_000;

function listModels(inputDir: string, ext: RegExp): string[] {
  return walkInput(inputDir, path.join(inputDir, '3d'), MAX_LISTED, (e) => e.isFile() && ext.test(e.name));
}

function viewerInputs(scope: NodeScope | undefined, dirs: NodeEnv['dirs'], widget: string, ext: RegExp): NodeInputs {
  return {
    required: {
      model_file: [listModels((scope?.dirs ?? dirs).input, ext), { file_upload: true }],
      image: [widget, {}],
      width: ['INT', { default: 1024, min: 1, max: 4096, step: 1 }],
      height: ['INT', { default: 1024, min: 1, max: 4096, step: 1 }],
    },
  };
}

interface ViewerCapture {
  image: string;
  mask: string;
  normal: string;
  lineart?: string;
  camera_info: unknown;
  recording?: string;
}

function capture(v: unknown, passes: string[]): ViewerCapture {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw Object.assign(new Error('the 3D viewer sent no capture (its widget value must be an object)'), { pyType: 'TypeError' });
  const c = v as Record<string, unknown>;
  for (const k of passes) if (typeof c[k] !== 'string') throw Object.assign(new Error(`'${k}'`), { pyType: 'KeyError' });
  return c as unknown as ViewerCapture;
}

async function recording(scope: NodeScope, name: unknown): Promise<Video | null> {
  if (name === undefined || name === '') return null;
  const file = await readableImage(scope, name);
  if (!file) throw Object.assign(new Error(`Invalid video file: ${String(name)}`), { pyType: 'FileNotFoundError' });
  return new Video({ file });
}

function preview(name: string, displayName: string): NodeDefinition {
  return {
    name,
    displayName,
    category: '3d',
    pythonModule: 'comfy_extras.nodes_load_3d',
    experimental: true,
    outputNode: true,
    inputs: { required: { model_file: ['STRING', { default: '', multiline: false }] }, optional: { camera_info: ['LOAD3D_CAMERA', {}] } },
    outputs: [],
    execute: ({ model_file, camera_info }) => ({ ui: { result: [model_file, camera_info ?? null] } }),
  };
}

export function load3dNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  return [
    {
      name: 'Load3D',
      displayName: 'Load 3D',
      category: '3d',
      pythonModule: 'comfy_extras.nodes_load_3d',
      experimental: true,
      inputs: viewerInputs(undefined, dirs, 'LOAD_3D', MODEL_EXT),
      dynamicInputs: (scope) => viewerInputs(scope, dirs, 'LOAD_3D', MODEL_EXT),
      outputs: ['IMAGE', 'MASK', 'STRING', 'IMAGE', 'IMAGE', 'LOAD3D_CAMERA', 'VIDEO'],
      outputNames: ['image', 'mask', 'mesh_path', 'normal', 'lineart', 'camera_info', 'recording_video'],
      execute: async ({ model_file, image }, ctx) => {
        const c = capture(image, ['image', 'mask', 'normal', 'lineart']);
        const [img, mask, normal, lineart] = await Promise.all([c.image, c.mask, c.normal, c.lineart!].map((f) => loadImageFile(ctx.env, f)));
        return [img!.image, mask!.mask, model_file, normal!.image, lineart!.image, c.camera_info, await recording(ctx.env, c.recording)];
      },
    },
    {
      name: 'Load3DAnimation',
      displayName: 'Load 3D - Animation',
      category: '3d',
      pythonModule: 'comfy_extras.nodes_load_3d',
      experimental: true,
      inputs: viewerInputs(undefined, dirs, 'LOAD_3D_ANIMATION', ANIMATED_EXT),
      dynamicInputs: (scope) => viewerInputs(scope, dirs, 'LOAD_3D_ANIMATION', ANIMATED_EXT),
      outputs: ['IMAGE', 'MASK', 'STRING', 'IMAGE', 'LOAD3D_CAMERA', 'VIDEO'],
      outputNames: ['image', 'mask', 'mesh_path', 'normal', 'camera_info', 'recording_video'],
      execute: async ({ model_file, image }, ctx) => {
        const c = capture(image, ['image', 'mask', 'normal']);
        const [img, mask, normal] = await Promise.all([c.image, c.mask, c.normal].map((f) => loadImageFile(ctx.env, f)));
        return [img!.image, mask!.mask, model_file, normal!.image, c.camera_info, await recording(ctx.env, c.recording)];
      },
    },
    preview('Preview3D', 'Preview 3D'),
    preview('Preview3DAnimation', 'Preview 3D - Animation'),
  ];
}
