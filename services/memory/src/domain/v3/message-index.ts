import { sql } from 'kysely';
import type { Storage } from '@svc/storage';
import type { Ctx } from '../context.ts';
import { bufferToVector, dot } from '../../search/embedding.ts';
import { indexBody, queryTerms } from '../../search/text.ts';
import { reciprocalRankFusion } from '../../search/rrf.ts';
import { hammingKernel, type HammingKernel } from '../../search/hamming-wasm.ts';

/**
 * 384-dimension vectors (the local embedding's) live in a WebAssembly memory
 * and are scanned by the document index's SIMD `dot8` kernel (int8 × int16):
 * the int16 query at 0, the row list at ROWS_AT, the dot products after it
 * and the int8 rows after those; other dimensions use a plain JS loop.
 */
const KERNEL_DIMS = 384;
const ROWS_AT = 1024;
/** Rows scored per slice of the vector pre-rank (a few milliseconds). */
const VEC_SLICE = 8_192;
const layout = (cap: number) => ({ out: ROWS_AT + cap * 4, v8: ROWS_AT + cap * 8, end: ROWS_AT + cap * 8 + cap * KERNEL_DIMS });

function vectorStore(cap: number, dims: number): { q8: Int8Array; kernel?: HammingKernel } {
  if (dims !== KERNEL_DIMS) return { q8: new Int8Array(cap * dims) };
  const l = layout(cap);
  const kernel = hammingKernel(Math.ceil(l.end / 65536));
  return { q8: new Int8Array(kernel.memory.buffer, l.v8, cap * dims), kernel };
}

/**
 * An in-memory index of a workspace's v3 messages for search: each message's
 * stems (postings) and an int8 copy of its embedding (one byte per dimension,
 * with its scale), built on the workspace's first search and brought up to
 * date on every search by reading the messages written since (an indexed read
 * by `seq`). The database stays the only source of truth: candidates are read
 * back from it by id before they are answered, so a message deleted by any
 * process is never returned (and is then dropped from the index), and the
 * exact cosine of the stored float vectors re-ranks the int8 pre-ranking.
 *
 * Rows of transactions that commit out of `seq` order (PostgreSQL, several
 * processes) are caught by re-reading the ids of the last few seconds of
 * `seq` (a microsecond clock; REREAD_US) on each refresh; a write committing
 * later than that after taking its seq would be missed until the index is
 * rebuilt (REBUILD_MS).
 */
const REREAD_US = { sqlite: 1_000_000, postgres: 5_000_000 } as const;
const REBUILD_MS = 10 * 60_000;
/** PostgreSQL: a chunk's response (about 1 KB a row) is parsed as it arrives, up to megabytes in one turn of the loop: 1,000 rows. */
const CHUNK = 1_000;
/** SQLite reads block the thread: smaller chunks (a few milliseconds each). */
const SQLITE_CHUNK = 500;

interface WsIndex {
  ids: string[];
  seqs: number[];
  session: number[];
  peer: number[];
  alive: Uint8Array;
  /** int8 vectors, `dims` per row; a row without a vector has scale 0. */
  q8: Int8Array;
  kernel?: HammingKernel;
  invScale: Float32Array;
  dims: number;
  postings: Map<string, number[]>;
  rowOf: Map<string, number>;
  names: Map<string, number>;
  hw: number;
  /** The highest `v3_vectors.seq` seen: embeddings written after their messages (the ingest job). */
  vhw: number;
  builtAt: number;
  refreshing?: Promise<void>;
}

const indexes = new WeakMap<Storage, Map<string, WsIndex>>();

function empty(): WsIndex {
  return {
    ids: [],
    seqs: [],
    session: [],
    peer: [],
    alive: new Uint8Array(1024),
    q8: new Int8Array(0),
    invScale: new Float32Array(1024),
    dims: 0,
    postings: new Map(),
    rowOf: new Map(),
    names: new Map(),
    hw: -1,
    vhw: -1,
    builtAt: Date.now(),
  };
}

