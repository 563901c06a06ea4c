import type { NodeDefinition, NodeEnv } from './api.ts';
import { compositingNodes } from './compositing.ts';
import { imageFilterNodes } from './image-filters.ts';
import { imageIoNodes } from './image-io.ts';
import { imageTransformNodes } from './image-transform.ts';
import { maskNodes } from './masks.ts';
import { mathNodes } from './math-expression.ts';
import { previewAnyNodes } from './preview-any.ts';
import { primitiveNodes } from './primitives.ts';
import { regexNodes } from './regex.ts';
import { stringNodes } from './strings.ts';

/** Every built-in node family. */
export function builtinNodes(dirs: NodeEnv['dirs']): NodeDefinition[] {
  return [
    ...primitiveNodes,
    ...stringNodes,
    ...regexNodes,
    ...mathNodes,
    ...previewAnyNodes,
    ...imageIoNodes(dirs),
    ...imageTransformNodes,
    ...imageFilterNodes,
    ...maskNodes,
    ...compositingNodes,
  ];
}
