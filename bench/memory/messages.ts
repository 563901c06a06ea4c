/**
 * Message create and message list (page of 50) throughput of the memory
 * service at 64 connections, each as a ratio to a bare Fastify endpoint doing
 * the same insert/select on the same storage (better-sqlite3, or with
 * DATABASE_URL a pg pool of the same size on PostgreSQL), measured in the
 * same run. Servers run in child processes, autocannon in this one; rounds
 * alternate service and baseline, and the medians are reported.
 *
 *   npx tsx bench/memory/messages.ts [--rounds 5] [--duration 3] [--connections 64]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/memory/messages.ts
 *
 * Besides throughput it reports requests per CPU-second of each server
 * process, which stays meaningful when other work shares the machine.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    serve: { type: 'string' },
    dir: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '3' },
    connections: { type: 'string', default: '64' },
    seed: { type: 'string', default: '1000' },
  },
  strict: false,
});

const META = { source: 'bench', n: 1 };
const DATABASE_URL = process.env.DATABASE_URL;
/** Schemas of this run on PostgreSQL (the children inherit the parent's pid through --dir's name). */
const schemaFor = (dir: string, kind: string) => `bench_msgs_${kind}_${path.basename(path.dirname(dir)).replace(/[^a-z0-9]/gi, '').toLowerCase()}`;

// ---------------------------------------------------------------- child: servers

