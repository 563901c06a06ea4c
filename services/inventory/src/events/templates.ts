import { RenderPool, type RenderError, type RenderResult } from '@svc/jinja';

// Loaded dynamically so the service still starts (and says why templates fail) while the engine package is incomplete.
type JinjaModule = {
  Environment: new (opts: Record<string, unknown>) => {
    addFilter(name: string, fn: (...args: any[]) => unknown): void;
    fromString(src: string): { render(ctx: Record<string, unknown>): string };
  };
  TemplateSyntaxError: new (...args: any[]) => Error & { lineno: number };
  pyStr?: (v: unknown) => string;
};
const JINJA_SPECIFIER = '@svc/jinja';
let jinja: JinjaModule | undefined;
let jinjaLoadError: string | undefined;
try {
  jinja = (await import(JINJA_SPECIFIER)) as JinjaModule;
} catch (err) {
  jinjaLoadError = `template engine @svc/jinja is not available: ${(err as Error).message}`;
}

/**
 * Webhook templates (payload_url, additional_headers, body_template) on the
 * sandboxed @svc/jinja engine, configured like NetBox's render_jinja2:
 * `env` filter always (allow-listed variables only), `header_safe` only while
 * rendering headers.
 */

export class TemplateCompileError extends Error {
  constructor(
    message: string,
    readonly lineno: number | undefined,
  ) {
    super(message);
  }
}

/** NetBox's `env` filter: os.environ[name] only when the name matches an allowed glob (fnmatchcase). */
export function envFilterFor(patterns: string[], env: NodeJS.ProcessEnv = process.env) {
  const regexes = patterns.map((p) => new RegExp('^' + p.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '[\\s\\S]*').replace(/\?/g, '[\\s\\S]') + '$'));
  return (name: unknown): string | null => {
    if (typeof name !== 'string' || !regexes.some((r) => r.test(name))) return null;
    return env[name] ?? null;
  };
}

/** NetBox's header_safe: str(value) without control characters, so a value cannot add header lines. */
export function headerSafe(value: unknown): string {
  const s = typeof value === 'string' ? value : pyStr(value);
  return s.replace(/[\x00-\x1f\x7f]/g, '');
}

function pyStr(value: unknown): string {
  if (jinja?.pyStr) return jinja.pyStr(value);
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  return String(value);
}

