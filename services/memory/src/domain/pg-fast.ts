import { sql, type Kysely } from 'kysely';
import type { Storage } from '@svc/storage';
import type { JobQueue } from '@svc/queue';
import { DERIVE_TASK } from './derivation-jobs.ts';

/**
 * PostgreSQL hot paths (message create and list): each is one statement,
 * sent as a named (prepared) query on the pool, so a request costs one round
 * trip instead of BEGIN / session check / INSERT / COMMIT.
 */

/** The session, if it belongs to the user of the app (the same scoping as findSession). */
const SESSION = sql`select s.id, s.metadata from sessions s join users u on u.id = s.user_id
  where s.id = ${sql.raw('$1')} and s.user_id = ${sql.raw('$2')} and u.app_id = ${sql.raw('$3')}`;

/** Statement texts, compiled once per storage: building and compiling the query on every request is CPU spent for nothing. */
const texts = new WeakMap<Storage, Map<string, string>>();
function textOf(storage: Storage, name: string, build: () => string): string {
  let m = texts.get(storage);
  if (!m) texts.set(storage, (m = new Map()));
  let t = m.get(name);
  if (t === undefined) m.set(name, (t = build()));
  return t;
}

async function run<R>(storage: Storage, name: string, text: string, values: unknown[]): Promise<R[]> {
  const r = await storage.pgPool!.query({ name, text, values });
  return r.rows as R[];
}

interface Row {
  id: string;
  session_id: string;
  is_user: boolean;
  content: string;
  metadata: string;
  created_at: Date | string;
  seq: number;
}

/**
 * Inserts the message if the session is the user's; a user message enqueues
 * its derivation job (named queue per user) in the same statement unless the
 * session opts out. Returns false when the session is not found.
 */
export async function createMessagePg(storage: Storage, queue: JobQueue, ids: { appId: string; userId: string; sessionId: string }, row: Row): Promise<boolean> {
  const base = [ids.sessionId, ids.userId, ids.appId, row.id, row.is_user, row.content, row.metadata, row.created_at, row.seq];
  if (!row.is_user || !queue.addSql) {
    const text = textOf(storage, 'create', () =>
      sql`with s as (${SESSION}),
      ins as (insert into messages (id, session_id, is_user, content, metadata, created_at, seq)
        select $4, s.id, $5, $6, $7::jsonb, $8, $9 from s returning id)
      select count(*)::int as n from ins`.compile(storage.db).sql);
    const [r] = await run<{ n: number }>(storage, 'memory_message_create', text, base);
    return r!.n === 1;
  }
  // The job's payload and names are parameters ($10..$12) so the statement text never changes.
  const addSql = queue.addSql.bind(queue);
  const text = textOf(storage, 'create_user', () => {
    const job = addSql(DERIVE_TASK, null, { maxAttempts: 5 }).compile(storage.db);
    return sql`with s as (${SESSION}),
    ins as (insert into messages (id, session_id, is_user, content, metadata, created_at, seq)
      select $4, s.id, $5, $6, $7::jsonb, $8, $9 from s returning id),
    job as (select ${sql.raw(jobCall(job.sql))} from ins, s where (s.metadata -> 'deriver_disabled') is distinct from 'true'::jsonb)
    select (select count(*) from ins)::int as n, (select count(*) from job)::int as jobs`.compile(storage.db).sql;
  });
  const payload = JSON.stringify({ message_id: row.id, session_id: ids.sessionId });
  const [r] = await run<{ n: number }>(storage, 'memory_message_create_user', text, [...base, payload, `derive:${row.id}`, `derive:${ids.userId}`]);
  return r!.n === 1;
}

/**
 * Rewrites the compiled add_job call so that payload, job key and queue name
 * come from $10, $11, $12 (its own literal parameters are constants: task,
 * run_at null, max attempts, priority).
 */
function jobCall(compiled: string): string {
  let i = 0;
  // Parameters in order: identifier, payload, run_at, max_attempts, job_key, queue_name, priority.
  const params = ['$TASK', '$10', 'null', '$MAX', '$11', '$12', '0'];
  return compiled.replace(/\$\d+/g, () => params[i++]!).replace('$TASK', `'${DERIVE_TASK}'`).replace('$MAX', '5');
}

/**
 * One page of a session's messages with the total, in one statement; the
 * session column tells a missing session (404) from an empty page.
 *
 * The count and the page each filter `messages` on the session id parameter
 * itself (gated by the session check), so the planner sees the value and
 * walks `messages_list` for that session: the count reads the session's
 * index entries and the page stops after `offset + size` rows. (A shared
 * `m` CTE over `session_id = (select id from s)` was materialised whole and
 * planned blind to the session: a sequential scan of every session's
 * messages and a sort, per request.) Filtered and unfiltered lists are
 * separate statements, so the unfiltered plan carries no `$6 is null or …`
 * condition for the planner to misjudge. `created_at` comes back as ISO
 * text with milliseconds (the precision the service writes), which
 * formatTimestamp takes as it is, instead of a Date built per row.
 */
export async function listMessagesPg(
  storage: Storage,
  ids: { appId: string; userId: string; sessionId: string },
  page: { size: number; offset: number; reverse: boolean; filter?: string },
): Promise<{ found: boolean; total: number; rows: Row[] }> {
  const filtered = page.filter !== undefined;
  const name = `memory_message_list${page.reverse ? '_desc' : ''}${filtered ? '_filtered' : ''}`;
  const text = textOf(storage, name, () => {
    const dir = page.reverse ? 'desc' : 'asc';
    const match = filtered ? 'm.session_id = $1 and m.metadata @> $6::jsonb' : 'm.session_id = $1';
    return sql`with s as (${SESSION})
    select (select count(*) from s)::int as found,
      (select count(*) from messages m where ${sql.raw(match)} and exists (select 1 from s))::int as total,
      p.*
    from (select 1) one left join lateral (
      select m.id, m.session_id, m.is_user, m.content, m.metadata,
        to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at
      from messages m where ${sql.raw(match)} and exists (select 1 from s)
      order by m.created_at ${sql.raw(dir)}, m.seq ${sql.raw(dir)} limit $4 offset $5) p on true`.compile(storage.db).sql;
  });
  const values: unknown[] = [ids.sessionId, ids.userId, ids.appId, page.size, page.offset];
  if (filtered) values.push(page.filter);
  const rows = await run<Row & { found: number; total: number }>(storage, name, text, values);
  const first = rows[0]!;
  return { found: first.found > 0, total: first.total, rows: first.id === null ? [] : rows };
}

export type { Kysely };
