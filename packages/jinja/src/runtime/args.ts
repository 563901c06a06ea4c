// Python-style argument binding for builtin filters, tests and methods.

import { pyError } from '../errors.js';
import { MISSING, type KwMap } from './values.js';

/**
 * Bind positional/keyword arguments to `names`. Returns an array aligned with `names`;
 * absent optional arguments are MISSING (callers apply their defaults).
 * `required` = how many leading names must be given.
 */
export function bindArgs(fname: string, args: unknown[], kw: KwMap, names: string[], required = 0): unknown[] {
  if (args.length > names.length)
    throw pyError('TypeError', `${fname}() takes at most ${names.length} argument${names.length === 1 ? '' : 's'} (${args.length} given)`);
  const out: unknown[] = new Array(names.length);
  for (let i = 0; i < names.length; i++) out[i] = i < args.length ? args[i] : MISSING;
  if (kw) {
    for (const [k, v] of kw) {
      const idx = names.indexOf(k);
      if (idx < 0) throw pyError('TypeError', `${fname}() got an unexpected keyword argument '${k}'`);
      if (out[idx] !== MISSING) throw pyError('TypeError', `${fname}() got multiple values for argument '${k}'`);
      out[idx] = v;
    }
  }
  for (let i = 0; i < required; i++)
    if (out[i] === MISSING) throw pyError('TypeError', `${fname}() missing required argument '${names[i]}' (pos ${i + 1})`);
  return out;
}

export function dflt<T>(v: unknown, d: T): unknown | T {
  return v === MISSING ? d : v;
}

export function noKw(fname: string, kw: KwMap): void {
  if (kw && kw.size) throw pyError('TypeError', `${fname}() takes no keyword arguments`);
}