/** Whether Jinja would treat any of the text as syntax. */
export function isTemplate(source: string): boolean {
  return /\{[{%#]/.test(source);
}

type Compiled = { render(ctx: Record<string, unknown>): string };

export interface TemplateEngine {
  /** Throws TemplateCompileError (with the line) for syntax errors and unknown filters. */
  check(source: string, kind: 'headers' | 'other'): void;
  render(source: string, ctx: Record<string, unknown>, kind: 'headers' | 'other'): string;
}

export function createTemplateEngine(envParams: string[]): TemplateEngine {
  const make = (headers: boolean) => {
    if (!jinja) return undefined;
    const env = new jinja.Environment({});
    env.addFilter('env', envFilterFor(envParams));
    if (headers) env.addFilter('header_safe', headerSafe);
    return env;
  };
  const envs = { headers: make(true), other: make(false) };
  const caches = { headers: new Map<string, Compiled>(), other: new Map<string, Compiled>() };

  const compile = (source: string, kind: 'headers' | 'other'): Compiled => {
    const cache = caches[kind];
    const hit = cache.get(source);
    if (hit) return hit;
    let t: Compiled;
    const env = envs[kind];
    if (!env) throw new TemplateCompileError(jinjaLoadError ?? 'template engine unavailable', undefined);
    try {
      t = env.fromString(source) as Compiled;
    } catch (err) {
      const e = err as { lineno?: number; message?: string };
      if (err instanceof jinja!.TemplateSyntaxError || typeof e?.lineno === 'number') {
        throw new TemplateCompileError(`${e.message} (line ${e.lineno})`, e.lineno);
      }
      throw new TemplateCompileError(String(e?.message ?? err), undefined);
    }
    if (cache.size >= 500) cache.delete(cache.keys().next().value as string);
    cache.set(source, t);
    return t;
  };

  return {
    check(source, kind) {
      if (isTemplate(source)) compile(source, kind);
    },
    render(source, ctx, kind) {
      // Text without template syntax renders to itself, with Jinja's newline normalisation and its one dropped trailing newline.
      if (!isTemplate(source)) {
        const t = source.replace(/\r\n?/g, '\n');
        return t.endsWith('\n') ? t.slice(0, -1) : t;
      }
      return compile(source, kind).render(ctx);
    },
  };
}

/** One rendered template: its text, or why it failed (the engine's error, or a worker the render killed). */
export type Rendered = RenderResult;

export interface RenderLimits {
  /** Render worker threads. */
  workers: number;
  /** Heap limit of each render worker (MB). */
  heapMb: number;
  /** A render still running after this long stops its worker. */
  hardTimeoutMs: number;
}

/**
 * Webhook templates rendered and compiled off the API's thread, in a RenderPool of worker threads
 * with a heap limit and a hard time limit: a hostile template fails its own delivery (or its save)
 * with an error and never blocks, slows or kills the process. Text without template syntax is
 * handled here without a round trip.
 */
export class IsolatedTemplates {
  readonly pool: RenderPool;

  constructor(envParams: string[], limits: RenderLimits) {
    this.pool = new RenderPool({
      setup: new URL('./render-setup.ts', import.meta.url).href,
      setupData: { envParams },
      size: limits.workers,
      heapMb: limits.heapMb,
      hardTimeoutMs: limits.hardTimeoutMs,
    });
  }

  /** Outcomes of recent checks, so a check repeated inside a write transaction does not wait for a worker. */
  #checked = new Map<string, Promise<TemplateCompileError | null>>();

  /** Throws TemplateCompileError (with the line) for syntax errors and unknown filters. */
  async check(source: string, kind: 'headers' | 'other'): Promise<void> {
    if (!isTemplate(source)) return;
    const key = `${kind}\0${source}`;
    let p = this.#checked.get(key);
    if (!p) {
      p = this.pool.check(kind, source).then((err) =>
        err ? new TemplateCompileError(err.lineno !== undefined ? `${err.message} (line ${err.lineno})` : renderErrorText(err), err.lineno) : null,
      );
      p.catch(() => this.#checked.delete(key));
      if (this.#checked.size >= 200) this.#checked.delete(this.#checked.keys().next().value as string);
      this.#checked.set(key, p);
    }
    const err = await p;
    if (err) throw err;
  }

  /** Renders several templates against one event context (its stored JSON text), in one worker round trip. */
  async render(items: Array<{ source: string; kind: 'headers' | 'other' }>, contextJson: string): Promise<Rendered[]> {
    const out: Rendered[] = new Array(items.length);
    const jobs: Array<{ env: string; source: string }> = [];
    const where: number[] = [];
    items.forEach((it, i) => {
      if (isTemplate(it.source)) {
        jobs.push({ env: it.kind, source: it.source });
        where.push(i);
      } else out[i] = { ok: true, out: plainText(it.source) };
    });
    if (jobs.length) {
      const results = await this.pool.render(jobs, contextJson);
      results.forEach((r, j) => (out[where[j]!] = r));
    }
    return out;
  }

  /** Starts the worker threads ahead of the first render. */
  warm(): void {
    this.pool.warm();
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Text without template syntax renders to itself, with Jinja's newline normalisation and its one dropped trailing newline. */
function plainText(source: string): string {
  const t = source.replace(/\r\n?/g, '\n');
  return t.endsWith('\n') ? t.slice(0, -1) : t;
}

/** `ValueError: Exceeds the limit …`, `UndefinedError: 'x' is undefined`, as Python prints an exception. */
export function renderErrorText(e: RenderError): string {
  const name = e.pyClass ?? e.name;
  return name && name !== 'Error' ? `${name}: ${e.message}` : e.message;
}
