import { sql, type Kysely } from 'kysely';
import type { NewJob, TaskHandler } from '@svc/queue';
import type { Ctx } from '../context.ts';
import type { MemoryConfig } from '../../config.ts';
import { createLlm, llmSettings, type LlmClient } from '../../chat/llm.ts';
import { deriveFactsPrompt, parseNumberedList } from '../../chat/prompts.ts';
import { extractFacts } from '../../chat/extract-facts.ts';
import { DUPLICATE_COSINE } from '../facts.ts';
import { bufferToVector, dot, vectorToBuffer } from '../../search/embedding.ts';
import { indexBody } from '../../search/text.ts';
import { quantize } from './message-index.ts';
import { nextSeq } from '../values.ts';
import { insertRows, type RowSet } from './bulk.ts';
import { embedTexts, storeVectors } from './recall.ts';
import { publishEvent, webhookTasks, type WebhookSettings } from './webhooks.ts';
import { estimateTokens, meta, nanoid } from './util.ts';

/**
 * The v3 API's background reasoning, as the reference's deriver queue:
 * every message yields "representation" work for each peer observing its
 * sender (the sender itself unless `observe_me` is false, and members with
 * `observe_others`), sessions get short and long summaries every N messages,
 * and `schedule_dream` consolidates a peer's conclusions. Each unit is a row
 * of `v3_work` (what `queue/status` counts) and a durable job that carries
 * the row's id; both are written in the transaction of the messages.
 */
export const DERIVE_TASK = 'memory_v3_derive';
export const SUMMARY_TASK = 'memory_v3_summary';
export const DREAM_TASK = 'memory_v3_dream';

/** The reference's defaults (settings.SUMMARY.MESSAGES_PER_SHORT_SUMMARY / _LONG_SUMMARY). */
export const MESSAGES_PER_SHORT_SUMMARY = 20;
export const MESSAGES_PER_LONG_SUMMARY = 60;
/** Token caps of the two summaries (the reference's MAX_TOKENS_SHORT / MAX_TOKENS_LONG). */
const SHORT_SUMMARY_TOKENS = 1000;
const LONG_SUMMARY_TOKENS = 4000;
/** Peer cards hold at most this many entries (the reference caps them at 40). */
export const PEER_CARD_MAX = 40;

type Config = Record<string, any>;
const enabled = (...levels: Array<Config | undefined>) => {
  for (const c of levels) if (c && typeof c.enabled === 'boolean') return c.enabled;
  return true;
};

interface Unit {
  workspace: string;
  session?: string;
  observer?: string;
  sender?: string;
}

export interface WorkItem {
  task: string;
  unit: Unit;
  payload: Record<string, unknown>;
  queueName?: string;
  /** The index, in its batch, of the message this unit is about (message work only). */
  at?: number;
}

/** A representation unit: `observer` reasons about `sender`'s message (one named queue per pair, so conclusions arrive in message order). */
function deriveItem(workspace: string, session: string, messageId: string, observer: string, sender: string, at?: number): WorkItem {
  return { task: DERIVE_TASK, unit: { workspace, session, observer, sender }, payload: { workspace, session, message_id: messageId, observer, observed: sender }, queueName: `v3:${workspace}:${observer}:${sender}`, at };
}

function summaryItem(workspace: string, session: string, type: string, upto: number, messageId: string, at?: number): WorkItem {
  return { task: SUMMARY_TASK, unit: { workspace, session }, payload: { workspace, session, summary_type: type, upto, message_id: messageId }, queueName: `v3-summary:${workspace}:${session}`, at };
}

/** The `v3_work` rows of work items (ids given here) and their jobs, each carrying its row's id. */
export function workRowsAndJobs(ctx: Ctx, items: WorkItem[]): { rows: RowSet; jobs: NewJob[] } {
  const now = ctx.storage.dialect.timestamp(new Date());
  const rows: unknown[][] = [];
  const jobs: NewJob[] = [];
  for (const it of items) {
    const id = nanoid();
    rows.push([id, it.unit.workspace, it.unit.session ?? null, it.unit.observer ?? null, it.unit.sender ?? null, it.task, 'pending', now]);
    jobs.push({ task: it.task, payload: { ...it.payload, work_id: id }, opts: { maxAttempts: 5, ...(it.queueName ? { queueName: it.queueName } : {}) } });
  }
  return { rows: { table: 'v3_work', columns: WORK_COLUMNS, rows }, jobs };
}
const WORK_COLUMNS = ['id', 'workspace', 'session', 'observer', 'sender', 'task', 'status', 'created_at'] as const;
const QUEUED_COLUMNS = [...WORK_COLUMNS, 'units'] as const;

