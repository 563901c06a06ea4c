/**
 * `/query` over 100,000 documents in one collection, over real HTTP, on
 * embedded SQLite or (with DATABASE_URL) PostgreSQL: p50/p99 of hybrid search
 * (top_k 5 and 50, and with metadata filters matching 1% and 50% of the
 * documents), against a same-run baseline (GET of one document by id on the
 * same server), plus the recall@10 of the vector stage against exact cosine
 * (unfiltered and under both filters).
 *
 *   npx tsx bench/memory/query.ts [--docs 100000] [--queries 2000] [--in-process]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/memory/query.ts
 *
 * The service runs in a child process of its own, as it is deployed, and
 * this process is only the HTTP client (and the bulk loader, and the recall
 * and in-process figures, taken after the HTTP measurements). With
 * `--in-process` the service runs inside this process as earlier versions of
 * the bench did: the client's fetch and the loader's heap (every document's
 * id, vector and metadata) then share the server's event loop and garbage
 * collector. The child reports its event-loop delay and GC pauses during the
 * measurement; MEMORY_BENCH_SERVER_ARGS adds node flags to it (e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof`, `--trace-gc`). The server applies
 * the service's V8 settings (src/runtime.ts) as main.ts does;
 * MEMORY_PARALLEL_SCAVENGE=1 measures without them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import type { ServiceConfig } from '@svc/kernel';
import { dropPgSchema } from '@svc/storage';
import { buildApp, openMemoryStorage } from '../../services/memory/src/app.ts';
import { tuneRuntime } from '../../services/memory/src/runtime.ts';
import { candidatesFor, createSearch } from '../../services/memory/src/search/index.ts';
import { queryTerms } from '../../services/memory/src/search/text.ts';
import { dot, INDEX_DIMS, localEmbedding } from '../../services/memory/src/search/embedding.ts';
import { makeCorpus, pct } from './corpus.ts';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '2000' },
    'in-process': { type: 'boolean', default: false },
    serve: { type: 'string' },
    schema: { type: 'string' },
  },
});
const DOCS = Number(values.docs);
const QUERIES = Number(values.queries);
const DATABASE_URL = process.env.DATABASE_URL;
const IN_PROCESS = values['in-process'];

const serverConfig = (dataDir: string, pgSchema: string): ServiceConfig => ({
  port: 0, host: '127.0.0.1', dataDir, databaseUrl: DATABASE_URL, pgSchema, logLevel: 'silent', runWorkers: true, flags: {},
});

/** Event-loop delay and GC pauses of the server process, between 'reset' and 'stats'. */
function serverStats() {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  let gc: Array<{ kind: number; ms: number }> = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gc.push({ kind: (e as any).detail?.kind ?? 0, ms: e.duration });
  }).observe({ entryTypes: ['gc'] });
  loop.enable();
  return {
    reset() {
      loop.reset();
      gc = [];
    },
    read() {
      const pauses = gc.map((g) => g.ms);
      // perf_hooks GC kinds: 1 minor (scavenge), 2 major (mark-compact), 4 incremental marking, 8 weak callbacks.
      const major = gc.filter((g) => g.kind === 2).map((g) => g.ms);
      return {
        loopP50: loop.percentile(50) / 1e6,
        loopP99: loop.percentile(99) / 1e6,
        loopMax: loop.max / 1e6,
        gcCount: pauses.length,
        gcTotal: pauses.reduce((a, b) => a + b, 0),
        gcMax: pauses.length ? Math.max(...pauses) : 0,
        majorCount: major.length,
        majorMax: major.length ? Math.max(...major) : 0,
        heapMB: process.memoryUsage().heapUsed / 2 ** 20,
      };
    },
  };
}
type ServerStats = ReturnType<ReturnType<typeof serverStats>['read']>;

