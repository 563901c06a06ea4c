/**
 * GET /api/assets at 100,000 assets: latency of walking pages with the
 * keyset cursor (`after` / `next_cursor`), against a same-run baseline: a
 * bare Fastify process answering a pre-rendered page of the same size. Also
 * reported: the first page, a tag-filtered cursor walk, name sort, and deep
 * offset pages (what the cursor avoids). The service runs in a child process
 * on SQLite (or PostgreSQL with DATABASE_URL); rows are seeded through the
 * asset domain's bulk insert.
 *
 *   npx tsx bench/workflow/assets.ts [--assets 100000] [--pages 400] [--rounds 3]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: { serve: { type: 'string' }, dir: { type: 'string' }, assets: { type: 'string', default: '100000' }, pages: { type: 'string', default: '400' }, rounds: { type: 'string', default: '3' }, page: { type: 'string' } },
  strict: false,
});

async function serveService(dir: string, n: number) {
  const { buildApp } = await import('../../services/workflow/src/app.ts');
  const { openWorkflowStorage } = await import('../../services/workflow/src/app.ts');
  const { insertAssetsBulk } = await import('../../services/workflow/src/domain/assets/repo.ts');
  const cfg = { port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: process.env.DATABASE_URL, pgSchema: `bench_assets_${process.pid}`, logLevel: 'warn', runWorkers: false, flags: {} };
  const storage = await openWorkflowStorage(cfg as any);
  const t0 = performance.now();
  const base = Date.now() - n * 10;
  const batch: any[] = [];
  const flush = async () => {
    await insertAssetsBulk(storage.db, storage.dialect, batch.splice(0));
  };
  for (let i = 0; i < n; i++) {
    const hash = 'blake3:' + createHash('sha256').update(String(i)).digest('hex');
    batch.push({
      id: randomUUID(),
      owner: '',
      name: `image_${String(i).padStart(6, '0')}.png`,
      hash,
      size: 1000 + ((i * 7919) % 100_000),
      mimeType: 'image/png',
      userMetadata: { filename: `image_${i}.png`, seed: i % 1000 },
      metadata: { kind: 'image', width: 512, height: 512 },
      previewId: null,
      jobId: null,
      filePath: null,
      dedupKey: null,
      now: base + i * 10,
      tags: i % 10 === 0 ? ['output', 'favourite'] : ['output'],
    });
    if (batch.length === 5000) await flush();
  }
  await flush();
  const seedMs = performance.now() - t0;
  await storage.close();
  const app = await buildApp(cfg as any);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  process.send!({ address, seedMs });
}

async function serveBaseline(pageFile: string) {
  const { default: Fastify } = await import('fastify');
  const body = fs.readFileSync(pageFile);
  const app = Fastify();
  app.get('/api/assets', async (_req, reply) => reply.type('application/json').send(body));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  process.send!({ address });
}

function start(extra: string[]): Promise<{ child: ChildProcess; address: string; seedMs?: number }> {
  const child = fork(new URL(import.meta.url).pathname, extra, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m: any) => resolve({ child, address: m.address, seedMs: m.seedMs }));
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await done;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function get(url: string): Promise<any> {
  const r = await fetch(url);
  const text = await r.text();
  if (r.status !== 200) throw new Error(`${url} -> ${r.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

/** Walks `pages` pages with the cursor; returns per-request latencies (ms). */
async function walk(base: string, query: string, pages: number): Promise<number[]> {
  const times: number[] = [];
  let after: string | undefined;
  for (let i = 0; i < pages; i++) {
    const t = performance.now();
    const b = await get(`${base}/api/assets?${query}${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    times.push(performance.now() - t);
    if (b.assets.length === 0) throw new Error('empty page');
    after = b.next_cursor;
    if (!after) after = undefined;
  }
  return times;
}

async function repeat(url: string, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await get(url);
    times.push(performance.now() - t);
  }
  return times;
}

async function main() {
  const n = Number(args.assets);
  const pages = Number(args.pages);
  const rounds = Number(args.rounds);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-assets-'));
  const svc = await start(['--serve', 'service', '--dir', dir, '--assets', String(n)]);
  const pageFile = path.join(dir, 'page.json');
  fs.writeFileSync(pageFile, JSON.stringify(await get(`${svc.address}/api/assets?limit=20`)));
  const base = await start(['--serve', 'baseline', '--page', pageFile]);
  console.log(`${n} assets seeded in ${(svc.seedMs! / 1000).toFixed(1)} s (${process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'}); ${pages} requests per measurement, ${rounds} rounds; median of the round medians`);
  const results: Record<string, number[][]> = {};
  const note = (k: string, xs: number[]) => (results[k] ??= []).push(xs);
  // Warm-up.
  await walk(svc.address, 'limit=20', 50);
  await repeat(`${base.address}/api/assets`, 50);
  for (let r = 0; r < rounds; r++) {
    note('baseline: bare Fastify, same page bytes', await repeat(`${base.address}/api/assets`, pages));
    note('cursor walk, created_at desc, limit 20', await walk(svc.address, 'limit=20', pages));
    note('cursor walk, name asc, limit 20', await walk(svc.address, 'limit=20&sort=name&order=asc', pages));
    note('cursor walk, include_tags=favourite (10%)', await walk(svc.address, 'limit=20&include_tags=favourite', pages));
    note('first page, limit 100', await repeat(`${svc.address}/api/assets?limit=100`, Math.ceil(pages / 4)));
    note('offset 90,000, limit 20 (no cursor)', await repeat(`${svc.address}/api/assets?limit=20&offset=90000`, Math.ceil(pages / 8)));
  }
  const baseP50 = median(results['baseline: bare Fastify, same page bytes']!.map((xs) => pct(xs, 50)));
  console.log(`${'measurement'.padEnd(46)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'× base'.padStart(8)}`);
  for (const [k, runs] of Object.entries(results)) {
    const p50 = median(runs.map((xs) => pct(xs, 50)));
    const p95 = median(runs.map((xs) => pct(xs, 95)));
    console.log(`${k.padEnd(46)} ${p50.toFixed(2).padStart(8)} ${p95.toFixed(2).padStart(8)} ${(p50 / baseP50).toFixed(2).padStart(8)}`);
  }
  await stop(svc.child);
  await stop(base.child);
  fs.rmSync(dir, { recursive: true, force: true });
  if (process.env.DATABASE_URL) {
    const { dropPgSchema } = await import('@svc/storage');
    await dropPgSchema(process.env.DATABASE_URL, `bench_assets_${svc.child.pid}`);
  }
}

function median(xs: number[]): number {
  return pct(xs, 50);
}

if (args.serve === 'service') await serveService(args.dir as string, Number(args.assets));
else if (args.serve === 'baseline') await serveBaseline(args.page as string);
else await main();
