import fs from 'node:fs';
import path from 'node:path';
import { safeRelative } from '../files/paths.ts';
import type { NodeDefinition, NodeEnv, NodeInputs, NodeScope } from './api.ts';
import { decodeImage } from './image-io.ts';
import { walkInput } from './input-files.ts';
import { checkSize, Frame, ImageBatch, MAX_BATCH } from './image-types.ts';
import { resizeFrame } from './resample.ts';

/**
 * LoadImageSetFromFolderNode (comfy_extras/nodes_train): every PNG, JPEG and
 * WebP file of an input subfolder as one IMAGE batch, for training sets.
 * Images of another size than the first are refused (`None`), stretched or
 * padded with PIL's LANCZOS, or cut to it from the top left (PIL's crop:
 * what lies outside the image is black). Files are taken in name order (the
 * reference takes os.listdir's order, which the file system decides).
 */

/** Bounds the walk of the input folder, so a huge tree never stalls object_info. */
const MAX_FOLDERS = 10_000;
const SET_EXT = /\.(png|jpg|jpeg|webp)$/i;

/** folder_paths.get_input_subfolders: every folder below the input folder, recursively, sorted. */
function inputSubfolders(inputDir: string): string[] {
  return walkInput(inputDir, inputDir, MAX_FOLDERS, (e) => e.isDirectory());
}

function setInputs(scope: NodeScope | undefined, dirs: NodeEnv['dirs']): NodeInputs {
  return {
    required: { folder: [inputSubfolders((scope?.dirs ?? dirs).input), { tooltip: 'The folder to load images from.' }] },
    optional: { resize_method: [['None', 'Stretch', 'Crop', 'Pad'], { default: 'None' }] },
  };
}

/** PIL's Image.crop((0, 0, w, h)) of an RGB frame: the top-left part, black where the frame is smaller. */
function cropTopLeft(f: Frame, w: number, h: number): Frame {
  const src = f.data;
  const out = Buffer.alloc(w * h * 3);
  const cols = Math.min(w, f.width);
  for (let y = 0; y < Math.min(h, f.height); y++) src.copy(out, y * w * 3, y * f.width * 3, (y * f.width + cols) * 3);
  return new Frame(w, h, 3, out);
}

async function loadSet(folder: string, files: string[], resize: string, checkInterrupt: () => void): Promise<ImageBatch> {
  if (files.length === 0) throw Object.assign(new Error('No valid images found in input'), { pyType: 'ValueError' });
  if (files.length > MAX_BATCH) throw Object.assign(new Error(`The folder holds ${files.length} images; at most ${MAX_BATCH} load as one batch`), { pyType: 'ValueError' });
  const frames: Frame[] = [];
  for (const name of files) {
    checkInterrupt();
    // The reference converts to RGB (alpha dropped, not composited) before comparing sizes.
    let f = (await decodeImage(path.join(folder, name))).image.frames[0]!;
    const first = frames[0];
    if (first && (f.width !== first.width || f.height !== first.height)) {
      if (resize === 'Stretch' || resize === 'Pad') f = await resizeFrame(f, first.width, first.height, 'lanczos', 'disabled', checkInterrupt);
      else if (resize === 'Crop') f = cropTopLeft(f, first.width, first.height);
      else throw Object.assign(new Error('Your input image size does not match the first image in the dataset. Either select a valid resize method or use the same size for all images.'), { pyType: 'ValueError' });
    }
    checkSize(f.width, f.height, frames.length + 1);
    frames.push(f);
  }
  return new ImageBatch(frames);
}

export function imageSetNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  return [
    {
      name: 'LoadImageSetFromFolderNode',
      displayName: 'Load Image Dataset from Folder',
      description: 'Loads a batch of images from a directory for training.',
      category: 'loaders',
      pythonModule: 'comfy_extras.nodes_train',
      experimental: true,
      inputs: setInputs(undefined, dirs),
      dynamicInputs: (scope) => setInputs(scope, dirs),
      outputs: ['IMAGE'],
      execute: async ({ folder, resize_method }, ctx) => {
        const dir = safeRelative(ctx.env.dirs.input, String(folder));
        const files = fs
          .readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isFile() && SET_EXT.test(e.name))
          .map((e) => e.name)
          .sort();
        return [await loadSet(dir, files, String(resize_method ?? 'None'), () => ctx.checkInterrupt())];
      },
    },
  ];
}
