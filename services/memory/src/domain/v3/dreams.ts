import type { Ctx } from '../context.ts';
import { enqueueDream } from './reasoning.ts';
import { notFound } from './util.ts';

/** `schedule_dream`: both peers must exist; the dream runs as a durable job (a work unit in queue/status). */
export async function scheduleDream(ctx: Ctx, workspace: string, r: { observer: string; observed?: string | null; dream_type: string; session_id?: string | null }) {
  const observed = r.observed ?? r.observer;
  for (const name of new Set([r.observer, observed])) {
    const p = await ctx.storage.db.selectFrom('v3_peers').select('name').where('workspace', '=', workspace).where('name', '=', name).executeTakeFirst();
    if (!p) throw notFound(`Peer ${name} not found in workspace ${workspace}`);
  }
  await enqueueDream(ctx, workspace, r.observer, observed, r.dream_type, r.session_id ?? null);
}
