// Engine objects templates can see: loop, macros/caller, namespace, cycler, joiner, range.

import { pyError } from '../errors.js';
import { eq } from './ops.js';
import { pyRepr } from './repr.js';
import type { RenderState } from './state.js';
import {
  Markup,
  MISSING,
  NativeFunction,
  PyCallable,
  PyObject,
  Undefined,
  dictGet,
  dictKeys,
  isDict,
  markTuple,
  type KwMap,
} from './values.js';

/** Runtime frame: one per scope instance; slots are resolved at compile time. */
export class Frame {
  constructor(
    public vals: unknown[],
    public parent: Frame | null,
  ) {}
}

export class LoopContext extends PyObject {
  readonly pyTypeName = 'LoopContext';
  override readonly pyQualName = 'jinja2.runtime.LoopContext';
  index0 = -1;
  private lastChanged: unknown = MISSING;
  constructor(
    readonly items: unknown[],
    readonly depth0: number,
    private readonly recurse: ((r: RenderState, items: unknown, depth0: number) => string) | null,
  ) {
    super();
  }
  override pyGetAttr(name: string): unknown {
    const n = this.items.length;
    const i = this.index0;
    switch (name) {
      case 'index':
        return i + 1;
      case 'index0':
        return i;
      case 'revindex':
        return n - i;
      case 'revindex0':
        return n - i - 1;
      case 'first':
        return i === 0;
      case 'last':
        return i === n - 1;
      case 'length':
        return n;
      case 'depth':
        return this.depth0 + 1;
      case 'depth0':
        return this.depth0;
      case 'previtem':
        return i > 0 ? this.items[i - 1] : new Undefined('previtem', MISSING, 'there is no previous item');
      case 'nextitem':
        return i < n - 1 ? this.items[i + 1] : new Undefined('nextitem', MISSING, 'there is no next item');
      case 'cycle':
        return new NativeFunction('cycle', (r, args) => {
          if (!args.length) throw pyError('TypeError', 'no items for cycling given');
          return args[this.index0 % args.length];
        });
      case 'changed':
        return new NativeFunction('changed', (r, args) => {
          const cur = markTuple(args.slice());
          if (this.lastChanged !== MISSING && eq(this.lastChanged, cur)) return false;
          this.lastChanged = cur;
          return true;
        });
    }
    return MISSING;
  }
  /** `loop(items)` in a recursive loop. */
  callRecursive(r: RenderState, args: unknown[]): unknown {
    if (!this.recurse) throw pyError('TypeError', 'Tried to call non recursive loop.  Maybe you forgot the \'recursive\' modifier.');
    if (args.length !== 1) throw pyError('TypeError', 'loop() takes exactly one argument');
    return this.recurse(r, args[0], this.depth0 + 1);
  }
  override pyRepr(): string {
    return `<LoopContext ${this.index0 + 1}/${this.items.length}>`;
  }
}

export interface MacroDef {
  name: string;
  params: string[];
  /** Default expressions evaluated in the macro's own frame at call time, aligned to the last params. */
  defaults: ((r: RenderState, f: Frame) => unknown)[];
  body: (r: RenderState, f: Frame) => void;
  frameTemplate: unknown[];
  paramSlots: number[];
  varargsSlot: number;
  kwargsSlot: number;
  callerSlot: number;
}

