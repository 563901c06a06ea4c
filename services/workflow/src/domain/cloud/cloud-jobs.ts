import type { Kysely } from 'kysely';
import { outputsSummary } from '../jobs.ts';
import { decode, safeColumnText, type JobStatus, type PromptRecord } from '../prompts.ts';

/** CloudJobStatus.status: the hosted API says `running` where the local one says `in_progress`. */
export type CloudStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
export const CLOUD_STATUSES: CloudStatus[] = ['pending', 'running', 'completed', 'failed', 'cancelled'];

export function cloudStatus(s: JobStatus): CloudStatus {
  return s === 'in_progress' ? 'running' : s;
}

/** Either vocabulary in a filter (`running` or `in_progress`) names the same stored status. */
export function storedStatus(s: string): JobStatus | undefined {
  if (s === 'running' || s === 'in_progress') return 'in_progress';
  return (['pending', 'completed', 'failed', 'cancelled'] as const).find((x) => x === s);
}

function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined || !Number.isFinite(ms) ? null : new Date(ms).toISOString();
}

/** Execution times from the recorded status messages when present (they are the engine's own). */
function times(r: PromptRecord): { start: number | null; end: number | null } {
  let start: number | null = r.startTime;
  let end: number | null = r.endTime;
  for (const [event, data] of r.statusMessages ?? []) {
    if (event === 'execution_start' && typeof data.timestamp === 'number') start = data.timestamp;
    else if (/^execution_(success|error|interrupted)$/.test(event) && typeof data.timestamp === 'number') end = data.timestamp;
  }
  return { start, end };
}

export function cloudJobStatus(r: PromptRecord): Record<string, unknown> {
  const t = times(r);
  const finished = r.status === 'completed' || r.status === 'failed' || r.status === 'cancelled';
  return {
    id: r.id,
    status: cloudStatus(r.status),
    progress: r.status === 'completed' ? 1 : 0,
    started_at: iso(t.start),
    completed_at: finished ? iso(t.end ?? r.endTime) : null,
  };
}

export function cloudPrompt(r: PromptRecord): Record<string, unknown> {
  const t = times(r);
  const finished = r.status === 'completed' || r.status === 'failed' || r.status === 'cancelled';
  return {
    id: r.id,
    status: cloudStatus(r.status),
    workflow: { prompt: r.prompt, extra_data: r.extraData },
    outputs: r.outputs ?? {},
    created_at: iso(r.createTime),
    completed_at: finished ? iso(t.end ?? r.endTime) : null,
  };
}

export function historyV2Entry(r: PromptRecord): Record<string, unknown> {
  const base = cloudPrompt(r);
  const t = times(r);
  const { preview } = outputsSummary(r.outputs as Record<string, Record<string, unknown>> | null);
  const out: Record<string, unknown> = { ...base, started_at: iso(t.start) };
  if (preview) out.preview_output = preview;
  return out;
}

/**
 * Marks a pending prompt cancelled in one statement. The claim also needs
 * `status = 'pending'`, so exactly one of them wins: a prompt cancelled here
 * never starts, and one claimed first is interrupted instead.
 */
export async function cancelPending(db: Kysely<any>, id: string, owner: string, now: number): Promise<boolean> {
  if (safeColumnText(id) === null) return false;
  const messages = [['execution_interrupted', { prompt_id: id, node_id: null, node_type: null, executed: [], timestamp: now }]];
  const r = await db
    .updateTable('prompts')
    .set({ status: 'cancelled', end_time: now, outputs: '{}', meta: '{}', status_messages: JSON.stringify(messages), sensitive: null, worker: null })
    .where('id', '=', id)
    .where('owner', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** History v2: every job of the owner, newest first, optionally of some statuses. */
export async function listHistoryV2(db: Kysely<any>, owner: string, q: { statuses?: JobStatus[]; limit: number; offset: number }): Promise<{ rows: PromptRecord[]; total: number }> {
  // An empty status list (`?status=,`) matches nothing; PostgreSQL refuses an empty IN ().
  if (q.statuses?.length === 0) return { rows: [], total: 0 };
  let base = db.selectFrom('prompts').where('owner', '=', owner);
  if (q.statuses) base = base.where('status', 'in', q.statuses);
  const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  let sel = base.selectAll().orderBy('create_time', 'desc').orderBy('id', 'desc').limit(q.limit);
  if (q.offset > 0) sel = sel.offset(q.offset);
  return { rows: (await sel.execute()).map(decode), total };
}