async function serveService(dir: string) {
  process.env.LOG_REQUESTS = '0';
  const { buildApp } = await import('../../services/memory/src/app.ts');
  const app = await buildApp({
    port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: DATABASE_URL, pgSchema: schemaFor(dir, 'svc'), logLevel: 'warn', runWorkers: true, flags: {},
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const post = async (p: string, body: unknown) => {
    const r = await fetch(address + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (r.status !== 200) throw new Error(`${p}: ${r.status} ${await r.text()}`);
    return (await r.json()) as any;
  };
  const a = await post('/apps', { name: `bench-${randomUUID()}` });
  const u = await post(`/apps/${a.id}/users`, { name: 'bench' });
  const S = `/apps/${a.id}/users/${u.id}/sessions`;
  const write = await post(S, { location_id: 'bench' });
  const read = await post(S, { location_id: 'bench' });
  for (let i = 0; i < Number(args.seed); i++) await post(`${S}/${read.id}/messages`, { content: `seed message ${i}`, is_user: false, metadata: META });
  return { address, create: `${S}/${write.id}/messages`, list: `${S}/${read.id}/messages?size=50` };
}

/** The PostgreSQL baseline: the same table and index, one INSERT per create, COUNT + SELECT per list. */
async function serveBaselinePg(dir: string) {
  const Fastify = (await import('fastify')).default;
  const pg = (await import('pg')).default;
  const schema = schemaFor(dir, 'base');
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`drop schema if exists ${schema} cascade; create schema ${schema}`);
  await admin.end();
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10, options: `-c search_path=${schema}` });
  await pool.query(`create table messages (id text primary key, session_id text not null, is_user boolean not null, content text not null,
    metadata jsonb not null, created_at timestamptz not null, seq bigint not null);
    create index messages_list on messages (session_id, created_at, seq);`);
  const insert = 'insert into messages (id, session_id, is_user, content, metadata, created_at, seq) values ($1, $2, $3, $4, $5, $6, $7)';
  let seq = 0;
  const app = Fastify({ logger: false });
  app.post('/sessions/:sid/messages', async (req: any) => {
    const b = req.body;
    const row = { id: randomUUID(), created_at: new Date(), metadata: b.metadata ?? {} };
    await pool.query({ name: 'ins', text: insert, values: [row.id, req.params.sid, !!b.is_user, b.content, JSON.stringify(row.metadata), row.created_at, ++seq] });
    return { content: b.content, is_user: !!b.is_user, session_id: req.params.sid, id: row.id, metadata: row.metadata, created_at: row.created_at.toISOString() };
  });
  app.get('/sessions/:sid/messages', async (req: any) => {
    const size = Number(req.query.size ?? 50);
    const p = Number(req.query.page ?? 1);
    const total = Number((await pool.query({ name: 'count', text: 'select count(*) as n from messages where session_id = $1', values: [req.params.sid] })).rows[0].n);
    const r = await pool.query({ name: 'page', text: 'select * from messages where session_id = $1 order by created_at, seq limit $2 offset $3', values: [req.params.sid, size, (p - 1) * size] });
    const items = r.rows.map((x: any) => ({ ...x, created_at: x.created_at.toISOString() }));
    return { items, total, page: p, size, pages: Math.ceil(total / size) };
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const read = randomUUID();
  for (let i = 0; i < Number(args.seed); i++) await pool.query(insert, [randomUUID(), read, false, `seed message ${i}`, JSON.stringify(META), new Date(), ++seq]);
  return { address, create: `/sessions/${randomUUID()}/messages`, list: `/sessions/${read}/messages?size=50` };
}

async function dropSchemas(dir: string) {
  if (!DATABASE_URL) return;
  const pg = (await import('pg')).default;
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  for (const k of ['svc', 'base']) await c.query(`drop schema if exists ${schemaFor(dir, k)} cascade; drop schema if exists ${schemaFor(dir, k)}_worker cascade`);
  await c.end();
}

async function serveBaseline(dir: string) {
  if (DATABASE_URL) return serveBaselinePg(dir);
  const Fastify = (await import('fastify')).default;
  const BetterSqlite3 = (await import('better-sqlite3')).default;
  const db = new BetterSqlite3(path.join(dir, 'baseline.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`create table messages (id text primary key, session_id text not null, is_user integer not null, content text not null,
    metadata text not null, created_at text not null, seq integer not null);
    create index messages_list on messages (session_id, created_at, seq);`);
  const insert = db.prepare('insert into messages (id, session_id, is_user, content, metadata, created_at, seq) values (?, ?, ?, ?, ?, ?, ?)');
  const count = db.prepare('select count(*) as n from messages where session_id = ?');
  const page = db.prepare('select * from messages where session_id = ? order by created_at, seq limit ? offset ?');
  let seq = 0;
  const app = Fastify({ logger: false });
  app.post('/sessions/:sid/messages', async (req: any) => {
    const b = req.body;
    const row = { id: randomUUID(), created_at: new Date().toISOString(), metadata: b.metadata ?? {} };
    insert.run(row.id, req.params.sid, b.is_user ? 1 : 0, b.content, JSON.stringify(row.metadata), row.created_at, ++seq);
    return { content: b.content, is_user: !!b.is_user, session_id: req.params.sid, id: row.id, metadata: row.metadata, created_at: row.created_at };
  });
  app.get('/sessions/:sid/messages', async (req: any) => {
    const size = Number(req.query.size ?? 50);
    const p = Number(req.query.page ?? 1);
    const total = (count.get(req.params.sid) as any).n as number;
    const items = (page.all(req.params.sid, size, (p - 1) * size) as any[]).map((r) => ({ ...r, is_user: r.is_user === 1, metadata: JSON.parse(r.metadata) }));
    return { items, total, page: p, size, pages: Math.ceil(total / size) };
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const read = randomUUID();
  for (let i = 0; i < Number(args.seed); i++) insert.run(randomUUID(), read, 0, `seed message ${i}`, JSON.stringify(META), new Date().toISOString(), ++seq);
  return { address, create: `/sessions/${randomUUID()}/messages`, list: `/sessions/${read}/messages?size=50` };
}


// ---------------------------------------------------------------- parent: load

interface Target {
  child: ChildProcess;
  address: string;
  create: string;
  list: string;
}

async function start(kind: 'service' | 'baseline', dir: string): Promise<Target> {
  const child = fork(import.meta.filename, ['--serve', kind, '--dir', dir, '--seed', String(args.seed)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const info = await new Promise<any>((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} exited with ${code}`)));
  });
  return { child, ...info };
}

/** CPU time (µs) the child has used so far: requests per CPU-second is robust to other load on the machine. */
function cpuOf(t: Target): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: any) => {
      if (m && typeof m.cpu === 'number') {
        t.child.off('message', on);
        resolve(m.cpu);
      }
    };
    t.child.on('message', on);
    t.child.send('cpu');
  });
}

