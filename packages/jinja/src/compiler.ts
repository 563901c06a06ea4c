// Compiles the syntax tree into JavaScript closures once per template, so rendering is a
// tree of direct function calls with variable slots resolved at compile time.
// Never generates source text: no eval/new Function.

import type { CallArgs, Expr, FilterExpr, Stmt } from './ast.js';
import { TemplateRuntimeError, TemplateSyntaxError, pyError } from './errors.js';
import { stringFilters } from './filters/strings.js';
import { compilePrintf, compilePrintf1 } from './runtime/printf.js';
import { callValue } from './runtime/call.js';
import { escapeHtml } from './runtime/escape.js';
import { STR_METHODS, LIST_METHODS, SEQ_METHODS, DICT_METHODS } from './runtime/methods.js';
import { Frame, LoopContext, Macro, Namespace, PyRange, type MacroDef } from './runtime/objects.js';
import * as ops from './runtime/ops.js';
import { pyStr } from './runtime/repr.js';
import type { RenderState } from './runtime/state.js';
import { getattr, getitem } from './sandbox.js';
import {
  Markup,
  MISSING,
  Undefined,
  dictGet,
  dictKeys,
  dictSet,
  isDict,
  isPlainObject,
  isTuple,
  markTuple,
  mkFloat,
  toList,
  truthy,
  type KwMap,
} from './runtime/values.js';
import type { FilterFn, TestFn } from './filters/fn.js';

export type { FilterFn, TestFn };
export type Ev = (r: RenderState, f: Frame) => unknown;
export type Ex = (r: RenderState, f: Frame) => void;

export interface CompileEnv {
  filters: Map<string, FilterFn>;
  tests: Map<string, TestFn>;
  globals: Map<string, unknown>;
}

export interface Compiled {
  root: Ex;
  frameTemplate: unknown[];
}

/**
 * Initial slot value for a name stored in a scope before anything in that scope read it:
 * Jinja2 starts such variables as undefined (instead of looking them up in the context),
 * which nested loops and macros observe when they read the name before the assignment.
 */
export const UNDEF_INIT: unique symbol = Symbol('undefinedInit');

class Scope {
  readonly names = new Map<string, number>();
  /** Names read in this scope (directly, not in nested scopes). */
  readonly loads = new Set<string>();
  readonly undefInit = new Set<string>();
  constructor(readonly parent: Scope | null) {}
  /** Does this scope or an enclosing one know the name (store or load)? */
  hasRef(name: string): boolean {
    for (let s: Scope | null = this; s; s = s.parent) if (s.names.has(name) || s.loads.has(name)) return true;
    return false;
  }
  declare(name: string): number {
    let s = this.names.get(name);
    if (s === undefined) {
      s = this.names.size;
      this.names.set(name, s);
    }
    return s;
  }
  template(): unknown[] {
    const t = new Array(this.names.size).fill(MISSING);
    for (const n of this.undefInit) {
      const slot = this.names.get(n);
      if (slot !== undefined) t[slot] = UNDEF_INIT;
    }
    return t;
  }

  /** Sequential analysis of the scope's own statements, as Jinja2's symbol tracking does it. */
  analyze(stmts: Stmt[], stores: Set<string>): void {
    const stored = new Set<string>();
    const loadedFirst = new Set<string>();
    const load = (e: unknown) => exprLoads(e, (n) => {
      this.loads.add(n);
      if (!stored.has(n)) loadedFirst.add(n);
    });
    const store = (t: Expr) => {
      const out = new Set<string>();
      targetNames(t, out);
      for (const n of out) stored.add(n);
      if (t.k === 'NSRef') load({ k: 'Name', name: t.name });
    };
    const walk = (list: Stmt[]) => {
      for (const s of list) {
        switch (s.k) {
          case 'Output':
            load(s.node);
            break;
          case 'If':
            load(s.test);
            walk(s.body);
            walk(s.else_);
            break;
          case 'Autoescape':
            load(s.value);
            walk(s.body);
            break;
          case 'For':
            load(s.iter);
            break;
          case 'Assign':
            load(s.node);
            store(s.target);
            break;
          case 'AssignBlock':
            store(s.target);
            break;
          case 'With':
            load(s.values);
            break;
          case 'CallBlock':
            load(s.call);
            break;
          case 'Macro':
            stored.add(s.name);
            break;
        }
      }
    };
    walk(stmts);
    const parent = this.parent;
    for (const n of stores) if (!loadedFirst.has(n) && !(parent && parent.hasRef(n))) this.undefInit.add(n);
  }
}