/**
 * A message batch's ingest job: the messages' embeddings (and their stems)
 * into `v3_vectors`, then its work units, each a `v3_work` row and a job.
 * The request writes only the messages, one `queued` row per kind of unit
 * (task, observer, sender; `units` counts them, so `queue/status` is exact
 * from the start) and this job, in the messages' transaction. The jobs of
 * a workspace run one at a time, in commit order, so the units of each
 * (observer, observed) queue keep the messages' order across batches.
 */
export const INGEST_TASK = 'memory_v3_ingest';

export interface IngestPayload {
  workspace: string;
  session: string;
  /** The batch's message ids, in order. */
  ids: string[];
  /** Queued rows: [id, task, observer, sender]. */
  groups: Array<[string, string, string | null, string | null]>;
  /** Units in planned order: [group, message index] (summaries add [type, upto]). */
  work: Array<[number, number] | [number, number, string, number]>;
}

/** The queued rows of a batch's work items and the ingest job's payload. */
export function queuedWork(ctx: Ctx, workspace: string, session: string, ids: string[], items: WorkItem[]): { rows: RowSet; payload: IngestPayload } {
  const now = ctx.storage.dialect.timestamp(new Date());
  const byKey = new Map<string, number>();
  const rows: unknown[][] = [];
  const groups: IngestPayload['groups'] = [];
  const work: IngestPayload['work'] = [];
  for (const it of items) {
    const key = `${it.task}\u0000${it.unit.observer ?? ''}\u0000${it.unit.sender ?? ''}`;
    let g = byKey.get(key);
    if (g === undefined) {
      byKey.set(key, (g = groups.length));
      const id = nanoid();
      groups.push([id, it.task, it.unit.observer ?? null, it.unit.sender ?? null]);
      rows.push([id, workspace, session, it.unit.observer ?? null, it.unit.sender ?? null, it.task, 'queued', now, 0]);
    }
    (rows[g]![8] as number)++;
    work.push(it.task === SUMMARY_TASK ? [g, it.at!, it.payload.summary_type as string, it.payload.upto as number] : [g, it.at!]);
  }
  return { rows: { table: 'v3_work', columns: QUEUED_COLUMNS, rows }, payload: { workspace, session, ids, groups, work } };
}

const VECTOR_COLUMNS = ['id', 'workspace', 'vector', 'body', 'seq', 'q8'] as const;