interface Measure {
  rps: number;
  /** Requests per CPU-second of the server process. */
  perCpu: number;
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

async function load(t: Target, which: 'create' | 'list'): Promise<Measure> {
  const specifier = 'autocannon'; // untyped package
  const autocannon = (await import(specifier)).default;
  const method = which === 'create' ? 'POST' : 'GET';
  const body = JSON.stringify({ content: 'hello from the benchmark, a message of modest size', is_user: false, metadata: META });
  const cpu0 = await cpuOf(t);
  const result = await autocannon({
    url: t.address + (which === 'create' ? t.create : t.list),
    method,
    connections: Number(args.connections),
    duration: Number(args.duration),
    headers: method === 'POST' ? { 'content-type': 'application/json' } : {},
    body: method === 'POST' ? body : undefined,
  });
  const cpu = (await cpuOf(t)) - cpu0;
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad > 0) throw new Error(`${method} ${which}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  return { rps: result.requests.average, perCpu: result.requests.total / (cpu / 1e6) };
}

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memory-bench-'));
  fs.mkdirSync(path.join(root, 'service'));
  fs.mkdirSync(path.join(root, 'baseline'));
  const service = await start('service', path.join(root, 'service'));
  const baseline = await start('baseline', path.join(root, 'baseline'));
  const rounds = Number(args.rounds);
  const m: Record<string, Measure[]> = { svcCreate: [], baseCreate: [], svcList: [], baseList: [] };
  try {
    // Warm-up: JIT, page cache, prepared statements.
    await load(service, 'create');
    await load(baseline, 'create');
    await load(service, 'list');
    await load(baseline, 'list');
    for (let i = 0; i < rounds; i++) {
      // Alternate who goes first, so drifting load on the machine favours neither.
      const pairs: Array<[string, Target, 'create' | 'list']> =
        i % 2 === 0
          ? [['svcCreate', service, 'create'], ['baseCreate', baseline, 'create'], ['baseList', baseline, 'list'], ['svcList', service, 'list']]
          : [['baseCreate', baseline, 'create'], ['svcCreate', service, 'create'], ['svcList', service, 'list'], ['baseList', baseline, 'list']];
      for (const [key, target, which] of pairs) m[key]!.push(await load(target, which));
      const f = (k: string) => m[k]![m[k]!.length - 1]!.rps.toFixed(0);
      console.log(`round ${i + 1}: create ${f('svcCreate')} vs ${f('baseCreate')} req/s; list ${f('svcList')} vs ${f('baseList')} req/s`);
    }
  } finally {
    service.child.send('stop');
    baseline.child.send('stop');
  }
  const ratio = (a: Measure[], b: Measure[], k: keyof Measure) => median(a.map((x, i) => x[k] / b[i]![k]));
  const rps = (a: Measure[]) => median(a.map((x) => x.rps)).toFixed(0);
  const storage = DATABASE_URL ? 'PostgreSQL: bare Fastify + pg' : 'SQLite: bare Fastify + better-sqlite3';
  console.log(`\nmemory service vs ${storage} (${args.connections} connections, ${rounds} rounds × ${args.duration}s, medians)`);
  for (const [label, svc, base] of [['message create', m.svcCreate!, m.baseCreate!], ['message list  ', m.svcList!, m.baseList!]] as const) {
    console.log(
      `${label}: ${rps(svc)} vs ${rps(base)} req/s  throughput ratio ${ratio(svc, base, 'rps').toFixed(2)}` +
        `  | per server CPU-second ${median(svc.map((x) => x.perCpu)).toFixed(0)} vs ${median(base.map((x) => x.perCpu)).toFixed(0)}  ratio ${ratio(svc, base, 'perCpu').toFixed(2)}  (goal ≥ 0.70)`,
    );
  }
  await dropSchemas(path.join(root, 'service'));
  fs.rmSync(root, { recursive: true, force: true });
}

if (args.serve) {
  const dir = String(args.dir);
  const info = args.serve === 'service' ? await serveService(dir) : await serveBaseline(dir);
  process.send!(info);
  process.on('message', (m) => {
    if (m === 'stop') process.exit(0);
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send!({ cpu: u.user + u.system });
    }
  });
} else {
  await main();
}