/** Names read by an expression subtree. */
function exprLoads(e: unknown, cb: (name: string) => void): void {
  if (Array.isArray(e)) {
    for (const x of e) exprLoads(x, cb);
    return;
  }
  if (!e || typeof e !== 'object') return;
  const n = e as { k?: string; name?: string };
  if (n.k === 'Name' && typeof n.name === 'string') {
    cb(n.name);
    return;
  }
  for (const [key, v] of Object.entries(n)) if (key !== 'k' && key !== 'line' && v && typeof v === 'object') exprLoads(v, cb);
}

/** Names assigned directly in a scope (if/autoescape bodies share their parent's scope). */
function collectStores(stmts: Stmt[], out: Set<string>): void {
  for (const s of stmts) {
    switch (s.k) {
      case 'Assign':
      case 'AssignBlock':
        targetNames(s.target, out);
        break;
      case 'Macro':
        out.add(s.name);
        break;
      case 'If':
        collectStores(s.body, out);
        collectStores(s.else_, out);
        break;
      case 'Autoescape':
        collectStores(s.body, out);
        break;
    }
  }
}
function targetNames(t: Expr, out: Set<string>): void {
  if (t.k === 'Name') out.add(t.name);
  else if (t.k === 'Tuple') for (const i of t.items) targetNames(i, out);
}

/** Does the subtree contain a node of one of these kinds? */
function containsKind(nodes: unknown, kinds: string[]): boolean {
  if (Array.isArray(nodes)) return nodes.some((n) => containsKind(n, kinds));
  if (!nodes || typeof nodes !== 'object') return false;
  const n = nodes as { k?: string };
  if (n.k && kinds.includes(n.k)) return true;
  for (const [key, v] of Object.entries(n)) if (key !== 'k' && key !== 'line' && v && typeof v === 'object' && containsKind(v, kinds)) return true;
  return false;
}

/** Does the subtree reference `name` (not descending into nested macros)? */
function references(nodes: unknown, name: string): boolean {
  if (Array.isArray(nodes)) return nodes.some((n) => references(n, name));
  if (!nodes || typeof nodes !== 'object') return false;
  const n = nodes as { k?: string; name?: string };
  if (n.k === 'Name' && n.name === name) return true;
  if (n.k === 'Macro') return false;
  for (const [key, v] of Object.entries(n)) if (key !== 'k' && key !== 'line' && v && typeof v === 'object' && references(v, name)) return true;
  return false;
}

function ctxLookup(r: RenderState, name: string): unknown {
  const ctx = r.ctx;
  if (ctx !== null) {
    if (ctx instanceof Map) {
      if (ctx.has(name)) return ctx.get(name) ?? null;
    } else if (Object.hasOwn(ctx, name)) {
      const v = (ctx as Record<string, unknown>)[name];
      return v === undefined ? null : v;
    }
  }
  const g = r.globals;
  if (g.has(name)) return g.get(name);
  return new Undefined(name);
}

/** Shared empty argument pair: builtin filters never mutate their args array. */
const NO_ARGS: [unknown[], KwMap] = [[], null];

// Plain loops instead of Array#map: no per-call closure allocation on the hot path.
function evalAll(evs: Ev[], r: RenderState, f: Frame): unknown[] {
  const out = new Array(evs.length);
  for (let i = 0; i < evs.length; i++) out[i] = evs[i](r, f);
  return out;
}

/** `obj.attr`, with the hot cases inline: own data of a plain object; loop.*. */
function attrOf(o: unknown, attr: string): unknown {
  if (typeof o === 'object' && o !== null) {
    if (isPlainObject(o)) {
      if (Object.hasOwn(o, attr)) {
        const v = (o as Record<string, unknown>)[attr];
        return v === undefined ? null : v;
      }
    } else if (o instanceof LoopContext) {
      const v = o.pyGetAttr(attr);
      if (v !== MISSING) return v;
    }
  }
  return getattr(o, attr);
}

/** The plain `loop.*` values, read without the attribute switch. */
const LOOP_GETTERS = new Map<string, (l: LoopContext) => unknown>([
  ['index', (l) => l.index0 + 1],
  ['index0', (l) => l.index0],
  ['first', (l) => l.index0 === 0],
  ['last', (l) => l.index0 === l.items.length - 1],
  ['length', (l) => l.items.length],
  ['revindex', (l) => l.items.length - l.index0],
  ['revindex0', (l) => l.items.length - l.index0 - 1],
]);

export function toOutput(r: RenderState, v: unknown): string {
  if (typeof v === 'string') return r.autoescape ? escapeHtml(v) : v;
  if (v instanceof Markup) return v.s;
  const s = pyStr(v);
  return r.autoescape ? escapeHtml(s) : s;
}