const intern = (ix: WsIndex, name: string) => {
  let n = ix.names.get(name);
  if (n === undefined) ix.names.set(name, (n = ix.names.size));
  return n;
};

function add(ix: WsIndex, r: any): void {
  if (ix.rowOf.has(r.id)) return;
  const row = ix.ids.length;
  if (row >= ix.alive.length) {
    const cap = ix.alive.length * 2;
    const a = new Uint8Array(cap);
    a.set(ix.alive);
    ix.alive = a;
    const s = new Float32Array(cap);
    s.set(ix.invScale);
    ix.invScale = s;
    if (ix.dims) {
      const store = vectorStore(cap, ix.dims);
      store.q8.set(ix.q8);
      ix.q8 = store.q8;
      ix.kernel = store.kernel;
    }
  }
  ix.ids.push(r.id);
  ix.seqs.push(Number(r.seq));
  ix.session.push(intern(ix, r.session));
  ix.peer.push(intern(ix, r.peer));
  ix.alive[row] = 1;
  ix.rowOf.set(r.id, row);
  setStored(ix, row, r);
  const body: string = typeof r.body === 'string' ? r.body : indexBody(String(r.content ?? ''));
  for (const stem of new Set<string>(body.split(' '))) {
    if (!stem) continue;
    let p = ix.postings.get(stem);
    if (!p) ix.postings.set(stem, (p = []));
    p.push(row);
  }
}

/**
 * An embedding's int8 copy as the index holds it: the float32 inverse scale
 * (little-endian), then one byte per dimension (round(v × 127 / max|v|)).
 * The ingest job stores it beside the float vector (`v3_vectors.q8`), so an
 * index build reads a quarter of the bytes and quantizes nothing; rows
 * without it (written before `015_v3_q8`) are quantized here, the same way.
 */
export function quantize(v: Float32Array): Uint8Array {
  const out = new Uint8Array(4 + v.length);
  let max = 0;
  for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(v[i]!));
  if (max > 0) {
    const scale = 127 / max;
    new DataView(out.buffer).setFloat32(0, 1 / scale, true);
    const q = new Int8Array(out.buffer, 4);
    for (let i = 0; i < v.length; i++) q[i] = Math.round(v[i]! * scale);
  }
  return out;
}

/** A row's int8 embedding from its stored form (a row without one has scale 0). */
function setQ8(ix: WsIndex, row: number, q: Uint8Array): void {
  const dims = q.byteLength - 4;
  if (!ix.dims) {
    ix.dims = dims;
    const store = vectorStore(ix.alive.length, ix.dims);
    ix.q8 = store.q8;
    ix.kernel = store.kernel;
  }
  if (dims !== ix.dims) return;
  const inv = new DataView(q.buffer, q.byteOffset, 4).getFloat32(0, true);
  if (inv === 0) return;
  ix.q8.set(new Int8Array(q.buffer, q.byteOffset + 4, dims), row * dims);
  ix.invScale[row] = inv;
}

const setVector = (ix: WsIndex, row: number, buf: Uint8Array) => setQ8(ix, row, quantize(bufferToVector(buf)));

/** A row's stored embedding: the int8 copy when there is one, else the float vector. */
function setStored(ix: WsIndex, row: number, r: { q8?: unknown; vector?: unknown }): void {
  if (r.q8) setQ8(ix, row, r.q8 as Uint8Array);
  else if (r.vector) setVector(ix, row, r.vector as Uint8Array);
}

function rowsQuery(ctx: Ctx) {
  return ctx.storage.db
    .selectFrom('v3_messages')
    .leftJoin('v3_vectors', 'v3_vectors.id', 'v3_messages.id')
    .select(['v3_messages.id', 'v3_messages.workspace', 'v3_messages.seq', 'v3_messages.session', 'v3_messages.peer', 'v3_vectors.q8', 'v3_vectors.body'])
    // The float vector and the text only where the int8 copy or the stems are missing.
    .select(sql<Uint8Array | null>`case when v3_vectors.q8 is null then v3_vectors.vector end`.as('vector'))
    .select(sql<string | null>`case when v3_vectors.body is null then v3_messages.content end`.as('content')) as any;
}

