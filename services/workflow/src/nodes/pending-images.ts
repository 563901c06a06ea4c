import type { NodeDefinition } from './api.ts';
import { ImageBatch } from './image-types.ts';

/**
 * Nodes marked with this key take IMAGE inputs whose frames may be pending
 * (see Frame in image-types.ts) and deal with them themselves; every other
 * node gets its IMAGE inputs with their pixels made (`materialisingInputs`).
 * A symbol key survives the spreads that decorate definitions (v3, packs).
 */
export const TAKES_PENDING = Symbol('takes pending images');

export function takesPendingImages<T extends NodeDefinition>(def: T): T {
  return Object.assign(def, { [TAKES_PENDING]: true });
}

/** The pending image batches among input values (a list input holds them one level down). */
function pendingIn(values: Record<string, unknown>): ImageBatch[] | undefined {
  let found: ImageBatch[] | undefined;
  const visit = (v: unknown) => {
    if (v instanceof ImageBatch && v.pending) (found ??= []).push(v);
  };
  for (const v of Object.values(values)) {
    if (Array.isArray(v)) v.forEach(visit);
    else visit(v);
  }
  return found;
}

/**
 * The node with its IMAGE inputs materialised before `execute` and
 * `checkLazyStatus` see them, unless it is marked TAKES_PENDING. Without a
 * pending input the node is called as it is (a synchronous node stays
 * synchronous); its async classification is kept as the registry would have
 * made it from the original function.
 */
export function materialisingInputs(def: NodeDefinition): NodeDefinition {
  if ((def as { [TAKES_PENDING]?: boolean })[TAKES_PENDING]) return def;
  const { execute, checkLazyStatus } = def;
  const wrapped: NodeDefinition = {
    ...def,
    isAsync: def.isAsync ?? execute.constructor.name === 'AsyncFunction',
    execute(inputs, ctx) {
      const pending = pendingIn(inputs);
      if (!pending) return execute.call(def, inputs, ctx);
      return Promise.all(pending.map((b) => b.materialise())).then(() => execute.call(def, inputs, ctx));
    },
  };
  if (checkLazyStatus) {
    wrapped.checkLazyStatus = (inputs, ctx) => {
      const pending = pendingIn(inputs);
      if (!pending) return checkLazyStatus.call(def, inputs, ctx);
      return Promise.all(pending.map((b) => b.materialise())).then(() => checkLazyStatus.call(def, inputs, ctx));
    };
  }
  return wrapped;
}