export class Compiler {
  /**
   * Inside if/elif/else and conditional expressions Jinja2 reports unknown filters/tests
   * only when they are executed ("soft" frames); everywhere else at compile time.
   */
  private soft = false;

  constructor(private readonly env: CompileEnv) {}

  private withSoft<T>(soft: boolean, fn: () => T): T {
    const saved = this.soft;
    this.soft = soft;
    try {
      return fn();
    } finally {
      this.soft = saved;
    }
  }

  compileTemplate(body: Stmt[]): Compiled {
    const scope = new Scope(null);
    const stores = new Set<string>();
    collectStores(body, stores);
    for (const n of stores) scope.declare(n);
    scope.analyze(body, stores);
    const root = this.block(body, scope);
    return { root, frameTemplate: scope.template() };
  }

  // ---------- statements ----------

  private block(stmts: Stmt[], scope: Scope): Ex {
    // Runs of text and {{ }} become one closure that builds the piece and writes once.
    const parts: Ex[] = [];
    for (let i = 0; i < stmts.length; ) {
      let j = i;
      while (j < stmts.length && (stmts[j].k === 'Data' || stmts[j].k === 'Output')) j++;
      if (j - i >= 2) {
        parts.push(this.outputRun(stmts.slice(i, j) as Extract<Stmt, { k: 'Data' | 'Output' }>[], scope));
        i = j;
      } else {
        parts.push(this.stmt(stmts[i], scope));
        i++;
      }
    }
    // merge adjacent constant writes? keep simple: specialise small bodies
    switch (parts.length) {
      case 0:
        return () => {};
      case 1:
        return parts[0];
      case 2: {
        const [a, b] = parts;
        return (r, f) => {
          a(r, f);
          b(r, f);
        };
      }
      default:
        return (r, f) => {
          for (let i = 0; i < parts.length; i++) parts[i](r, f);
        };
    }
  }

  private outputRun(run: Extract<Stmt, { k: 'Data' | 'Output' }>[], scope: Scope): Ex {
    // Constant pieces are merged: the run becomes text, expr, text, expr, ..., text.
    // Constant {{ 'x' }} is escaped under autoescape, template text never is: two text tables.
    const plain: string[] = [''];
    const escaped: string[] = [''];
    const evs: Ev[] = [];
    for (const s of run) {
      const last = plain.length - 1;
      if (s.k === 'Data') {
        plain[last] += s.text;
        escaped[last] += s.text;
      } else if (s.node.k === 'Const' && typeof s.node.value === 'string') {
        plain[last] += s.node.value;
        escaped[last] += escapeHtml(s.node.value);
      } else {
        evs.push(this.expr(s.node, scope));
        plain.push('');
        escaped.push('');
      }
    }
    const n = evs.length;
    return (r, f) => {
      const esc = r.autoescape;
      const texts = esc ? escaped : plain;
      const max = r.limits.maxOutputSize;
      let out = texts[0];
      for (let i = 0; i < n; i++) {
        const v = evs[i](r, f);
        out += typeof v === 'string' && !esc ? v : toOutput(r, v);
        if (out.length > max) r.outputExceeded();
        out += texts[i + 1];
      }
      r.write(out);
    };
  }

  /** A body run in a fresh child scope; returns the compiled body and a factory for its frames. */
  private childScope(stmts: Stmt[], parent: Scope, pre: string[] = []): { scope: Scope; body: () => Ex } {
    const scope = new Scope(parent);
    for (const n of pre) scope.declare(n);
    const stores = new Set<string>();
    collectStores(stmts, stores);
    for (const n of stores) scope.declare(n);
    for (const n of pre) stores.delete(n);
    scope.analyze(stmts, stores);
    return { scope, body: () => this.withSoft(false, () => this.block(stmts, scope)) };
  }