/**
 * The event loop is never held for long by a build or a catch-up: rows are
 * read a chunk at a time (a chunk's read is synchronous on SQLite) and added
 * in slices of at most STEP_MS, each followed by a turn of the event loop.
 */
const STEP_MS = 4;
const yieldToLoop = () => new Promise<void>((r) => setImmediate(r));

/**
 * A loop's pace: `due()` (cheap; checked every so many iterations) says a
 * slice has run STEP_MS, and `pause()` then yields a turn of the event loop.
 * On SQLite a query's `await` is no turn of the loop (the read is
 * synchronous), so a search's phases, queries included, pause explicitly.
 */
function pacer() {
  let t = performance.now();
  return {
    due: () => performance.now() - t > STEP_MS,
    pause: async () => {
      await yieldToLoop();
      t = performance.now();
    },
  };
}

async function addAll(ix: WsIndex, rows: any[]): Promise<void> {
  const pace = pacer();
  for (let i = 0; i < rows.length; i++) {
    add(ix, rows[i]);
    if ((i & 63) === 63 && pace.due()) await pace.pause();
  }
}

/**
 * Rows with `seq` above `after`, in seq order, a page at a time (keyset on
 * seq) with a turn of the event loop between pages. `seq` is unique only
 * within a process: a full page's trailing rows of its last seq are left to
 * the next page, which starts at that seq (one seq filling a page is read
 * whole), so rows sharing a seq across a page boundary are neither skipped
 * nor read twice. `query(op, seq)` selects rows by `seq op seq`, ordered by seq.
 */
export async function* bySeq<R extends { seq: unknown }>(query: (op: '>' | '>=' | '=', seq: number) => any, after: number, page: number): AsyncGenerator<R[]> {
  let op: '>' | '>=' = '>';
  for (;;) {
    const rows: R[] = await query(op, after).limit(page).execute();
    if (rows.length < page) {
      if (rows.length) yield rows;
      return;
    }
    const last = Number(rows[rows.length - 1]!.seq);
    let cut = rows.length;
    while (cut > 0 && Number(rows[cut - 1]!.seq) === last) cut--;
    if (cut > 0) {
      yield rows.slice(0, cut);
      op = '>=';
    } else {
      const tie: R[] = await query('=', last).execute();
      if (tie.length) yield tie;
      op = '>';
    }
    after = last;
    await yieldToLoop();
  }
}

/** The `id, seq` of a workspace's rows of `table` with `seq` above `after` (a catch-up's trailing window can hold thousands). */
function idsSince(ctx: Ctx, table: 'v3_messages' | 'v3_vectors', workspace: string, after: number): AsyncGenerator<Array<{ id: string; seq: unknown }>> {
  const query = (op: string, seq: number) =>
    (ctx.storage.db as any).selectFrom(table).select(['id', 'seq']).where('workspace', '=', workspace).where('seq', op, seq).orderBy('seq');
  return bySeq(query, after, ctx.storage.dialect.kind === 'sqlite' ? ID_PAGE.sqlite : ID_PAGE.postgres);
}
/** Pages of ids read by `idsSince` (a SQLite page is read synchronously: a few milliseconds). */
const ID_PAGE = { sqlite: 2_000, postgres: 5_000 } as const;

/** The index rows of `ids` (by primary key: the workspace is checked here, which keeps SQLite off the workspace's seq index). */
async function rowsById(ctx: Ctx, workspace: string, ids: string[]): Promise<any[]> {
  const rows: any[] = await rowsQuery(ctx).where('v3_messages.id', 'in', ids).orderBy('v3_messages.seq').execute();
  return rows.filter((r) => r.workspace === workspace);
}

async function refresh(ctx: Ctx, workspace: string, ix: WsIndex): Promise<void> {
  await refreshMessages(ctx, workspace, ix);
  await refreshVectors(ctx, workspace, ix);
}

