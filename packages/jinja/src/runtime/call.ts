// Calling values from templates: engine callables, macros, host functions.

import { pyError } from '../errors.js';
import { BoundMethod, Kwargs, PyCallable, Undefined, typeName, type KwMap } from './values.js';
import { LoopContext } from './objects.js';
import type { RenderState } from './state.js';

export function callValue(r: RenderState, fn: unknown, args: unknown[], kw: KwMap): unknown {
  if (fn instanceof BoundMethod) {
    r.work(fn.self);
    return r.made(fn.self, fn.call(r, args, kw));
  }
  if (fn instanceof PyCallable) return fn.call(r, args, kw);
  if (typeof fn === 'function') {
    // host-provided function (context value or global): plain call, no `this`
    r.tick();
    const res = kw && kw.size ? fn(...args, new Kwargs(kw)) : fn(...args);
    return res === undefined ? null : res;
  }
  if (fn instanceof LoopContext) return fn.callRecursive(r, args);
  if (fn instanceof Undefined) fn.fail();
  throw pyError('TypeError', `'${typeName(fn)}' object is not callable`);
}

export { BoundMethod };