export async function ingest(p: IngestPayload, c: Ctx): Promise<void> {
  const { db } = c.storage;
  const pg = c.storage.dialect.kind === 'postgres';
  const { workspace, session, ids } = p;
  // Embeddings first, outside the transaction (a provider may be slow); a message deleted since is skipped.
  // By primary key only: with `workspace = ?` beside it SQLite's planner walked the workspace's (workspace, …) index
  // instead, reading every message of the workspace per batch (the ingest slowed as the workspace grew).
  const messages = ids.length ? (await db.selectFrom('v3_messages').select(['id', 'workspace', 'content']).where('id', 'in', ids).execute()).filter((m: any) => m.workspace === workspace) : [];
  const stored = new Set(messages.length ? (await db.selectFrom('v3_vectors').select('id').where('id', 'in', messages.map((m: any) => m.id)).execute()).map((r: any) => r.id) : []);
  const todo = messages.filter((m: any) => !stored.has(m.id) && String(m.content).trim());
  const vectors = await embedTexts(c, todo.map((m: any) => m.content));
  const vectorRows: unknown[][] = [];
  todo.forEach((m: any, i) => {
    if (vectors[i]) vectorRows.push([m.id, workspace, vectorToBuffer(vectors[i]!), indexBody(m.content), nextSeq(), quantize(vectors[i]!)]);
  });
  await db.transaction().execute(async (trx) => {
    // The session row is shared-locked: its deactivation (which precedes its deletion) waits for this commit,
    // so a deleted session's messages get no vectors after the deletion removed theirs.
    const s = await sql<{ is_active: unknown }>`select is_active from v3_sessions where workspace = ${workspace} and name = ${session}${pg ? sql` for share` : sql``}`.execute(trx);
    const active = s.rows[0] && (s.rows[0].is_active === true || s.rows[0].is_active === 1);
    if (!active) return;
    // The queued rows taken now: a job run again after its commit (the process died before completing it) finds none.
    const taken = p.groups.length ? new Set((await trx.deleteFrom('v3_work').where('id', 'in', p.groups.map((g) => g[0])).where('status', '=', 'queued').returning('id').execute()).map((r: any) => r.id)) : new Set<string>();
    const items: WorkItem[] = [];
    for (const [g, at, type, upto] of p.work) {
      const [id, task, observer, sender] = p.groups[g]!;
      if (!taken.has(id) || ids[at] === undefined) continue;
      items.push(task === SUMMARY_TASK ? summaryItem(workspace, session, type!, upto!, ids[at]!) : deriveItem(workspace, session, ids[at]!, observer!, sender!));
    }
    const { rows, jobs } = workRowsAndJobs(c, items);
    await insertRows(trx, c.storage, [{ table: 'v3_vectors', columns: VECTOR_COLUMNS, rows: vectorRows, ignoreExisting: true }, rows]);
    if (jobs.length) await c.queue.addMany(jobs, trx);
  });
  c.queue.wake();
}

/** Work units and their jobs, written in the caller's transaction: the rows in one statement, the jobs in one more. */
async function addWorks(trx: Kysely<any>, ctx: Ctx, items: WorkItem[]) {
  if (!items.length) return;
  const { rows, jobs } = workRowsAndJobs(ctx, items);
  await insertRows(trx, ctx.storage, [rows]);
  await ctx.queue.addMany(jobs, trx);
}

async function addWork(trx: Kysely<any>, ctx: Ctx, task: string, unit: Unit, payload: Record<string, unknown>, queueName?: string) {
  await addWorks(trx, ctx, [{ task, unit, payload, queueName }]);
}

/** What the work of new messages depends on: workspace and session configuration, the active members' session configuration, and the senders' peer configuration. */
export interface EnqueueState {
  wsConf: Config;
  sConf: Config;
  /** Active members: peer → session-level configuration. */
  members: Map<string, Config>;
  /** Peer-level configuration, at least of every sender. */
  peerConfs: Map<string, Config>;
}

/**
 * The work that new messages cause: for each message a representation unit
 * per observer of its sender (in its (observer, observed) named queue) unless
 * reasoning is off, and summaries at the configured intervals.
 */
export function planMessageWork(
  state: EnqueueState,
  workspace: string,
  session: string,
  rows: Array<{ id: string; peer: string; seq_in_session: number }>,
  messageConfigs: Array<Config | null | undefined>,
): WorkItem[] {
  const { wsConf, sConf, members: conf, peerConfs } = state;
  const work: WorkItem[] = [];
  for (let i = 0; i < rows.length; i++) {
    const m = rows[i]!;
    if (!enabled(messageConfigs[i]?.reasoning, sConf.reasoning, wsConf.reasoning)) continue;
    const observers: string[] = [];
    const own = conf.get(m.peer) ?? {};
    const observeMe = own.observe_me ?? peerConfs.get(m.peer)?.observe_me;
    if (observeMe !== false) observers.push(m.peer);
    for (const [peer, c] of conf) if (peer !== m.peer && c.observe_others === true && observeMe !== false) observers.push(peer);
    // One named queue per (observer, observed): conclusions arrive in message order, so deduplication sees earlier ones.
    for (const observer of observers) work.push(deriveItem(workspace, session, m.id, observer, m.peer, i));
  }
  if (!enabled(sConf.summary, wsConf.summary)) return work;
  const short = Number(sConf.summary?.messages_per_short_summary ?? wsConf.summary?.messages_per_short_summary ?? MESSAGES_PER_SHORT_SUMMARY);
  const long = Number(sConf.summary?.messages_per_long_summary ?? wsConf.summary?.messages_per_long_summary ?? MESSAGES_PER_LONG_SUMMARY);
  rows.forEach((m, i) => {
    for (const [type, every] of [['short', short], ['long', long]] as const) {
      if (every > 0 && m.seq_in_session % every === 0) work.push(summaryItem(workspace, session, type, m.seq_in_session, m.id, i));
    }
  });
  return work;
}