export class Macro extends PyCallable {
  readonly pyName: string;
  constructor(
    readonly def: MacroDef,
    readonly closure: Frame,
    readonly autoescape: boolean,
  ) {
    super();
    this.pyName = def.name;
  }
  override typeRepr(): string {
    return 'Macro';
  }
  call(r: RenderState, args: unknown[], kw: KwMap): unknown {
    const d = this.def;
    r.enter();
    r.tick();
    try {
      const frame = new Frame(d.frameTemplate.slice(), this.closure);
      const nparams = d.params.length;
      const kwl = kw ? new Map(kw) : null;
      for (let i = 0; i < nparams; i++) {
        let v: unknown = MISSING;
        if (i < args.length) v = args[i];
        else if (kwl && kwl.has(d.params[i])) {
          v = kwl.get(d.params[i]);
          kwl.delete(d.params[i]);
        }
        if (v === MISSING) {
          const di = i - (nparams - d.defaults.length);
          v = di >= 0 ? d.defaults[di](r, frame) : new Undefined(d.params[i], MISSING, `parameter '${d.params[i]}' was not provided`);
        }
        frame.vals[d.paramSlots[i]] = v;
      }
      if (d.callerSlot >= 0 && !d.params.includes('caller')) {
        let c: unknown = null;
        if (kwl && kwl.has('caller')) {
          c = kwl.get('caller');
          kwl.delete('caller');
        }
        if (c === null) c = new Undefined('caller', MISSING, 'No caller defined');
        frame.vals[d.callerSlot] = c;
      }
      if (d.kwargsSlot >= 0) {
        const m = new Map<unknown, unknown>();
        if (kwl) for (const [k, v] of kwl) m.set(k, v);
        frame.vals[d.kwargsSlot] = m;
      } else if (kwl && kwl.size) {
        if (kwl.has('caller'))
          throw pyError('TypeError', `macro '${d.name}' was invoked with two values for the special caller argument. This is most likely a bug.`);
        throw pyError('TypeError', `macro '${d.name}' takes no keyword argument '${kwl.keys().next().value}'`);
      }
      if (d.varargsSlot >= 0) frame.vals[d.varargsSlot] = markTuple(args.slice(nparams));
      else if (args.length > nparams) throw pyError('TypeError', `macro '${d.name}' takes not more than ${nparams} argument(s)`);
      const saved = r.out;
      r.out = '';
      try {
        d.body(r, frame);
        const out = r.out;
        return this.autoescape ? new Markup(out) : out;
      } finally {
        r.out = saved;
      }
    } finally {
      r.leave();
    }
  }
  pyGetAttrMacro(name: string): unknown {
    const d = this.def;
    switch (name) {
      case 'name':
        return d.name;
      case 'arguments':
        return markTuple(d.params.slice());
      case 'catch_kwargs':
        return d.kwargsSlot >= 0;
      case 'catch_varargs':
        return d.varargsSlot >= 0;
      case 'caller':
        return d.callerSlot >= 0;
    }
    return MISSING;
  }
}

export class Namespace extends PyObject {
  readonly pyTypeName = 'Namespace';
  override readonly pyQualName = 'jinja2.utils.Namespace';
  readonly attrs = new Map<string, unknown>();
  override pyGetAttr(name: string): unknown {
    return this.attrs.has(name) ? this.attrs.get(name) : MISSING;
  }
  override pyRepr(): string {
    return `<Namespace {${Array.from(this.attrs, ([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(', ')}}>`;
  }
}

export function makeNamespace(args: unknown[], kw: KwMap): Namespace {
  const ns = new Namespace();
  for (const a of args) {
    if (isDict(a)) for (const k of dictKeys(a)) ns.attrs.set(String(k), dictGet(a, k));
    else throw pyError('TypeError', 'namespace() positional argument must be a mapping');
  }
  if (kw) for (const [k, v] of kw) ns.attrs.set(k, v);
  return ns;
}

export class Cycler extends PyObject {
  readonly pyTypeName = 'Cycler';
  override readonly pyQualName = 'jinja2.utils.Cycler';
  pos = 0;
  constructor(readonly items: unknown[]) {
    super();
    if (!items.length) throw pyError('RuntimeError', 'at least one item has to be provided');
  }
  override pyGetAttr(name: string): unknown {
    switch (name) {
      case 'items':
        return this.items;
      case 'current':
        return this.items[this.pos];
      case 'pos':
        return this.pos;
      case 'next':
      case '__next__':
        return new NativeFunction('next', () => {
          const v = this.items[this.pos];
          this.pos = (this.pos + 1) % this.items.length;
          return v;
        });
      case 'reset':
        return new NativeFunction('reset', () => {
          this.pos = 0;
          return null;
        });
    }
    return MISSING;
  }
}

export class Joiner extends PyCallable {
  readonly pyName = 'joiner';
  used = false;
  constructor(readonly sep: unknown) {
    super();
  }
  override typeRepr(): string {
    return 'Joiner';
  }
  call(): unknown {
    if (!this.used) {
      this.used = true;
      return '';
    }
    return this.sep;
  }
}

export class PyRange extends PyObject {
  readonly pyTypeName = 'range';
  constructor(
    readonly start: number,
    readonly stop: number,
    readonly step: number,
  ) {
    super();
  }
  get length(): number {
    const { start, stop, step } = this;
    if (step > 0) return start < stop ? Math.floor((stop - start - 1) / step) + 1 : 0;
    return start > stop ? Math.floor((start - stop - 1) / -step) + 1 : 0;
  }
  override pyIter(): unknown[] {
    const out = new Array(this.length);
    for (let i = 0, v = this.start; i < out.length; i++, v += this.step) out[i] = v;
    return out;
  }
  override pyLen(): number {
    return this.length;
  }
  override pyGetAttr(name: string): unknown {
    if (name === 'start') return this.start;
    if (name === 'stop') return this.stop;
    if (name === 'step') return this.step;
    return MISSING;
  }
  override pyRepr(): string {
    return this.step === 1 ? `range(${this.start}, ${this.stop})` : `range(${this.start}, ${this.stop}, ${this.step})`;
  }
}
