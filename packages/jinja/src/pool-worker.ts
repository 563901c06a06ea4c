// A render worker thread (see pool.ts): compiles and renders what the pool sends, one message at a
// time, and marks the message it is working on in shared memory so that, if the thread dies (heap
// limit) or is stopped (hard time limit), the pool knows which message did it.

import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Environment, type Template } from './environment.js';
import { TemplateSyntaxError } from './errors.js';
import { parseJsonPreservingFloats } from './json.js';
import type { PoolRequest, PoolResponse, RenderError, RenderResult, SetupModule } from './pool.js';

const data = workerData as { setup?: string; setupData?: unknown; status: Int32Array; nice: number };
const port = parentPort!;

// On Linux a nice value belongs to one thread: this render thread yields the CPU to the caller's
// (the API's) thread when both want it, so a long render cannot slow the API on a busy machine.
if (data.nice > 0) {
  try {
    os.setPriority(0, data.nice);
  } catch {
    /* not permitted here: renders still run, at normal priority */
  }
}

let setupModule: SetupModule | undefined;

async function environments(): Promise<Record<string, Environment>> {
  if (!data.setup) return { default: new Environment() };
  setupModule = (await import(data.setup)) as SetupModule;
  return setupModule.environments(data.setupData);
}

const envs = await environments();
const caches = new Map<string, Map<string, Template>>();

function compile(envName: string, source: string): Template {
  const env = envs[envName];
  if (!env) throw new Error(`no template environment named ${JSON.stringify(envName)}`);
  let cache = caches.get(envName);
  if (!cache) caches.set(envName, (cache = new Map()));
  let t = cache.get(source);
  if (!t) {
    t = env.fromString(source);
    if (cache.size >= 200) cache.delete(cache.keys().next().value as string);
    cache.set(source, t);
  }
  return t;
}

function describe(err: unknown): RenderError {
  const e = err as { name?: string; message?: string; lineno?: number; kind?: string; pyClass?: string };
  return {
    name: typeof e?.name === 'string' ? e.name : 'Error',
    message: typeof e?.message === 'string' ? e.message : String(err),
    lineno: err instanceof TemplateSyntaxError ? e.lineno : undefined,
    kind: e?.kind,
    pyClass: e?.pyClass,
  };
}

function handle(m: PoolRequest): RenderResult[] {
  if (m.check) {
    try {
      compile(m.check.env, m.check.source);
      return [{ ok: true, out: '' }];
    } catch (err) {
      return [{ ok: false, error: describe(err) }];
    }
  }
  let ctx: Record<string, unknown>;
  try {
    const parsed = typeof m.context === 'string' ? (m.floats ? parseJsonPreservingFloats(m.context) : JSON.parse(m.context)) : m.context;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('context must be a JSON object');
    ctx = parsed as Record<string, unknown>;
    setupModule?.prepareContext?.(ctx);
  } catch (err) {
    const error = describe(err);
    return m.jobs!.map(() => ({ ok: false, error }));
  }
  return m.jobs!.map((job) => {
    try {
      return { ok: true, out: compile(job.env, job.source).render(ctx) };
    } catch (err) {
      return { ok: false, error: describe(err) };
    }
  });
}

port.on('message', (m: PoolRequest) => {
  Atomics.store(data.status, 0, m.id);
  const results = handle(m);
  Atomics.store(data.status, 0, 0);
  port.postMessage({ id: m.id, results } satisfies PoolResponse);
});
port.postMessage({ ready: true } satisfies PoolResponse);
