import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import WebSocket from 'ws';
import { client, startTestServer, type StorageKind, type TestServer } from '@svc/testkit';
import type { ServiceConfig } from '@svc/kernel';
import { buildApp } from '../src/app.ts';

export type Msg = { type: string; data: any };

const FIXTURES = path.join(import.meta.dirname, 'fixtures');

/** Starts the service with a fresh data dir; `packs` are fixture modules copied into custom_nodes first. */
export async function startWorkflow(
  storage: StorageKind,
  flags: Record<string, string | boolean> = {},
  opts: { packs?: string[]; overrides?: Partial<ServiceConfig> } = {},
): Promise<TestServer & { http: ReturnType<typeof client> }> {
  await bundledThreads();
  const build = (cfg: ServiceConfig) => {
    for (const p of opts.packs ?? []) installPack(cfg.dataDir, p);
    return buildApp(cfg);
  };
  const srv = await startTestServer('workflow', storage, build, { flags, ...opts.overrides });
  return Object.assign(srv, { http: client(srv.url) });
}

let threadBundle: Promise<void> | undefined;

/**
 * Execution threads start from the bundle `npm start` runs (scripts/run-service.mjs builds it, again only when a
 * source is newer than it) instead of from the sources: under tsx each thread registers a loader of its own and
 * transpiles the node registry again, about a second of CPU per server that runs a prompt, which the suite's many
 * servers paid on two shared cores. WORKFLOW_TEST_THREADS=source keeps the sources (execution-threads.test.ts does,
 * so source-entry.mjs stays tested).
 */
export function bundledThreads(): Promise<void> {
  if (process.env.WORKFLOW_TEST_THREADS === 'source') return Promise.resolve();
  return (threadBundle ??= (async () => {
    const rs = (await import(pathToFileURL(path.join(import.meta.dirname, '..', '..', '..', 'scripts', 'run-service.mjs')).href)) as {
      bundleService(name: string): Promise<string>;
      stopBundler(): Promise<void>;
      THREAD_ENTRIES: { workflow: string[] };
    };
    const out = await rs.bundleService(rs.THREAD_ENTRIES.workflow[0]!);
    await rs.stopBundler();
    (globalThis as { __workflowExecutionThread?: string }).__workflowExecutionThread = out;
  })());
}

/**
 * Puts a fixture pack into a data dir's custom_nodes: a module of the pack's name that re-exports the
 * fixture, so the fixture's own imports (./gates.mjs) resolve beside it.
 */
export function installPack(dataDir: string, file: string): void {
  fs.mkdirSync(path.join(dataDir, 'custom_nodes'), { recursive: true });
  const target = pathToFileURL(path.join(FIXTURES, file)).href;
  fs.writeFileSync(path.join(dataDir, 'custom_nodes', file), `export * from ${JSON.stringify(target)};\n`);
}

/**
 * The test's end of the gates of TestGate / TestStepGate (fixtures/gates.mjs): nodes run in execution
 * threads, so a release and a node's arrival cross a BroadcastChannel.
 */
const gateState = { released: new Set<string>(), entered: new Set<string>(), waiters: new Map<string, Array<() => void>>() };
const gateChannel: BroadcastChannel = ((globalThis as any).__wfGateTests ??= (() => {
  const c = new BroadcastChannel('wf-test-gates');
  c.unref();
  c.onmessage = (ev: { data: unknown }) => {
    const name = (ev.data as { entered?: unknown })?.entered;
    if (typeof name !== 'string') return;
    gateState.entered.add(name);
    for (const w of gateState.waiters.get(name)?.splice(0) ?? []) w();
    // Released before the node's thread was listening: it hears it now.
    if (gateState.released.has(name)) c.postMessage({ release: name });
  };
  return c;
})());

export function releaseGate(name: string): void {
  gateState.released.add(name);
  gateChannel.postMessage({ release: name });
}

/** Resolves once a TestGate node with this name has started waiting. */
export function gateEntered(name: string): Promise<void> {
  if (gateState.entered.has(name)) return Promise.resolve();
  return new Promise((r) => {
    const list = gateState.waiters.get(name) ?? [];
    list.push(r);
    gateState.waiters.set(name, list);
  });
}

