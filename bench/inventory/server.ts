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

/** The inventory service as `npm run inventory` starts it (own process, SQLite under a temp dir, no workers). */
export async function startInventory(extra: string[] = []): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'inv-bench-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--admin-token', TOKEN, '--no-workers', ...extra], {
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
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function call(url: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method, headers: { authorization: `Token ${TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
