import type { NodeDefinition, NodeEnv } from './api.ts';
import { animatedSaveNodes } from './animated-save.ts';
import { audioNodes } from './audio-nodes.ts';
import { compositingNodes } from './compositing.ts';
import { emptyLatentNodes } from './empty-latents.ts';
import { imageExtraNodes } from './image-extras.ts';
import { imageFilterNodes } from './image-filters.ts';
import { imageIoNodes } from './image-io.ts';
import { imageTransformNodes } from './image-transform.ts';
import { latentFileNodes } from './latent-files.ts';
import { latentNodes } from './latent-nodes.ts';
import { loadImageOutputNodes } from './load-image-output.ts';
import { logicNodes } from './logic.ts';
import { maskNodes } from './masks.ts';
import { materialisingInputs } from './pending-images.ts';
import { mathNodes } from './math-expression.ts';
import { previewAnyNodes } from './preview-any.ts';
import { primitiveNodes } from './primitives.ts';
import { regexNodes } from './regex.ts';
import { sdNodes } from './sd/index.ts';
import { gitsNodes } from './gits.ts';
import { sigmaNodes } from './sigmas.ts';
import { stringNodes } from './strings.ts';
import { videoNodes } from './video.ts';
import { load3dNodes } from './load-3d.ts';
import { imageSetNodes } from './image-sets.ts';
import { upscaleModelNodes } from './sd/upscale-nodes.ts';
import { conditioningValueNodes } from './conditioning-values.ts';

/** Every built-in node family (nodes that read pixels get IMAGE inputs with their pixels made: see pending-images.ts). */
export function builtinNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  return [
    ...primitiveNodes,
    ...stringNodes,
    ...regexNodes,
    ...mathNodes,
    ...previewAnyNodes,
    ...logicNodes,
    ...imageIoNodes(dirs),
    ...imageTransformNodes,
    ...imageFilterNodes,
    ...maskNodes,
    ...compositingNodes,
    ...imageExtraNodes,
    ...animatedSaveNodes,
    ...loadImageOutputNodes(dirs),
    ...latentNodes,
    ...latentFileNodes(dirs),
    ...emptyLatentNodes,
    ...sigmaNodes,
    ...gitsNodes,
    ...sdNodes(dirs),
    ...audioNodes(dirs),
    ...videoNodes(dirs),
    ...load3dNodes(dirs),
    ...imageSetNodes(dirs),
    ...upscaleModelNodes(dirs),
    ...conditioningValueNodes,
  ].map(materialisingInputs);
}