export async function enqueueDream(ctx: Ctx, workspace: string, observer: string, observed: string, dreamType: string, session: string | null) {
  await ctx.storage.db.transaction().execute((trx) => addWork(trx, ctx, DREAM_TASK, { workspace, session: session ?? undefined, observer, sender: observed }, { workspace, observer, observed, dream_type: dreamType }, `v3:${workspace}:${observer}:${observed}`));
  ctx.queue.wake();
}

async function setStatus(db: Kysely<any>, id: string | undefined, status: 'pending' | 'in_progress' | 'completed') {
  if (id) await db.updateTable('v3_work').set({ status }).where('id', '=', id).execute();
}

const QUEUE_TYPE: Record<string, string> = { [DERIVE_TASK]: 'representation', [SUMMARY_TASK]: 'summary', [DREAM_TASK]: 'dream' };

/**
 * Wraps a task so its work unit shows in_progress while it runs and completed
 * after; when it was the last open unit of its kind for its session and
 * observer/observed pair, `queue.empty` goes to the workspace's webhooks.
 */
function tracked(ctx: () => Ctx, hooks: WebhookSettings, run: (p: any, c: Ctx) => Promise<void>): TaskHandler {
  return async (p, job) => {
    const c = ctx();
    await setStatus(c.storage.db, p.work_id, 'in_progress');
    try {
      await run(p, c);
    } catch (err) {
      // Back to pending while the queue will try again; a unit whose last try failed is done, so the status drains.
      await setStatus(c.storage.db, p.work_id, job.attempt >= job.maxAttempts ? 'completed' : 'pending').catch(() => {});
      throw err;
    }
    await setStatus(c.storage.db, p.work_id, 'completed');
    if (!p.work_id || !hooks.secret) return;
    const w = await c.storage.db.selectFrom('v3_work').selectAll().where('id', '=', p.work_id).executeTakeFirst();
    if (!w) return;
    const same = (q: any, col: string, v: unknown) => (v == null ? q.where(col, 'is', null) : q.where(col, '=', v));
    let open = c.storage.db.selectFrom('v3_work').select('id').where('workspace', '=', w.workspace).where('task', '=', w.task).where('status', '<>', 'completed') as any;
    open = same(same(same(open, 'session', w.session), 'observer', w.observer), 'sender', w.sender);
    if (await open.limit(1).executeTakeFirst()) return;
    await publishEvent(c, hooks, w.workspace, 'queue.empty', {
      workspace_id: w.workspace,
      queue_type: QUEUE_TYPE[w.task] ?? w.task,
      session_id: w.session ?? null,
      observer: w.observer ?? null,
      observed: w.sender ?? null,
    });
  };
}