  private stmt(s: Stmt, scope: Scope): Ex {
    switch (s.k) {
      case 'Data': {
        const text = s.text;
        return (r) => r.write(text);
      }
      case 'Output': {
        const node = s.node;
        if (node.k === 'Const' && typeof node.value === 'string') {
          const text = node.value;
          return (r) => r.write(r.autoescape ? escapeHtml(text) : text);
        }
        const ev = this.expr(node, scope);
        return (r, f) => {
          const v = ev(r, f);
          r.write(typeof v === 'string' && !r.autoescape ? v : toOutput(r, v));
        };
      }
      case 'If': {
        const [test, body, else_] = this.withSoft(true, () => [
          this.expr(s.test, scope),
          this.block(s.body, scope),
          this.block(s.else_, scope),
        ] as const);
        return (r, f) => {
          if (truthy(test(r, f))) body(r, f);
          else else_(r, f);
        };
      }
      case 'For':
        return this.forLoop(s, scope);
      case 'Assign': {
        const ev = this.expr(s.node, scope);
        const store = this.assignTarget(s.target, scope);
        return (r, f) => store(r, f, ev(r, f));
      }
      case 'AssignBlock': {
        const { scope: inner, body } = this.childScope(s.body, scope);
        const bodyEx = body();
        const tpl = inner.template();
        const filter = s.filter ? this.filterChain(s.filter, inner) : null;
        const store = this.assignTarget(s.target, scope);
        return (r, f) => {
          const fr = new Frame(tpl.slice(), f);
          const saved = r.out;
          r.out = '';
          let captured: unknown;
          try {
            bodyEx(r, fr);
            captured = r.autoescape ? new Markup(r.out) : r.out;
          } finally {
            r.out = saved;
          }
          if (filter) captured = filter(r, fr, captured);
          store(r, f, captured);
        };
      }
      case 'With': {
        const values = s.values.map((v) => this.expr(v, scope));
        const names = new Set<string>();
        for (const t of s.targets) targetNames(t, names);
        const { scope: inner, body } = this.childScope(s.body, scope, [...names]);
        const stores = s.targets.map((t) => this.assignTarget(t, inner));
        const bodyEx = body();
        const tpl = inner.template();
        return (r, f) => {
          const vals = values.map((v) => v(r, f));
          const fr = new Frame(tpl.slice(), f);
          for (let i = 0; i < stores.length; i++) stores[i](r, fr, vals[i]);
          bodyEx(r, fr);
        };
      }
      case 'Macro': {
        const def = this.macroDef(s.name, s.params, s.defaults, s.body, scope);
        const slot = scope.declare(s.name);
        return (r, f) => {
          f.vals[slot] = new Macro(def, f, r.autoescape);
        };
      }
      case 'CallBlock': {
        const def = this.macroDef('caller', s.params, s.defaults, s.body, scope);
        const call = this.call(s.call, scope, def);
        return (r, f) => {
          const v = call(r, f);
          r.write(toOutput(r, v));
        };
      }
      case 'FilterBlock': {
        const { scope: inner, body } = this.childScope(s.body, scope);
        const bodyEx = body();
        const tpl = inner.template();
        const filter = this.filterChain(s.filter, inner);
        return (r, f) => {
          const fr = new Frame(tpl.slice(), f);
          const saved = r.out;
          r.out = '';
          let captured: string;
          try {
            bodyEx(r, fr);
            captured = r.out;
          } finally {
            r.out = saved;
          }
          r.write(toOutput(r, filter(r, fr, r.autoescape ? new Markup(captured) : captured)));
        };
      }
      case 'Block': {
        const { scope: inner, body } = this.childScope(s.body, scope);
        const bodyEx = body();
        const tpl = inner.template();
        return (r, f) => bodyEx(r, new Frame(tpl.slice(), f));
      }
      case 'Autoescape': {
        const value = this.expr(s.value, scope);
        const body = this.block(s.body, scope);
        return (r, f) => {
          const saved = r.autoescape;
          r.autoescape = truthy(value(r, f));
          try {
            body(r, f);
          } finally {
            r.autoescape = saved;
          }
        };
      }
      case 'Unsupported': {
        const what = s.what;
        return () => {
          throw new TemplateRuntimeError(`no loader for this environment specified ({% ${what} %} is not supported)`);
        };
      }
    }
  }

  private macroDef(name: string, params: string[], defaults: Expr[], body: Stmt[], scope: Scope): MacroDef {
    const special = ['varargs', 'kwargs', 'caller'].filter((n) => !params.includes(n) && references(body, n));
    const { scope: inner, body: mk } = this.childScope(body, scope, [...params, ...special]);
    const defaultEvs = this.withSoft(false, () => defaults.map((d) => this.expr(d, inner)));
    const bodyEx = mk();
    return {
      name,
      params,
      defaults: defaultEvs,
      body: bodyEx,
      frameTemplate: inner.template(),
      paramSlots: params.map((p) => inner.names.get(p)!),
      varargsSlot: special.includes('varargs') ? inner.names.get('varargs')! : -1,
      kwargsSlot: special.includes('kwargs') ? inner.names.get('kwargs')! : -1,
      callerSlot: special.includes('caller') || params.includes('caller') ? inner.names.get('caller')! : -1,
    };
  }

