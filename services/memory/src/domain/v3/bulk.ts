import { CompiledQuery, sql, type Kysely, type RawBuilder } from 'kysely';
import type { Storage } from '@svc/storage';

/** Rows for one table: values in `columns` order. */
export interface RowSet {
  table: string;
  columns: readonly string[];
  rows: unknown[][];
  /** Rows whose primary key exists already are skipped (SQLite `or ignore`, PostgreSQL `on conflict do nothing`). */
  ignoreExisting?: boolean;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

type Stmt = { run(...params: unknown[]): unknown };
/** Rows per SQLite insert statement (11 columns × 100 stays far below SQLite's 32,766 parameters). */
const SQLITE_ROWS = 100;
const sqliteStatements = new WeakMap<object, Map<string, Stmt>>();
const pgTexts = new Map<string, string>();

/**
 * Inserts the rows of several tables inside the caller's open transaction,
 * in the order given, without the query builder (whose compile of a
 * 1,000-parameter insert costs more than the insert):
 *  - SQLite: cached prepared multi-row inserts (up to SQLITE_ROWS rows each,
 *    a statement per row count) on the raw handle — the transaction holds
 *    SQLite's only connection, so the raw statements are part of it;
 *  - PostgreSQL: one statement for everything (every set but the last in a
 *    data-modifying CTE), one round trip; with `then` (an SQL expression,
 *    e.g. a job's enqueue) every set is a CTE and the statement selects it.
 */
export async function insertRows(trx: Kysely<any>, storage: Storage, sets: RowSet[], then?: RawBuilder<unknown>): Promise<void> {
  const live = sets.filter((s) => s.rows.length > 0);
  if (then && storage.dialect.kind === 'postgres') return insertRowsThen(trx, live, then);
  if (then) throw new Error('insertRows: `then` is for PostgreSQL');
  if (!live.length) return;
  if (storage.dialect.kind === 'sqlite') {
    const raw = storage.sqlite!;
    if (!raw.inTransaction) throw new Error('insertRows runs inside a transaction');
    let cache = sqliteStatements.get(raw);
    if (!cache) sqliteStatements.set(raw, (cache = new Map()));
    for (const s of live) {
      for (let i = 0; i < s.rows.length; i += SQLITE_ROWS) {
        const rows = s.rows.slice(i, i + SQLITE_ROWS);
        const key = `${s.table}(${s.columns.join(',')})x${rows.length}${s.ignoreExisting ? '!' : ''}`;
        let stmt = cache.get(key);
        if (!stmt) {
          const tuple = `(${s.columns.map(() => '?').join(', ')})`;
          stmt = raw.prepare(`insert${s.ignoreExisting ? ' or ignore' : ''} into ${quote(s.table)} (${s.columns.map(quote).join(', ')}) values ${rows.map(() => tuple).join(', ')}`) as Stmt;
          if (cache.size > 256) cache.clear();
          cache.set(key, stmt);
        }
        stmt.run(...rows.flat());
      }
    }
    return;
  }
  const key = live.map((s) => `${s.table}(${s.columns.join(',')})x${s.rows.length}${s.ignoreExisting ? '!' : ''}`).join(';');
  let text = pgTexts.get(key);
  if (!text) {
    let n = 0;
    const inserts = live.map((s) => {
      const tuples = s.rows.map(() => `(${s.columns.map(() => `$${++n}`).join(',')})`);
      return `insert into ${quote(s.table)} (${s.columns.map(quote).join(', ')}) values ${tuples.join(',')}${s.ignoreExisting ? ' on conflict do nothing' : ''}`;
    });
    const last = inserts.pop()!;
    text = inserts.length ? `with ${inserts.map((q, i) => `i${i} as (${q})`).join(', ')} ${last}` : last;
    if (pgTexts.size > 256) pgTexts.clear();
    pgTexts.set(key, text);
  }
  const params: unknown[] = [];
  for (const s of live) for (const r of s.rows) for (const v of r) params.push(v);
  await trx.executeQuery(CompiledQuery.raw(text, params));
}

/** PostgreSQL: the inserts as data-modifying CTEs of one statement that selects `then`. */
async function insertRowsThen(trx: Kysely<any>, live: RowSet[], then: RawBuilder<unknown>): Promise<void> {
  const q = await rowsThenStatement(trx, live, then);
  await trx.executeQuery(CompiledQuery.raw(q.text, q.params));
}

/**
 * The statement of insertRows(…, then) on PostgreSQL, for a caller running it on a connection of its own
 * (`db` compiles `then` and reads the tables' column types, once per process).
 */
export async function rowsThenStatement(db: Kysely<any>, sets: RowSet[], then: RawBuilder<unknown>): Promise<{ text: string; params: unknown[] }> {
  const live = sets.filter((s) => s.rows.length > 0);
  const trx = db;
  const tail = sql`select ${then}`.compile(trx);
  // Sets of plain values go as one JSON parameter each (below); a set holding binary values keeps a parameter per value.
  const asJson = live.map((s) => isPlain(s));
  const types = await Promise.all(live.map((s, i) => (asJson[i] ? columnTypes(trx, s.table) : undefined)));
  const key = live.map((s, i) => `${s.table}(${s.columns.join(',')})x${asJson[i] ? 'json' : s.rows.length}${s.ignoreExisting ? '!' : ''}`).join(';') + ';' + tail.sql;
  let text = pgTexts.get(key);
  let n = 0;
  for (let i = 0; i < live.length; i++) n += asJson[i] ? 1 : live[i]!.rows.length * live[i]!.columns.length;
  if (!text) {
    let k = 0;
    const inserts = live.map((s, i) => {
      const head = `insert into ${quote(s.table)} (${s.columns.map(quote).join(', ')}) `;
      const tail = s.ignoreExisting ? ' on conflict do nothing' : '';
      if (asJson[i]) {
        const t = types[i]!;
        const cols = s.columns.map((c, j) => (t.get(c) === 'text' ? `e->>${j}` : `(e->>${j})::${t.get(c) ?? 'text'}`));
        return `${head}select ${cols.join(', ')} from json_array_elements($${++k}::json) e${tail}`;
      }
      const tuples = s.rows.map(() => `(${s.columns.map(() => `$${++k}`).join(',')})`);
      return `${head}values ${tuples.join(',')}${tail}`;
    });
    const select = tail.sql.replace(/\$(\d+)/g, (_, d) => `$${Number(d) + n}`);
    text = inserts.length ? `with ${inserts.map((q, i) => `i${i} as (${q})`).join(', ')} ${select}` : select;
    if (pgTexts.size > 256) pgTexts.clear();
    pgTexts.set(key, text);
  }
  const params: unknown[] = [];
  live.forEach((s, i) => {
    if (asJson[i]) params.push(JSON.stringify(s.rows));
    else for (const r of s.rows) for (const v of r) params.push(v);
  });
  params.push(...tail.parameters);
  return { text, params };
}

/**
 * Whether a set's values survive a trip through JSON as the text PostgreSQL
 * casts back (strings, finite numbers, booleans, nulls, dates as ISO
 * strings; JSON columns hold their serialisation, cast back with `::jsonb`):
 * then its rows are one parameter, `json_array_elements` on the server,
 * instead of a bound parameter per value — the driver's per-parameter
 * encoding and the server's parse of a 1,000-parameter VALUES list were
 * most of a batch's statement cost.
 */
function isPlain(s: RowSet): boolean {
  for (const r of s.rows) {
    for (const v of r) {
      if (v === null || typeof v === 'string' || typeof v === 'boolean' || v instanceof Date) continue;
      if (typeof v === 'number' && Number.isFinite(v)) continue;
      return false;
    }
  }
  return true;
}

/**
 * Reads (once per process) the column types rowsThenStatement needs for these tables, so that a caller holding
 * a pooled connection never waits for a second one to read them.
 */
export async function primeColumnTypes(db: Kysely<any>, tables: string[]): Promise<void> {
  await Promise.all(tables.map((t) => columnTypes(db, t)));
}

/** Column types of a table in the connection's schema (`text`, `bigint`, `jsonb`, …), read once per process. */
const pgTypes = new Map<string, Promise<Map<string, string>>>();
function columnTypes(trx: Kysely<any>, table: string): Promise<Map<string, string>> {
  let t = pgTypes.get(table);
  if (!t) {
    t = sql<{ name: string; type: string }>`select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
        from pg_attribute a where a.attrelid = to_regclass(${quote(table)}) and a.attnum > 0 and not a.attisdropped`
      .execute(trx)
      .then((r) => new Map(r.rows.map((x) => [x.name, x.type === 'character varying' || x.type === 'text' ? 'text' : x.type])));
    t.catch(() => pgTypes.delete(table));
    pgTypes.set(table, t);
  }
  return t;
}
