/**
 * Statements (SQLite) or round trips (PostgreSQL) and server time per v3
 * message batch (100 messages from two peers, as bench/memory/v3.ts sends),
 * for profiling the create path:
 *
 *   npx tsx bench/memory/v3-batch-statements.ts [--batches 50]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/memory/v3-batch-statements.ts
 *
 * Prints the statements of one batch (first words, counted) and the median
 * time of a batch through the HTTP API (in-process, sequential).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({ options: { batches: { type: 'string', default: '50' }, verbose: { type: 'boolean', default: false } }, strict: false });
const DATABASE_URL = process.env.DATABASE_URL;
process.env.LOG_REQUESTS = '0';

const seen: string[] = [];
let counting = false;
const note = (text: string) => {
  if (counting) seen.push(text.replace(/\s+/g, ' ').trim());
};
/** Time spent in each kind of statement over the timed batches (PostgreSQL: until its answer). */
const spent = new Map<string, number>();
let timing = false;
const kind = (s: string) => s.replace(/\s+/g, ' ').trim().split(' ').slice(0, 3).join(' ').slice(0, 50);
if (DATABASE_URL) {
  const pg = (await import('pg')).default;
  const orig = pg.Client.prototype.query as any;
  (pg.Client.prototype as any).query = function (this: unknown, q: any, ...rest: any[]) {
    const text = typeof q === 'string' ? q : (q?.text ?? String(q));
    note(text);
    const r = orig.call(this, q, ...rest);
    if (timing && r && typeof r.then === 'function') {
      const t = performance.now();
      const k = kind(text);
      r.then(
        () => spent.set(k, (spent.get(k) ?? 0) + performance.now() - t),
        () => {},
      );
    }
    return r;
  };
} else {
  const Database = (await import('better-sqlite3')).default;
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('select 1'));
  probe.close();
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const orig = proto[m];
    proto[m] = function (this: { source: string }, ...a: unknown[]) {
      note(this.source);
      if (!timing) return orig.apply(this, a);
      const t = performance.now();
      try {
        return orig.apply(this, a);
      } finally {
        const k = kind(this.source);
        spent.set(k, (spent.get(k) ?? 0) + performance.now() - t);
      }
    };
  }
  if (process.env.BENCH_WAL_AUTOCHECKPOINT) {
    const pragmaOrig = Database.prototype.pragma;
    Database.prototype.pragma = function (this: any, src: string, o?: any) {
      const r = pragmaOrig.call(this, src, o);
      if (/journal_mode/.test(src)) pragmaOrig.call(this, `wal_autocheckpoint = ${Number(process.env.BENCH_WAL_AUTOCHECKPOINT)}`);
      return r;
    } as any;
  }
  const execOrig = Database.prototype.exec;
  Database.prototype.exec = function (this: any, s: string) {
    note(s);
    return execOrig.call(this, s);
  };
}

const { buildApp } = await import('../../services/memory/src/app.ts');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-v3-stmts-'));
const schema = `bench_v3s_${process.pid}`;
const app = await buildApp({ port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: DATABASE_URL, pgSchema: schema, logLevel: 'warn', runWorkers: false, flags: {} } as any);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
const batch = (tag: string) => Array.from({ length: 100 }, (_, i) => ({ peer_id: i % 2 ? 'alice' : 'bob', content: `bench message ${tag} ${i} about the weather and the news`, metadata: { n: i } }));
async function post(session: string, tag: string) {
  const r = await fetch(`${address}/v3/workspaces/bench/sessions/${session}/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: batch(tag) }) });
  if (r.status !== 201) throw new Error(`${r.status} ${await r.text()}`);
  await r.arrayBuffer();
}
// Warm up: the workspace, peers and one session exist, statements are prepared.
for (let i = 0; i < 5; i++) await post(`warm${i}`, `w${i}`);
for (const [label, session] of [['new session', 'fresh'], ['existing session', 'fresh']] as const) {
  seen.length = 0;
  counting = true;
  await post(session, label);
  counting = false;
  const counts = new Map<string, number>();
  for (const s of seen) {
    const key = args.verbose ? s.slice(0, 160) : s.split(' ').slice(0, 4).join(' ').slice(0, 70);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  console.log(`${DATABASE_URL ? 'PostgreSQL round trips' : 'SQLite statements'} for one batch of 100 (${label}): ${seen.length}`);
  for (const [k, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(4)}  ${k}`);
}
const times: number[] = [];
const n = Number(args.batches);
timing = true;
for (let i = 0; i < n; i++) {
  const t = performance.now();
  await post(`t${i % 10}`, `t${i}`);
  times.push(performance.now() - t);
}
timing = false;
const total = times.reduce((a, b) => a + b, 0);
if (spent.size) {
  console.log(`${DATABASE_URL ? 'PostgreSQL round trip' : 'SQLite statement'} time per batch (of ${(total / n).toFixed(1)} ms mean):`);
  for (const [k, ms] of [...spent].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${(ms / n).toFixed(2).padStart(6)} ms  ${k}`);
}
times.sort((a, b) => a - b);
console.log(`batch of 100, sequential, ${n} batches: median ${times[n >> 1]!.toFixed(1)} ms (load average ${os.loadavg()[0]!.toFixed(1)})`);
await app.close();
if (DATABASE_URL) {
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  await c.query(`drop schema if exists ${schema} cascade; drop schema if exists ${schema}_worker cascade`);
  await c.end();
}
fs.rmSync(dir, { recursive: true, force: true });