  private forLoop(s: Extract<Stmt, { k: 'For' }>, scope: Scope): Ex {
    const iter = this.expr(s.iter, scope);
    const names = new Set<string>();
    targetNames(s.target, names);
    const usesLoop = references([s.body, s.test], 'loop') || s.recursive;
    const pre = [...names];
    if (usesLoop) pre.push('loop');
    const { scope: inner, body } = this.childScope(s.body, scope, pre);
    const store = this.assignTarget(s.target, inner);
    const targetSlot = s.target.k === 'Name' ? inner.names.get(s.target.name)! : -1;
    const test = s.test ? this.withSoft(false, () => this.expr(s.test!, inner)) : null;
    const bodyEx = body();
    const tpl = inner.template();
    const loopSlot = usesLoop ? inner.names.get('loop')! : -1;
    // A fresh frame per iteration only matters when the body assigns names or creates closures
    // (set/macro/call blocks); otherwise every slot is overwritten each iteration and one frame is enough.
    const reuseFrame = inner.names.size === pre.length && !containsKind(s.body, ['CallBlock', 'Macro', 'Assign', 'AssignBlock']);
    const { scope: elseScope, body: elseBody } = this.childScope(s.else_, scope);
    const elseEx = s.else_.length ? elseBody() : null;
    const elseTpl = elseScope.template();
    const recursive = s.recursive;

    const run = (r: RenderState, f: Frame, seq: unknown, depth0: number): boolean => {
      let items = toList(seq);
      if (test) {
        const tf = new Frame(tpl.slice(), f);
        const kept: unknown[] = [];
        for (const item of items) {
          r.loopTick();
          store(r, tf, item);
          if (truthy(test(r, tf))) kept.push(item);
        }
        items = kept;
      }
      const n = items.length;
      if (n === 0) return false;
      const loop = usesLoop ? new LoopContext(items, depth0, recursive ? recurse(f) : null) : null;
      const shared = reuseFrame ? new Frame(tpl.slice(), f) : null;
      for (let i = 0; i < n; i++) {
        r.loopTick();
        const fr = shared ?? new Frame(tpl.slice(), f);
        if (targetSlot >= 0) fr.vals[targetSlot] = items[i];
        else store(r, fr, items[i]);
        if (loop) {
          loop.index0 = i;
          fr.vals[loopSlot] = loop;
        }
        bodyEx(r, fr);
      }
      return true;
    };
    const recurse =
      (f: Frame) =>
      (r: RenderState, seq: unknown, depth0: number): string => {
        r.enter();
        const saved = r.out;
        r.out = '';
        try {
          run(r, f, seq, depth0);
          return r.out;
        } finally {
          r.out = saved;
          r.leave();
        }
      };
    return (r, f) => {
      const seq = iter(r, f);
      const any = run(r, f, seq, 0);
      if (!any && elseEx) elseEx(r, new Frame(elseTpl.slice(), f));
    };
  }

  private assignTarget(t: Expr, scope: Scope): (r: RenderState, f: Frame, v: unknown) => void {
    if (t.k === 'Name') {
      const slot = scope.declare(t.name);
      return (r, f, v) => {
        f.vals[slot] = v;
      };
    }
    if (t.k === 'Tuple') {
      const subs = t.items.map((i) => this.assignTarget(i, scope));
      const n = subs.length;
      return (r, f, v) => {
        const items = toList(v);
        if (items.length !== n) {
          if (items.length > n) throw pyError('ValueError', `too many values to unpack (expected ${n})`);
          throw pyError('ValueError', `not enough values to unpack (expected ${n}, got ${items.length})`);
        }
        for (let i = 0; i < n; i++) subs[i](r, f, items[i]);
      };
    }
    if (t.k === 'NSRef') {
      const load = this.name(t.name, scope);
      const attr = t.attr;
      return (r, f, v) => {
        const ns = load(r, f);
        if (!(ns instanceof Namespace)) throw new TemplateRuntimeError('cannot assign attribute on non-namespace object');
        ns.attrs.set(attr, v);
      };
    }
    throw new TemplateSyntaxError(`can't assign to '${t.k}'`, t.line);
  }

  // ---------- expressions ----------

  private name(name: string, scope: Scope): Ev {
    const path: [number, number][] = [];
    let d = 0;
    for (let s: Scope | null = scope; s; s = s.parent, d++) {
      const slot = s.names.get(name);
      if (slot !== undefined) path.push([d, slot]);
    }
    if (path.length === 0) return (r) => ctxLookup(r, name);
    if (path.length === 1) {
      const [depth, slot] = path[0];
      if (depth === 0)
        return (r, f) => {
          const v = f.vals[slot];
          return v === MISSING ? ctxLookup(r, name) : v === UNDEF_INIT ? new Undefined(name) : v;
        };
      if (depth === 1)
        return (r, f) => {
          const v = f.parent!.vals[slot];
          return v === MISSING ? ctxLookup(r, name) : v === UNDEF_INIT ? new Undefined(name) : v;
        };
    }
    return (r, f) => {
      let fr = f;
      let at = 0;
      for (const [depth, slot] of path) {
        while (at < depth) {
          fr = fr.parent!;
          at++;
        }
        const v = fr.vals[slot];
        if (v !== MISSING) return v === UNDEF_INIT ? new Undefined(name) : v;
      }
      return ctxLookup(r, name);
    };
  }