/** "The user is a nurse." about alice → "alice is a nurse." */
export function aboutPeer(fact: string, peer: string): string {
  return fact.replace(/^The user's\b/, `${peer}'s`).replace(/^The user\b/, peer);
}

async function llmConclusions(llm: LlmClient, c: Ctx, p: any, seq: number): Promise<string[]> {
  const recent = await c.storage.db
    .selectFrom('v3_messages')
    .select(['peer', 'content'])
    .where('workspace', '=', p.workspace)
    .where('session', '=', p.session)
    .where('seq_in_session', '<=', seq as any)
    .orderBy('seq_in_session', 'desc')
    .limit(10)
    .execute();
  const conversation = recent.reverse().map((m: any) => `${m.peer}: ${m.content}`).join('\n');
  const answer = await llm.complete([{ role: 'user', content: deriveFactsPrompt(conversation) + `\nState facts about ${p.observed} only.` }]);
  return parseNumberedList(answer).map((f) => aboutPeer(f, p.observed));
}

/** Stores new conclusions of (observer, observed), skipping those already known (same text or cosine ≥ 0.9). */
export async function storeConclusions(
  c: Ctx,
  input: { workspace: string; observer: string; observed: string; session: string | null; level?: string },
  contents: string[],
  dedupe = true,
): Promise<any[]> {
  const { db, dialect: d } = c.storage;
  if (!contents.length) return [];
  const vectors = await embedTexts(c, contents);
  return db.transaction().execute(async (trx) => {
    const known = await trx
      .selectFrom('v3_conclusions')
      .leftJoin('v3_vectors', 'v3_vectors.id', 'v3_conclusions.id')
      .select(['v3_conclusions.content', 'v3_vectors.vector'])
      .where('v3_conclusions.workspace', '=', input.workspace)
      .where('observer', '=', input.observer)
      .where('observed', '=', input.observed)
      .orderBy('v3_conclusions.seq', 'desc')
      .limit(2000)
      .execute();
    const seen = new Set(known.map((k: any) => String(k.content).toLowerCase()));
    const knownVecs = known.filter((k: any) => k.vector).map((k: any) => bufferToVector(k.vector));
    const rows: any[] = [];
    contents.forEach((content, i) => {
      const v = vectors[i];
      if (dedupe && seen.has(content.toLowerCase())) return;
      if (dedupe && v && knownVecs.some((k) => dot(k, v) >= DUPLICATE_COSINE)) return;
      seen.add(content.toLowerCase());
      if (v) knownVecs.push(v);
      rows.push({
        id: nanoid(),
        workspace: input.workspace,
        observer: input.observer,
        observed: input.observed,
        session: input.session,
        content,
        level: input.level ?? 'explicit',
        metadata: d.json({}),
        created_at: d.timestamp(new Date()),
        seq: nextSeq(),
        _v: v,
      });
    });
    if (!rows.length) return [];
    await trx.insertInto('v3_conclusions').values(rows.map(({ _v, ...r }) => r)).execute();
    await storeVectors(trx, input.workspace, rows.map((r) => ({ id: r.id, vector: r._v, content: r.content })));
    return rows.map(({ _v, ...r }) => r);
  });
}

async function derive(p: any, c: Ctx, llm: LlmClient | undefined): Promise<void> {
  const m = await c.storage.db.selectFrom('v3_messages').selectAll().where('id', '=', p.message_id).executeTakeFirst();
  if (!m) return; // deleted since
  const facts = llm ? await llmConclusions(llm, c, p, Number(m.seq_in_session)) : extractFacts(m.content).map((f) => aboutPeer(f, p.observed));
  await storeConclusions(c, { workspace: p.workspace, observer: p.observer, observed: p.observed, session: p.session }, facts);
}

/** Extractive summary: each covered message's first sentence, newest kept when over the budget, after the previous summary. */
export function extractiveSummary(previous: string | undefined, messages: Array<{ peer: string; content: string }>, maxTokens: number): string {
  const lines = messages.map((m) => {
    const first = /^[^.!?\n]*[.!?]?/.exec(m.content.trim())?.[0] ?? m.content;
    const text = first.length > 200 ? first.slice(0, 197) + '...' : first;
    return `${m.peer}: ${text}`;
  });
  let out = [previous, ...lines].filter(Boolean) as string[];
  while (out.length > 1 && estimateTokens(out.join('\n')) > maxTokens) out = out.slice(1);
  return out.join('\n');
}

async function summarize(p: any, c: Ctx, llm: LlmClient | undefined): Promise<void> {
  const { db, dialect: d } = c.storage;
  const prev = await db.selectFrom('v3_summaries').selectAll().where('workspace', '=', p.workspace).where('session', '=', p.session).where('summary_type', '=', p.summary_type).executeTakeFirst();
  const from = prev ? Number(prev.message_seq) : 0;
  if (from >= p.upto) return;
  const msgs = await db
    .selectFrom('v3_messages')
    .select(['peer', 'content', 'seq_in_session', 'id'])
    .where('workspace', '=', p.workspace)
    .where('session', '=', p.session)
    .where('seq_in_session', '>', from as any)
    .where('seq_in_session', '<=', p.upto)
    .orderBy('seq_in_session')
    .execute();
  if (!msgs.length) return;
  const max = p.summary_type === 'long' ? LONG_SUMMARY_TOKENS : SHORT_SUMMARY_TOKENS;
  let content: string;
  if (llm) {
    const conversation = msgs.map((m: any) => `${m.peer}: ${m.content}`).join('\n');
    content = await llm.complete([
      {
        role: 'user',
        content: `Summarize the conversation below${prev ? ', continuing the previous summary' : ''} in at most ${max} tokens. ${p.summary_type === 'long' ? 'Be thorough.' : 'Be concise.'}\n\n${prev ? `Previous summary:\n${prev.content}\n\n` : ''}Conversation:\n${conversation}`,
      },
    ]);
  } else content = extractiveSummary(prev?.content, msgs as any[], max);
  const last = msgs[msgs.length - 1] as any;
  const row = {
    workspace: p.workspace,
    session: p.session,
    summary_type: p.summary_type,
    content,
    message_id: last.id,
    message_seq: Number(last.seq_in_session),
    token_count: estimateTokens(content),
    created_at: d.timestamp(new Date()),
  };
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('v3_summaries').where('workspace', '=', p.workspace).where('session', '=', p.session).where('summary_type', '=', p.summary_type).execute();
    await trx.insertInto('v3_summaries').values(row).execute();
  });
}

/**
 * A dream: near-duplicate conclusions of the pair are merged (the oldest
 * kept), and the peer card is rebuilt from the remaining ones (`card_refresh`
 * does only the latter).
 */
async function dream(p: any, c: Ctx): Promise<void> {
  const { db, dialect: d } = c.storage;
  const rows = await db
    .selectFrom('v3_conclusions')
    .leftJoin('v3_vectors', 'v3_vectors.id', 'v3_conclusions.id')
    .select(['v3_conclusions.id', 'v3_conclusions.content', 'v3_vectors.vector'])
    .where('v3_conclusions.workspace', '=', p.workspace)
    .where('observer', '=', p.observer)
    .where('observed', '=', p.observed)
    .orderBy('v3_conclusions.seq')
    .execute();
  const kept: Array<{ content: string; v?: Float32Array }> = [];
  const drop: string[] = [];
  for (const r of rows as any[]) {
    const v = r.vector ? bufferToVector(r.vector) : undefined;
    if (p.dream_type !== 'card_refresh' && v && kept.some((k) => k.v && dot(k.v, v) >= DUPLICATE_COSINE)) drop.push(r.id);
    else kept.push({ content: r.content, v });
  }
  const card = kept.slice(-PEER_CARD_MAX).map((k) => k.content);
  await db.transaction().execute(async (trx) => {
    if (drop.length) {
      await trx.deleteFrom('v3_vectors').where('id', 'in', drop).execute();
      await trx.deleteFrom('v3_conclusions').where('id', 'in', drop).execute();
    }
    if (card.length) await setPeerCard(trx, d, p.workspace, p.observer, p.observed, card);
  });
}

export async function setPeerCard(trx: Kysely<any>, d: Ctx['storage']['dialect'], workspace: string, observer: string, observed: string, card: string[]) {
  await trx.deleteFrom('v3_peer_cards').where('workspace', '=', workspace).where('observer', '=', observer).where('observed', '=', observed).execute();
  await trx.insertInto('v3_peer_cards').values({ workspace, observer, observed, card: d.json(card) }).execute();
}

export function v3ReasoningTasks(ctx: () => Ctx, config: MemoryConfig): Record<string, TaskHandler> {
  const llm = () => createLlm(llmSettings(config));
  const hooks = { secret: config.webhookSecret, allowPrivate: config.webhookAllowPrivate };
  return {
    [DERIVE_TASK]: tracked(ctx, hooks, (p, c) => derive(p, c, llm())),
    [SUMMARY_TASK]: tracked(ctx, hooks, (p, c) => summarize(p, c, llm())),
    [DREAM_TASK]: tracked(ctx, hooks, (p, c) => dream(p, c)),
    [INGEST_TASK]: (p) => ingest(p, ctx()),
    ...webhookTasks(),
  };
}
