import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const TOKEN = '0123456789abcdef0123456789abcdef01234567';
const serviceDir = path.resolve(import.meta.dirname, '../../services/inventory');

export interface BenchServer {
  url: string;
  dataDir: string;
  child: ChildProcess;
  close(): Promise<void>;
}

/**
 * The inventory service as `npm run inventory` starts it (own process, SQLite under a temp dir unless
 * `--database-url` is among `extra`; no delivery workers unless `opts.workers`; `opts.dataDir` reuses a
 * data directory, as a restart does).
 */
export async function startInventory(extra: string[] = [], opts: { workers?: boolean; dataDir?: string; keepData?: boolean } = {}): Promise<BenchServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'inv-bench-'));
  const args = ['--import', 'tsx', 'src/main.ts', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', TOKEN, ...(opts.workers ? [] : ['--no-workers']), ...extra];
  const child = spawn(process.execPath, args, {
    cwd: serviceDir,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'error', LOG_REQUESTS: '0' },
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => reject(new Error(`inventory exited (${code}): ${out}`)));
  });
  return {
    url,
    dataDir,
    child,
    async close() {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
      if (!opts.keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function call(url: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method, headers: { authorization: `Token ${TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