export function gatePrompt(name: string): Record<string, unknown> {
  return { g: { class_type: 'TestGate', inputs: { name } } };
}

/** A WebSocket client that records every message; waits are on conditions, never on time. */
export class WsClient {
  readonly messages: Msg[] = [];
  readonly binary: Buffer[] = [];
  private waiters: Array<() => void> = [];
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  closed = false;

  constructor(url: string, clientId?: string, opts: { listen?: boolean; headers?: Record<string, string> } = {}) {
    const wsUrl = url.replace(/^http/, 'ws') + '/ws' + (clientId !== undefined ? `?clientId=${encodeURIComponent(clientId)}` : '');
    this.ws = new WebSocket(wsUrl, { headers: opts.headers });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.ws.on('close', () => {
      this.closed = true;
      this.notify();
    });
    if (opts.listen !== false) this.listen();
  }

  /** Starts recording (an SDK that subscribes only after POST /prompt answered calls this late). */
  listen(): void {
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) this.binary.push(data as Buffer);
      else this.messages.push(JSON.parse(String(data)));
      this.notify();
    });
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until `pred` holds over the recorded messages (the test runner's timeout bounds it). */
  async until<T>(pred: (msgs: Msg[]) => T | undefined | false): Promise<T> {
    for (;;) {
      const r = pred(this.messages);
      if (r) return r;
      if (this.closed) throw new Error(`socket closed before the condition held; got ${JSON.stringify(this.messages.map((m) => m.type))}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Messages of one prompt, from execution_start up to its final `executing` with node null. */
  async promptDone(promptId: string): Promise<Msg[]> {
    await this.until((ms) => ms.some((m) => m.type === 'executing' && m.data.node === null && m.data.prompt_id === promptId));
    return this.messages.filter((m) => m.data?.prompt_id === promptId);
  }

  send(obj: unknown): void {
    this.ws.send(JSON.stringify(obj));
  }

  close(): void {
    this.ws.terminate();
  }
}

/**
 * The pause before a poll's next request: the next turn of the event loop at first, then growing to 20 ms. Polled in
 * a tight loop, the server answered hundreds of requests a second, a core busy with them while the prompt waited for
 * ran on the other; a job that ends at once is still seen at once.
 */
export function pollPause(attempt: number): Promise<void> {
  return new Promise((res) => (attempt < 8 ? setImmediate(res) : setTimeout(res, Math.min(20, attempt - 7))));
}

/** Polls the job until it is finished (for tests that do not hold a socket). */
export async function waitJob(http: ReturnType<typeof client>, id: string): Promise<any> {
  for (let attempt = 0; ; attempt++) {
    const r = await http.get(`/api/jobs/${id}`);
    if (r.status === 200 && ['completed', 'failed', 'cancelled'].includes(r.body.status)) return r.body;
    await pollPause(attempt);
  }
}

/** A prompt of primitives and a PreviewAny output. */
export function textPrompt(value: string): Record<string, unknown> {
  return {
    '1': { class_type: 'PrimitiveString', inputs: { value } },
    '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
  };
}

/** A chain of n nodes ending in an output. */
export function chainPrompt(n: number, seed = 'x'): Record<string, unknown> {
  const p: Record<string, any> = { '0': { class_type: 'PrimitiveString', inputs: { value: seed } } };
  for (let i = 1; i < n; i++) p[String(i)] = { class_type: 'StringLength', inputs: { string: [String(i - 1), 0] } };
  for (let i = 1; i < n; i++) {
    p[String(i)] = i % 2 === 1 ? { class_type: 'StringConcatenate', inputs: { string_a: [String(i - 1), 0], string_b: '', delimiter: '' } } : { class_type: 'StringTrim', inputs: { string: [String(i - 1), 0], mode: 'Both' } };
  }
  p.out = { class_type: 'PreviewAny', inputs: { source: [String(n - 1), 0] } };
  return p;
}