/**
 * Embeddings of messages the index holds without one: vectors are written by
 * the batch's ingest job after the messages (a message is found by its text
 * until then, as the reference leaves pending embeddings out of semantic
 * search). Read by `v3_vectors.seq` with the same trailing window as messages.
 */
async function refreshVectors(ctx: Ctx, workspace: string, ix: WsIndex): Promise<void> {
  const window = ctx.storage.dialect.kind === 'postgres' ? REREAD_US.postgres : REREAD_US.sqlite;
  const missing: string[] = [];
  let vhw = ix.vhw;
  for await (const recent of idsSince(ctx, 'v3_vectors', workspace, ix.vhw - window)) {
    for (const r of recent) {
      const row = ix.rowOf.get(r.id);
      if (row !== undefined && ix.invScale[row] === 0 && ix.alive[row] === 1) missing.push(r.id);
      vhw = Math.max(vhw, Number(r.seq));
    }
  }
  ix.vhw = vhw;
  const pace = pacer();
  for (let i = 0; i < missing.length; i += 500) {
    const rows: any[] = await ctx.storage.db
      .selectFrom('v3_vectors')
      .select(['id', 'q8'])
      .select(sql<Uint8Array | null>`case when q8 is null then vector end`.as('vector'))
      .where('id', 'in', missing.slice(i, i + 500))
      .execute();
    for (let k = 0; k < rows.length; k++) {
      setStored(ix, ix.rowOf.get(rows[k].id)!, rows[k]);
      if ((k & 63) === 63 && pace.due()) await pace.pause();
    }
    await pace.pause();
  }
}

async function refreshMessages(ctx: Ctx, workspace: string, ix: WsIndex): Promise<void> {
  if (ix.hw < 0) {
    // Vectors written from here on are read again after the build.
    const v: any = await ctx.storage.db.selectFrom('v3_vectors').select((eb) => eb.fn.max('seq').as('m')).where('workspace', '=', workspace).executeTakeFirst();
    ix.vhw = v?.m == null ? -1 : Number(v.m);
    // First build: every message, in seq order, a chunk at a time.
    const chunk = ctx.storage.dialect.kind === 'sqlite' ? SQLITE_CHUNK : CHUNK;
    const query = (op: string, seq: number) => rowsQuery(ctx).where('v3_messages.workspace', '=', workspace).where('v3_messages.seq', op, seq).orderBy('v3_messages.seq');
    let after = -1;
    for await (const rows of bySeq<any>(query, -1, chunk)) {
      await addAll(ix, rows);
      after = Math.max(after, Number(rows[rows.length - 1].seq));
    }
    ix.hw = Math.max(after, 0);
    return;
  }
  // Since the last refresh, and the ids of a trailing window again (late commits).
  const missing: string[] = [];
  let hw = ix.hw;
  for await (const recent of idsSince(ctx, 'v3_messages', workspace, ix.hw - (ctx.storage.dialect.kind === 'postgres' ? REREAD_US.postgres : REREAD_US.sqlite))) {
    for (const r of recent) {
      if (!ix.rowOf.has(r.id)) missing.push(r.id);
      hw = Math.max(hw, Number(r.seq));
    }
  }
  for (let i = 0; i < missing.length; i += 500) {
    await addAll(ix, await rowsById(ctx, workspace, missing.slice(i, i + 500)));
    await yieldToLoop();
  }
  ix.hw = hw;
}

async function indexFor(ctx: Ctx, workspace: string): Promise<WsIndex> {
  let byWs = indexes.get(ctx.storage);
  if (!byWs) indexes.set(ctx.storage, (byWs = new Map()));
  let ix = byWs.get(workspace);
  if (!ix || Date.now() - ix.builtAt > REBUILD_MS) byWs.set(workspace, (ix = empty()));
  // One refresh at a time per workspace; concurrent searches share it.
  while (ix.refreshing) await ix.refreshing;
  ix.refreshing = refresh(ctx, workspace, ix).finally(() => (ix!.refreshing = undefined));
  await ix.refreshing;
  return ix;
}