  /** Slot of a name that resolves only to the innermost scope, else -1. */
  private localSlot(name: string, scope: Scope): number {
    const slot = scope.names.get(name);
    if (slot === undefined) return -1;
    for (let s = scope.parent; s; s = s.parent) if (s.names.has(name)) return -1;
    return slot;
  }

  expr(e: Expr, scope: Scope): Ev {
    switch (e.k) {
      case 'Const': {
        const v = e.value;
        if (v !== null && typeof v === 'object' && 'float' in (v as object)) {
          const fv = mkFloat((v as { float: number }).float);
          return () => fv;
        }
        return () => v;
      }
      case 'Name':
        return this.name(e.name, scope);
      case 'NSRef':
        throw new TemplateSyntaxError('namespace reference is only valid as an assignment target', e.line);
      case 'List': {
        const items = e.items.map((i) => this.expr(i, scope));
        return (r, f) => evalAll(items, r, f);
      }
      case 'Tuple': {
        const items = e.items.map((i) => this.expr(i, scope));
        return (r, f) => markTuple(evalAll(items, r, f));
      }
      case 'Dict': {
        const pairs = e.pairs.map(([k, v]) => [this.expr(k, scope), this.expr(v, scope)] as const);
        return (r, f) => {
          const m = new Map<unknown, unknown>();
          for (const [k, v] of pairs) dictSet(m, k(r, f), v(r, f));
          return m;
        };
      }
      case 'Getattr': {
        const attr = e.attr;
        if (DICT_METHODS.has(attr)) {
          const obj = this.expr(e.obj, scope);
          return (r, f) => getattr(obj(r, f), attr);
        }
        const obj = this.expr(e.obj, scope);
        const loopGet = e.obj.k === 'Name' && e.obj.name === 'loop' ? LOOP_GETTERS.get(attr) : undefined;
        if (loopGet)
          return (r, f) => {
            const o = obj(r, f);
            return o instanceof LoopContext ? loopGet(o) : attrOf(o, attr);
          };
        const slot = e.obj.k === 'Name' ? this.localSlot(e.obj.name, scope) : -1;
        if (slot >= 0)
          // `item.attr` on a loop variable / local: read the slot directly (one closure call less)
          return (r, f) => {
            const o = f.vals[slot];
            return attrOf(o === MISSING || o === UNDEF_INIT ? obj(r, f) : o, attr);
          };
        return (r, f) => attrOf(obj(r, f), attr);
      }
      case 'Getitem': {
        const obj = this.expr(e.obj, scope);
        if (e.arg.k === 'Slice') {
          const sl = e.arg;
          const start = sl.start ? this.expr(sl.start, scope) : null;
          const stop = sl.stop ? this.expr(sl.stop, scope) : null;
          const step = sl.step ? this.expr(sl.step, scope) : null;
          return (r, f) => {
            const o = obj(r, f);
            if (o instanceof Undefined) o.fail();
            if (o instanceof PyRange) {
              const [b, en, st] = ops.sliceIndices(o.length, start ? start(r, f) : null, stop ? stop(r, f) : null, step ? step(r, f) : null);
              return new PyRange(o.start + b * o.step, o.start + en * o.step, o.step * st);
            }
            const res = ops.sliceSeq(r, o, start ? start(r, f) : null, stop ? stop(r, f) : null, step ? step(r, f) : null);
            return res === MISSING ? new Undefined('slice', o) : res;
          };
        }
        const arg = this.expr(e.arg, scope);
        return (r, f) => getitem(obj(r, f), arg(r, f));
      }
      case 'Slice':
        throw new TemplateSyntaxError('slice outside subscript', e.line);
      case 'Call':
        return this.call(e, scope, null);
      case 'Filter':
        return this.filter(e, scope);
      case 'Test':
        return this.test(e, scope);
      case 'BinOp': {
        const a = this.expr(e.left, scope);
        const b = this.expr(e.right, scope);
        switch (e.op) {
          case '+':
            return (r, f) => ops.add(r, a(r, f), b(r, f));
          case '-':
            return (r, f) => ops.sub(a(r, f), b(r, f));
          case '*':
            return (r, f) => ops.mul(r, a(r, f), b(r, f));
          case '/':
            return (r, f) => ops.truediv(a(r, f), b(r, f));
          case '//':
            return (r, f) => ops.floordiv(a(r, f), b(r, f));
          case '%':
            return (r, f) => ops.mod(r, a(r, f), b(r, f));
          case '**':
            return (r, f) => ops.pow(a(r, f), b(r, f));
        }
        throw new TemplateSyntaxError(`unknown operator ${e.op}`, e.line);
      }
      case 'Unary': {
        const a = this.expr(e.node, scope);
        if (e.op === 'not') return (r, f) => !truthy(a(r, f));
        if (e.op === '-') return (r, f) => ops.neg(a(r, f));
        return (r, f) => ops.pos(a(r, f));
      }
      case 'Concat': {
        const parts = e.nodes.map((n) => this.expr(n, scope));
        return (r, f) => {
          let s = '';
          let longest = 0;
          for (const p of parts) {
            const v = p(r, f);
            const t = typeof v === 'string' ? v : pyStr(v);
            if (t.length > longest) longest = t.length;
            s += t;
          }
          r.checkSize(s.length);
          // V8 joins strings as ropes: the new memory is what was added to the longest part
          r.grow(s.length - longest);
          return s;
        };
      }
      case 'Compare': {
        const first = this.expr(e.expr, scope);
        const rest = e.ops.map(([op, x]) => [op, this.expr(x, scope)] as const);
        if (rest.length === 1) {
          const [op, b] = rest[0];
          return (r, f) => ops.compare(op, first(r, f), b(r, f));
        }
        return (r, f) => {
          let left = first(r, f);
          for (const [op, x] of rest) {
            const right = x(r, f);
            if (!ops.compare(op, left, right)) return false;
            left = right;
          }
          return true;
        };
      }
      case 'And': {
        const a = this.expr(e.left, scope);
        const b = this.expr(e.right, scope);
        return (r, f) => {
          const v = a(r, f);
          return truthy(v) ? b(r, f) : v;
        };
      }
      case 'Or': {
        const a = this.expr(e.left, scope);
        const b = this.expr(e.right, scope);
        return (r, f) => {
          const v = a(r, f);
          return truthy(v) ? v : b(r, f);
        };
      }
      case 'CondExpr': {
        const [test, a, b] = this.withSoft(true, () => [
          this.expr(e.test, scope),
          this.expr(e.expr1, scope),
          e.expr2 ? this.expr(e.expr2, scope) : null,
        ] as const);
        if (b)
          return (r, f) => {
            if (truthy(test(r, f))) return a(r, f);
            return b(r, f);
          };
        const hint = `the inline if-expression on line ${e.line} evaluated to false and no else section was defined.`;
        return (r, f) => {
          if (truthy(test(r, f))) return a(r, f);
          return new Undefined(MISSING, MISSING, hint);
        };
      }
    }
  }