if (values.serve) {
  // Child: the service alone in its process, with the V8 settings its main.ts applies.
  tuneRuntime();
  process.env.LOG_REQUESTS = '0';
  const app = await buildApp(serverConfig(values.serve, String(values.schema)));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const stats = serverStats();
  process.on('message', async (m: any) => {
    if (m === 'reset') stats.reset(), process.send!({ reset: true });
    if (m === 'stats') process.send!({ stats: stats.read() });
    if (m === 'stop') {
      await app.close();
      process.exit(0);
    }
  });
  process.send!({ address });
} else {
  await main();
}

async function main() {
  const corpus = makeCorpus();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memory-bench-query-'));
  const pgSchema = `bench_query_${process.pid}`;
  const cfg = serverConfig(dataDir, pgSchema);
  process.env.LOG_REQUESTS = '0';
  let child: ChildProcess | undefined;
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let base: string;
  let inProcessStats: ReturnType<typeof serverStats> | undefined;
  if (IN_PROCESS) {
    tuneRuntime();
    app = await buildApp(cfg);
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    inProcessStats = serverStats();
  } else {
    const extra = (process.env.MEMORY_BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean);
    child = fork(import.meta.filename, ['--serve', dataDir, '--schema', pgSchema], { execArgv: ['--import', 'tsx', ...extra], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const c = child;
    base = await new Promise<string>((resolve, reject) => {
      c.once('message', (m: any) => resolve(m.address));
      c.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
  }
  /** Asks the server process (or this one) for its stats, or resets them. */
  function ask(what: 'reset' | 'stats'): Promise<ServerStats | undefined> {
    if (inProcessStats) {
      if (what === 'reset') return Promise.resolve(inProcessStats.reset()).then(() => undefined);
      return Promise.resolve(inProcessStats.read());
    }
    const c = child!;
    return new Promise((resolve) => {
      const on = (m: any) => {
        if (what === 'stats' && m?.stats) resolve(m.stats);
        else if (what === 'reset' && m?.reset) resolve(undefined);
        else return;
        c.off('message', on);
      };
      c.on('message', on);
      c.send(what);
    });
  }

  async function json(method: string, p: string, body?: unknown): Promise<any> {
    const r = await fetch(base + p, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
    if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
    return r.json();
  }

  try {
    const a = await json('POST', '/apps', { name: 'bench' });
    const u = await json('POST', `/apps/${a.id}/users`, { name: 'bench' });
    const c = await json('POST', `/apps/${a.id}/users/${u.id}/collections`, { name: 'big' });
    const C = `/apps/${a.id}/users/${u.id}/collections/${c.id}`;

    // Bulk load through a second connection, with the service's own index code.
    const t0 = Date.now();
    const storage = await openMemoryStorage(cfg);
    const search = createSearch({ storage, config: {} as any });
    const ids: string[] = [];
    // All vectors in one buffer (one heap object, not 100,000): this process is the HTTP client during the measurement.
    const vecs = new Float32Array(DOCS * INDEX_DIMS);
    const metaOf = (j: number) => ({ n: j, bucket: j % 100, half: j % 2 });
    const BATCH = DATABASE_URL ? 1000 : 5000;
    for (let i = 0; i < DOCS; i += BATCH) {
      await storage.db.transaction().execute(async (trx) => {
        const rows = [];
        for (let j = i; j < Math.min(DOCS, i + BATCH); j++) {
          const id = crypto.randomUUID();
          const content = corpus.document();
          rows.push({ id, collection_id: c.id, content, metadata: JSON.stringify(metaOf(j)), created_at: storage.dialect.timestamp(new Date()), seq: j + 1 });
          ids.push(id);
          vecs.set(localEmbedding(content), j * INDEX_DIMS);
        }
        await trx.insertInto('documents').values(rows).execute();
        for (const r of rows) await search.indexDocument(trx, { id: r.id, collection_id: c.id, content: r.content, metadata: JSON.parse(r.metadata) });
      });
    }
    if (DATABASE_URL) await sql`analyze`.execute(storage.db);
    const loadMs = Date.now() - t0;

    const queries = Array.from({ length: QUERIES }, () => corpus.query());

    async function measure(makePath: (i: number) => string, n: number): Promise<number[]> {
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const p = makePath(i);
        let s = performance.now();
        let r: Response;
        try {
          r = await fetch(base + p);
        } catch {
          // A keep-alive connection closed by the server while idle: retry once on a fresh one.
          s = performance.now();
          r = await fetch(base + p);
        }
        await r.arrayBuffer();
        ms.push(performance.now() - s);
        if (r.status !== 200) throw new Error(`${p}: ${r.status}`);
      }
      return ms;
    }
    const enc = encodeURIComponent;
    const q5 = (i: number) => `${C}/query?query=${enc(queries[i % queries.length]!)}`;
    const q50 = (i: number) => `${C}/query?query=${enc(queries[i % queries.length]!)}&top_k=50`;
    const qf1 = (i: number) => `${q5(i)}&filter=${enc(JSON.stringify({ bucket: i % 100 }))}`;
    const qf50 = (i: number) => `${q5(i)}&filter=${enc(JSON.stringify({ half: i % 2 }))}`;
    const getDoc = (i: number) => `${C}/documents/${ids[(i * 7919) % ids.length]}`;

    await measure(q5, 200);
    await measure(qf1, 50);
    await measure(qf50, 50);
    await measure(getDoc, 200);
    await ask('reset');
    // Interleave rounds so every kind sees the same machine conditions.
    const r = { base: [] as number[], q5: [] as number[], f1: [] as number[], f50: [] as number[] };
    const ROUNDS = 4;
    for (let round = 0; round < ROUNDS; round++) {
      const off = round * QUERIES;
      r.base.push(...(await measure((i) => getDoc(i + off), QUERIES / ROUNDS)));
      r.q5.push(...(await measure((i) => q5(i + off), QUERIES / ROUNDS)));
      r.f1.push(...(await measure((i) => qf1(i + off), QUERIES / ROUNDS / 4)));
      r.f50.push(...(await measure((i) => qf50(i + off), QUERIES / ROUNDS / 4)));
    }
    const stats = await ask('stats');
    const query50 = await measure(q50, Math.min(500, QUERIES));

    // Recall of the vector stage (whatever plan the backend picks) against exact cosine over the same vectors.
    const docIndex = new Map(ids.map((id, i) => [id, i]));
    async function recall(filterOf: (q: number) => Record<string, number> | undefined, n: number): Promise<number> {
      let hit = 0;
      const scores = new Float64Array(DOCS);
      for (let q = 0; q < n; q++) {
        const qv = localEmbedding(queries[q]!);
        const f = filterOf(q);
        for (let i = 0; i < DOCS; i++) {
          const m = metaOf(i) as Record<string, number>;
          scores[i] = f && !Object.entries(f).every(([k, x]) => m[k] === x) ? -Infinity : dot(vecs.subarray(i * INDEX_DIMS, (i + 1) * INDEX_DIMS), qv);
        }
        const exact = Array.from({ length: DOCS }, (_, i) => i)
          .sort((p, r) => scores[r]! - scores[p]! || p - r)
          .slice(0, 10);
        const hits = await search.backend.vectorRanking(c.id, qv, 10, f);
        const rows = await search.backend.fetch(c.id, hits.map((h) => h.key));
        const got = new Set(rows.map((r) => docIndex.get(r.id)));
        hit += exact.filter((i) => got.has(i)).length;
      }
      return hit / (n * 10);
    }
    const recallAll = await recall(() => undefined, 100);
    const recall1 = await recall((q) => ({ bucket: q % 100 }), 30);
    const recall50 = await recall((q) => ({ half: q % 2 }), 30);

    // Where the time goes, in-process (no HTTP), on the same data.
    const parts = { embed: [] as number[], text: [] as number[], vector: [] as number[], fetch: [] as number[], total: [] as number[] };
    for (const qt of queries.slice(0, 300)) {
      let t = performance.now();
      const [qv] = await search.embedder.embed([qt]);
      parts.embed.push(performance.now() - t);
      t = performance.now();
      const th = await search.backend.textRanking(c.id, queryTerms(qt), candidatesFor(5), undefined);
      parts.text.push(performance.now() - t);
      t = performance.now();
      const vh = await search.backend.vectorRanking(c.id, qv!, candidatesFor(5), undefined);
      parts.vector.push(performance.now() - t);
      t = performance.now();
      await search.backend.fetch(c.id, [...th, ...vh].slice(0, 5).map((h) => h.key));
      parts.fetch.push(performance.now() - t);
      t = performance.now();
      await search.query(c.id, qt, 5);
      parts.total.push(performance.now() - t);
    }
    await storage.close();

    const row = (name: string, xs: number[]) =>
      `${name.padEnd(40)} p50 ${pct(xs, 50).toFixed(2).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(2).padStart(7)} ms   (n=${xs.length})`;
    const storageName = DATABASE_URL ? `PostgreSQL (vector mode: ${search.backend.name})` : 'embedded SQLite';
    console.log(
      `memory /query bench: ${DOCS} documents in one collection, ${storageName} (load ${(loadMs / 1000).toFixed(1)} s), node ${process.version}, ${os.cpus().length} CPUs, ` +
        (IN_PROCESS ? 'server in the client process (--in-process)' : 'server in its own process'),
    );
    console.log(row('baseline GET document by id', r.base));
    console.log(row('GET /query top_k=5', r.q5));
    console.log(row('GET /query top_k=50', query50));
    console.log(row('GET /query top_k=5 + filter (1% match)', r.f1));
    console.log(row('GET /query top_k=5 + filter (50% match)', r.f50));
    console.log(`ratio /query top_k=5 to baseline: p50 ${(pct(r.q5, 50) / pct(r.base, 50)).toFixed(2)}x, p99 ${(pct(r.q5, 99) / pct(r.base, 99)).toFixed(2)}x`);
    if (stats) {
      const f = (x: number) => x.toFixed(1);
      console.log(
        `server during the interleaved rounds: event-loop delay p50 ${f(stats.loopP50)} / p99 ${f(stats.loopP99)} / max ${f(stats.loopMax)} ms; ` +
          `GC ${stats.gcCount} pauses, ${f(stats.gcTotal)} ms in all, longest ${f(stats.gcMax)} ms (${stats.majorCount} mark-compact, longest ${f(stats.majorMax)} ms); heap ${f(stats.heapMB)} MB`,
      );
    }
    console.log('in-process p50 (ms): ' + Object.entries(parts).map(([k, xs]) => `${k} ${pct(xs, 50).toFixed(2)}`).join(', '));
    console.log(`vector stage recall@10 vs exact cosine: ${(recallAll * 100).toFixed(1)}% unfiltered, ${(recall1 * 100).toFixed(1)}% under the 1% filter, ${(recall50 * 100).toFixed(1)}% under the 50% filter`);
    console.log(`load average during the run: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    const goal = (name: string, xs: number[], p50: number, p99: number) =>
      `${name}: p50 ${pct(xs, 50) <= p50 ? 'met' : 'NOT met'} (≤ ${p50} ms), p99 ${pct(xs, 99) <= p99 ? 'met' : 'NOT met'} (≤ ${p99} ms)`;
    console.log(goal('goal /query top_k=5', r.q5, 10, 30));
    console.log(goal('goal filter 1%', r.f1, 20, 50));
    console.log(goal('goal filter 50%', r.f50, 20, 50));
    console.log(`goal recall@10 ≥ 95%: ${Math.min(recallAll, recall1, recall50) >= 0.95 ? 'met' : 'NOT met'}`);
  } finally {
    if (app) await app.close();
    if (child) {
      const c = child;
      await new Promise((resolve) => {
        c.once('exit', resolve);
        c.send('stop');
      });
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (DATABASE_URL) {
      await dropPgSchema(DATABASE_URL, pgSchema);
      await dropPgSchema(DATABASE_URL, `${pgSchema}_worker`);
    }
  }
}