/** The k best (score, row) pairs of a stream, as a min-heap on score. */
class TopK {
  scores: number[] = [];
  rows: number[] = [];
  constructor(private k: number) {}
  push(score: number, row: number): void {
    const s = this.scores;
    if (s.length < this.k) {
      s.push(score);
      this.rows.push(row);
      let i = s.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (s[p]! <= s[i]!) break;
        this.swap(i, p);
        i = p;
      }
    } else if (score > s[0]!) {
      s[0] = score;
      this.rows[0] = row;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < s.length && s[l]! < s[m]!) m = l;
        if (r < s.length && s[r]! < s[m]!) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
  }
  private swap(a: number, b: number) {
    [this.scores[a], this.scores[b]] = [this.scores[b]!, this.scores[a]!];
    [this.rows[a], this.rows[b]] = [this.rows[b]!, this.rows[a]!];
  }
}

/**
 * Hybrid search of a workspace's messages (optionally one session's or one
 * peer's, and with `only`, the messages whose ids it returns: a filter's
 * matches, read from the database) through the index: bm25-style weights of the query's stems over the
 * messages in scope, and cosine similarity (int8 pre-rank of all, exact
 * re-rank of the best `max(200, 20 × limit)`), fused by reciprocal rank
 * fusion, ties to the newer message. Returns the rows read back from the
 * database, best first.
 */
