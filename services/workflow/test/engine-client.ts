import path from 'node:path';
import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { GraphBuilder, type GraphSpec } from '../src/nodes/api.ts';
import { startWorkflow, WsClient, type Msg } from './helpers.ts';

export type Server = Awaited<ReturnType<typeof startWorkflow>>;

/**
 * A Python float in a prompt: JavaScript writes `5.0` as `5`, the reference's client (json.dumps) as `5.0`,
 * and the service tells them apart as the reference does. `pyFloat(5)` is sent as `5.0`.
 */
export class PyFloat {
  constructor(readonly value: number) {}
  toJSON(): string {
    return `\u0000pyfloat:${Number.isInteger(this.value) ? this.value.toFixed(1) : String(this.value)}\u0000`;
  }
}
export const pyFloat = (v: number) => new PyFloat(v);

/** JSON text with every PyFloat written as a float literal. */
export function pyJson(body: unknown): string {
  return JSON.stringify(body).replace(/"\\u0000pyfloat:([^\\"]+)\\u0000"/g, '$1');
}

/** A refused POST /prompt (the reference client raises urllib's HTTPError). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: any,
  ) {
    super(`HTTP ${status}: ${JSON.stringify(body)}`);
  }
}

/** An execution_error message (the reference client raises with its data). */
export class ExecutionError extends Error {
  constructor(readonly data: any) {
    super(`execution_error: ${JSON.stringify(data)}`);
  }
}

export interface ImageStats {
  width: number;
  height: number;
  min: number;
  max: number;
  mean: number;
}

/** What one prompt did, as the reference's RunResult: nodes that ran, nodes cached, history outputs. */
export class RunResult {
  readonly runs = new Set<string>();
  readonly cached = new Set<string>();
  outputs: Record<string, any> = {};
  constructor(
    readonly promptId: string,
    readonly messages: Msg[],
    private readonly srv: Server,
  ) {
    for (const m of messages) {
      if (m.type === 'executing' && m.data.node !== null) this.runs.add(m.data.node);
      if (m.type === 'execution_cached') for (const n of m.data.nodes) this.cached.add(n);
    }
  }
  didRun(id: string): boolean {
    return this.runs.has(id);
  }
  wasCached(id: string): boolean {
    return this.cached.has(id);
  }
  wasExecuted(id: string): boolean {
    return this.didRun(id) || this.wasCached(id);
  }
  /** Pixel statistics of every image an output node saved (read from the data dir, as /view would serve them). */
  async images(id: string): Promise<ImageStats[]> {
    const out: ImageStats[] = [];
    for (const img of this.outputs[id]?.images ?? []) {
      const file = path.join(this.srv.cfg.dataDir, img.type, img.subfolder ?? '', img.filename);
      const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      let min = 255;
      let max = 0;
      let sum = 0;
      for (const v of data) {
        if (v < min) min = v;
        if (v > max) max = v;
        sum += v;
      }
      out.push({ width: info.width, height: info.height, min, max, mean: sum / data.length });
    }
    return out;
  }
}

/** The reference's ComfyClient: queues a graph over HTTP and follows it over the WebSocket. */
export class ComfyClient {
  readonly clientId = `engine-${randomUUID()}`;
  readonly ws: WsClient;
  testName = 'engine';

  constructor(readonly srv: Server) {
    this.ws = new WsClient(srv.url, this.clientId);
  }

  async open(): Promise<this> {
    await this.ws.opened;
    return this;
  }

  close(): void {
    this.ws.close();
  }

  async queue(prompt: GraphSpec | Record<string, unknown>, partial?: string[], extra: Record<string, unknown> = {}): Promise<{ prompt_id: string; number: number; node_errors: any }> {
    const body: Record<string, unknown> = { prompt, client_id: this.clientId, ...extra };
    if (partial !== undefined) body.partial_execution_targets = partial;
    const r = await this.srv.http.post('/prompt', pyJson(body));
    if (r.status !== 200) throw new HttpError(r.status, r.body);
    return r.body;
  }

  /** Messages of a prompt once its final `executing` (node null) arrived. */
  async wait(promptId: string): Promise<Msg[]> {
    return this.ws.promptDone(promptId);
  }

  /** Runs a graph to its end; throws HttpError when refused and ExecutionError on execution_error. */
  async run(graph: GraphBuilder | GraphSpec, partial?: string[]): Promise<RunResult> {
    const prompt = graph instanceof GraphBuilder ? graph.finalize() : graph;
    for (const node of Object.values(prompt)) if (node.class_type === 'SaveImage') node.inputs.filename_prefix = this.testName;
    const { prompt_id } = await this.queue(prompt, partial);
    return this.result(prompt_id);
  }

  async result(promptId: string, opts: { throwOnError?: boolean } = {}): Promise<RunResult> {
    const msgs = await this.wait(promptId);
    const err = msgs.find((m) => m.type === 'execution_error');
    if (err && opts.throwOnError !== false) throw new ExecutionError(err.data);
    const result = new RunResult(promptId, msgs, this.srv);
    const h = await this.srv.http.get(`/history/${promptId}`);
    result.outputs = h.body[promptId]?.outputs ?? {};
    return result;
  }
}

/** Starts a server with the test pack and the given cache policy. */
export async function startEngineServer(storage: 'sqlite' | 'postgres', cache: CacheMode = 'classic', flags: Record<string, string | boolean> = {}): Promise<Server> {
  const cacheFlags: Record<string, string | boolean> = cache === 'none' ? { cacheNone: true } : cache === 'lru' ? { cacheLru: '100' } : { cache: 'classic' };
  return startWorkflow(storage, { enableTestNodes: true, ...cacheFlags, ...flags });
}

export type CacheMode = 'classic' | 'lru' | 'none';

/** The value an 8-bit save of a float image holds (the reference truncates 255·v). */
export const byte = (v: number) => Math.floor(255 * v);

export { GraphBuilder };
