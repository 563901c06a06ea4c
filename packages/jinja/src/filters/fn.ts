import type { RenderState } from '../runtime/state.js';
import type { KwMap } from '../runtime/values.js';

/** A filter as the compiled template calls it: the render's state, the value filtered, then the arguments. */
export type FilterFn = (r: RenderState, value: unknown, args: unknown[], kw: KwMap) => unknown;
/** A test (`is name`): as a filter, answering a boolean. */
export type TestFn = (r: RenderState, value: unknown, args: unknown[], kw: KwMap) => boolean;