export async function indexedSearch(
  ctx: Ctx,
  workspace: string,
  scope: { session?: string; peer?: string },
  query: string,
  qv: Float32Array | undefined,
  limit: number,
  only?: () => Promise<string[]>,
): Promise<any[]> {
  // The filter's matches are read before the index catches up, so every match is in the index.
  const matching = only ? await only() : undefined;
  const ix = await indexFor(ctx, workspace);
  const session = scope.session === undefined ? -1 : (ix.names.get(scope.session) ?? -2);
  const peer = scope.peer === undefined ? -1 : (ix.names.get(scope.peer) ?? -2);
  if (session === -2 || peer === -2) return [];
  // The rows this search ranks: those of the index now (a concurrent search's catch-up may add more while this one pauses).
  const n = ix.ids.length;
  const pace = pacer();
  let allowed: Uint8Array | undefined;
  if (matching) {
    allowed = new Uint8Array(n);
    for (let i = 0; i < matching.length; i++) {
      const row = ix.rowOf.get(matching[i]!);
      if (row !== undefined && row < n) allowed[row] = 1;
      if ((i & 1023) === 1023 && pace.due()) await pace.pause();
    }
  }
  const inScope = (row: number) =>
    ix.alive[row] === 1 && (session < 0 || ix.session[row] === session) && (peer < 0 || ix.peer[row] === peer) && (allowed === undefined || allowed[row] === 1);
  let total = 0;
  for (let row = 0; row < n; row++) {
    if (inScope(row)) total++;
    if ((row & 4095) === 4095 && pace.due()) await pace.pause();
  }
  if (!total) return [];
  const keep = Math.max(10, limit + 5);

  // Full text: scores accumulated in an array over the rows the query's stems touch, the best kept by a heap.
  const scores = new Float64Array(n);
  const touched: number[] = [];
  for (const t of queryTerms(query)) {
    const p = ix.postings.get(t);
    if (!p) continue;
    let df = 0;
    for (const r of p) if (r < n && inScope(r)) df++;
    if (!df) continue;
    const idf = Math.log(1 + (total - df + 0.5) / (df + 0.5));
    for (const r of p) {
      if (r >= n || !inScope(r)) continue;
      if (scores[r] === 0) touched.push(r);
      scores[r] += idf;
    }
  }
  const best = new TopK(keep * 2);
  // Ties go to the newer message: a tiny bonus by row (rows are in seq order) breaks them.
  for (const r of touched) best.push(scores[r]! + r * 1e-12, r);
  const textTop: Array<[number, number]> = best.rows.map((r) => [r, scores[r]!] as [number, number]).sort((a, b) => b[1] - a[1] || ix.seqs[b[0]]! - ix.seqs[a[0]]!);
  const textScore = new Map(textTop);

  // Vectors: int8 pre-rank over the scope, VEC_SLICE rows at a time with a turn of the event loop between slices.
  let vecRows: number[] = [];
  if (qv && ix.dims === qv.length) {
    const d = ix.dims;
    const top = new TopK(Math.max(200, 20 * limit));
    let max = 0;
    for (let i = 0; i < d; i++) max = Math.max(max, Math.abs(qv[i]!));
    for (let from = 0; from < n; from += VEC_SLICE) {
      if (from) await pace.pause();
      const to = Math.min(n, from + VEC_SLICE);
      // Read after each pause: a catch-up may have grown the store (and another search may have used the kernel's memory).
      if (ix.kernel && ix.dims === KERNEL_DIMS) {
        const l = layout(ix.alive.length);
        const mem = ix.kernel.memory.buffer;
        const q16 = new Int16Array(mem, 0, d);
        for (let i = 0; i < d; i++) q16[i] = max > 0 ? Math.round((qv[i]! * 32767) / max) : 0;
        const rows = new Int32Array(mem, ROWS_AT, ix.alive.length);
        let m = 0;
        for (let row = from; row < to; row++) if (ix.invScale[row] !== 0 && inScope(row)) rows[m++] = row;
        ix.kernel.dot8(l.v8, ROWS_AT, m, 0, l.out);
        const out = new Int32Array(mem, l.out, m);
        for (let k = 0; k < m; k++) top.push(out[k]! * ix.invScale[rows[k]!]!, rows[k]!);
      } else {
        const q = ix.q8;
        for (let row = from; row < to; row++) {
          const inv = ix.invScale[row]!;
          if (inv === 0 || !inScope(row)) continue;
          let s = 0;
          const base = row * d;
          for (let i = 0; i < d; i++) s += q[base + i]! * qv[i]!;
          top.push(s * inv, row);
        }
      }
    }
    vecRows = top.rows;
    await pace.pause();
  }

  // Read the candidates back: deleted ones are gone (and leave the index), vectors are exact.
  const wanted = [...new Set([...textTop.map((e) => e[0]), ...vecRows])].map((r) => ix.ids[r]!);
  const fetched = new Map<string, any>();
  for (let i = 0; i < wanted.length; i += 500) {
    // By primary key only (the workspace checked here): with `workspace = ?` SQLite scans the workspace's seq index.
    const rows: any[] = await ctx.storage.db
      .selectFrom('v3_messages')
      .leftJoin('v3_vectors', 'v3_vectors.id', 'v3_messages.id')
      .selectAll('v3_messages')
      .select(['v3_vectors.vector'])
      .where('v3_messages.id', 'in', wanted.slice(i, i + 500))
      .execute();
    for (const r of rows) if (r.workspace === workspace) fetched.set(r.id, r);
    await pace.pause();
  }
  for (const id of wanted) if (!fetched.has(id)) ix.alive[ix.rowOf.get(id)!] = 0;

  const order = (id: string) => -Number(fetched.get(id).seq);
  const textHits = textTop
    .map((e) => ix.ids[e[0]]!)
    .filter((id) => fetched.has(id))
    .slice(0, keep)
    .map((id) => ({ key: id, order: order(id), score: textScore.get(ix.rowOf.get(id)!)! }));
  const vectorHits = qv
    ? vecRows
        .map((r) => ix.ids[r]!)
        .filter((id) => fetched.get(id)?.vector)
        .map((id) => ({ key: id, order: order(id), score: dot(qv, bufferToVector(fetched.get(id).vector)) }))
        .sort((a, b) => b.score - a.score || a.order - b.order)
        .slice(0, keep)
    : [];
  return reciprocalRankFusion([textHits, vectorHits], limit).map((h) => fetched.get(h.key as string));
}
