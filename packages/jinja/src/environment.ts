// Environment / Template: Jinja2's API shape.

import { Compiler, toOutput, type Compiled, type FilterFn, type TestFn } from './compiler.js';
import { LimitExceededError, TemplateError, TemplateRuntimeError } from './errors.js';
import { makeFilters } from './filters/index.js';
import { makeGlobals } from './globals.js';
import { tokenize } from './lexer.js';
import { parse } from './parser.js';
import { Frame } from './runtime/objects.js';
import { DEFAULT_LIMITS, RenderState, type Limits } from './runtime/state.js';
import { Kwargs, forgetPlainObject, type KwMap } from './runtime/values.js';
import { makeTests } from './tests.js';

export interface EnvironmentOptions {
  trimBlocks?: boolean;
  lstripBlocks?: boolean;
  keepTrailingNewline?: boolean;
  /** Start templates in autoescape mode (Jinja2's autoescape=True). Default false, like NetBox. */
  autoescape?: boolean;
  limits?: Partial<Limits>;
}

/** Host filter: receives the value and positional arguments; keyword arguments arrive as a trailing Kwargs. */
export type HostFilter = (value: unknown, ...args: unknown[]) => unknown;
export type HostTest = (value: unknown, ...args: unknown[]) => unknown;

function wrapHost(fn: (...a: unknown[]) => unknown): FilterFn {
  return (r, v, args, kw: KwMap) => {
    const res = kw && kw.size ? fn(v, ...args, new Kwargs(kw)) : fn(v, ...args);
    return res === undefined ? null : res;
  };
}

export class Environment {
  readonly trimBlocks: boolean;
  readonly lstripBlocks: boolean;
  readonly keepTrailingNewline: boolean;
  readonly autoescape: boolean;
  readonly limits: Limits;
  readonly filters = new Map<string, FilterFn>();
  readonly tests = new Map<string, TestFn>();
  readonly globals: Map<string, unknown>;

  constructor(options: EnvironmentOptions = {}) {
    this.trimBlocks = options.trimBlocks ?? false;
    this.lstripBlocks = options.lstripBlocks ?? false;
    this.keepTrailingNewline = options.keepTrailingNewline ?? false;
    this.autoescape = options.autoescape ?? false;
    this.limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
    for (const [k, v] of Object.entries(makeFilters(this))) this.filters.set(k, v);
    for (const [k, v] of Object.entries(makeTests(this))) this.tests.set(k, v);
    this.globals = makeGlobals();
  }

  addFilter(name: string, fn: HostFilter): this {
    this.filters.set(name, wrapHost(fn as (...a: unknown[]) => unknown));
    return this;
  }

  addTest(name: string, fn: HostTest): this {
    const w = wrapHost(fn as (...a: unknown[]) => unknown);
    this.tests.set(name, (r, v, a, kw) => Boolean(w(r, v, a, kw)));
    return this;
  }

  addGlobal(name: string, value: unknown): this {
    this.globals.set(name, value);
    return this;
  }

  /** Compile a template; throws TemplateSyntaxError (with .lineno) for malformed source. */
  fromString(source: string): Template {
    const tokens = tokenize(source, {
      trimBlocks: this.trimBlocks,
      lstripBlocks: this.lstripBlocks,
      keepTrailingNewline: this.keepTrailingNewline,
    });
    const ast = parse(tokens);
    const compiled = new Compiler(this).compileTemplate(ast);
    return new Template(this, compiled);
  }
}

export class Template {
  constructor(
    readonly environment: Environment,
    private readonly compiled: Compiled,
  ) {}

  /** Render with the given context (plain object or Map). Throws a TemplateRuntimeError subclass on failure. */
  render(context: Record<string, unknown> | Map<string, unknown> = {}): string {
    const env = this.environment;
    const r = new RenderState(env.limits, env);
    r.ctx = context;
    r.globals = env.globals;
    r.autoescape = env.autoescape;
    try {
      this.compiled.root(r, new Frame(this.compiled.frameTemplate.slice(), null));
    } catch (err) {
      throw normalizeError(err);
    } finally {
      forgetPlainObject();
    }
    return r.out;
  }
}

/** JS engine failures must not leak as host errors: stack overflow becomes a recursion limit, bugs a runtime error. */
function normalizeError(err: unknown): unknown {
  if (err instanceof TemplateError) return err;
  if (err instanceof RangeError && /call stack/i.test(err.message))
    return new LimitExceededError('recursion', 'maximum recursion depth exceeded');
  const e = new TemplateRuntimeError(err instanceof Error ? err.message : String(err));
  (e as { cause?: unknown }).cause = err;
  return e;
}

export { toOutput };