  /** Compiled positional/keyword arguments including *args and **kwargs. */
  private args(a: CallArgs, scope: Scope): (r: RenderState, f: Frame) => [unknown[], KwMap] {
    const pos = a.args.map((x) => this.expr(x, scope));
    const kws = a.kwargs.map(([k, x]) => [k, this.expr(x, scope)] as const);
    const dyn = a.dynArgs ? this.expr(a.dynArgs, scope) : null;
    const dynKw = a.dynKwargs ? this.expr(a.dynKwargs, scope) : null;
    if (!dyn && !dynKw && kws.length === 0) {
      if (pos.length === 0) return () => NO_ARGS;
      if (pos.length === 1) {
        const p0 = pos[0];
        return (r, f) => [[p0(r, f)], null];
      }
      return (r, f) => [evalAll(pos, r, f), null];
    }
    return (r, f) => {
      const args = evalAll(pos, r, f);
      if (dyn) for (const x of toList(dyn(r, f))) args.push(x);
      let kw: KwMap = null;
      if (kws.length || dynKw) {
        kw = new Map();
        for (const [k, x] of kws) kw.set(k, x(r, f));
        if (dynKw) {
          const d = dynKw(r, f);
          if (!isDict(d)) throw pyError('TypeError', 'argument after ** must be a mapping');
          for (const k of dictKeys(d)) {
            if (typeof k !== 'string') throw pyError('TypeError', 'keywords must be strings');
            if (kw.has(k)) throw pyError('TypeError', `got multiple values for keyword argument '${k}'`);
            kw.set(k, dictGet(d, k));
          }
        }
      }
      return [args, kw];
    };
  }

  private call(e: Extract<Expr, { k: 'Call' }>, scope: Scope, callerDef: MacroDef | null): Ev {
    const argsEv = this.args(e, scope);
    const withCaller = (r: RenderState, f: Frame): [unknown[], KwMap] => {
      const [args, kw0] = argsEv(r, f);
      if (!callerDef) return [args, kw0];
      const kw = kw0 ?? new Map();
      kw.set('caller', new Macro(callerDef, f, r.autoescape));
      return [args, kw];
    };
    if (e.fn.k === 'Getattr') {
      // method call: look the Python method up directly instead of creating a bound method
      const obj = this.expr(e.fn.obj, scope);
      const attr = e.fn.attr;
      const strM = STR_METHODS.get(attr);
      const listM = LIST_METHODS.get(attr) ?? SEQ_METHODS.get(attr);
      const dictM = DICT_METHODS.get(attr);
      return (r, f) => {
        const o = obj(r, f);
        const [args, kw] = withCaller(r, f);
        if (typeof o === 'string' && strM) {
          r.work(o);
          return r.made(o, strM(r, o, args, kw));
        }
        if (dictM && (o instanceof Map || isPlainObject(o))) return r.made(o, dictM(r, o, args, kw));
        if (listM && Array.isArray(o) && (!isTuple(o) || SEQ_METHODS.has(attr))) {
          r.work(o);
          return r.made(o, listM(r, o, args, kw));
        }
        return callValue(r, getattr(o, attr), args, kw);
      };
    }
    const fn = this.expr(e.fn, scope);
    return (r, f) => {
      const fv = fn(r, f);
      const [args, kw] = withCaller(r, f);
      return callValue(r, fv, args, kw);
    };
  }

  /** Missing filter/test: compile error, or in a soft frame an error when executed. */
  private missing(kind: 'filter' | 'test', name: string, line: number): FilterFn {
    if (!this.soft) throw new TemplateSyntaxError(`No ${kind} named '${name}'.`, line);
    return () => {
      throw new TemplateRuntimeError(`No ${kind} named '${name}' found.`);
    };
  }

  private filter(e: FilterExpr, scope: Scope): Ev {
    const fn = this.env.filters.get(e.name) ?? this.missing('filter', e.name, e.line);
    const value = e.node ? this.expr(e.node, scope) : () => null;
    if (!e.dynArgs && !e.dynKwargs && e.kwargs.length === 0) {
      const pos = e.args.map((x) => this.expr(x, scope));
      if (fn === stringFilters.format && e.node?.k === 'Const' && typeof e.node.value === 'string' && pos.length > 0) {
        // '%.1f'|format(x): the builtin with a constant format string is printf on the arguments
        if (pos.length === 1) {
          const fmt1 = compilePrintf1(e.node.value);
          const p0 = pos[0];
          return (r, f) => {
            const x = p0(r, f);
            r.tick();
            return r.made(x, fmt1(r, x));
          };
        }
        const fmt = compilePrintf(e.node.value);
        return (r, f) => {
          const args = evalAll(pos, r, f);
          r.tick();
          return r.made(args, fmt(r, args));
        };
      }
      if (pos.length === 0)
        return (r, f) => {
          const v = value(r, f);
          r.tick();
          r.work(v);
          return r.made(v, fn(r, v, NO_ARGS[0], null));
        };
      return (r, f) => {
        const v = value(r, f);
        const args = evalAll(pos, r, f);
        r.tick();
        r.work(v);
        return r.made(v, fn(r, v, args, null));
      };
    }
    const argsEv = this.args(e, scope);
    return (r, f) => {
      const v = value(r, f);
      const [args, kw] = argsEv(r, f);
      r.tick();
      r.work(v);
      return r.made(v, fn(r, v, args, kw));
    };
  }

  /** `{% filter a|b %}` / `{% set x | a %}`: apply a chain to a captured string. */
  private filterChain(e: FilterExpr, scope: Scope): (r: RenderState, f: Frame, v: unknown) => unknown {
    const chain: FilterExpr[] = [];
    for (let cur: Expr | null = e; cur && cur.k === 'Filter'; cur = cur.node) chain.unshift(cur);
    const steps = chain.map((c) => {
      const fn = this.env.filters.get(c.name) ?? this.missing('filter', c.name, c.line);
      return [fn, this.args(c, scope)] as const;
    });
    return (r, f, v) => {
      for (const [fn, argsEv] of steps) {
        const [args, kw] = argsEv(r, f);
        r.tick();
        r.work(v);
        v = r.made(v, fn(r, v, args, kw));
      }
      return v;
    };
  }

  private test(e: Extract<Expr, { k: 'Test' }>, scope: Scope): Ev {
    const fn = (this.env.tests.get(e.name) ?? this.missing('test', e.name, e.line)) as TestFn;
    const value = this.expr(e.node, scope);
    const argsEv = this.args(e, scope);
    return (r, f) => {
      const v = value(r, f);
      const [args, kw] = argsEv(r, f);
      return fn(r, v, args, kw);
    };
  }
}
