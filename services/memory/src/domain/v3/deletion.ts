import type { Kysely } from 'kysely';
import type { Storage } from '@svc/storage';
import type { TaskHandler } from '@svc/queue';
import { DELETE_TASK } from './workspaces.ts';

/** Tables holding a session's rows (column `session`), deleted with it. */
const SESSION_TABLES = ['v3_messages', 'v3_session_peers', 'v3_summaries', 'v3_conclusions'] as const;
/** Every v3 table with a `workspace` column, children first. */
const WORKSPACE_TABLES = ['v3_vectors', 'v3_work', 'v3_scope_backfill', 'v3_messages', 'v3_session_peers', 'v3_summaries', 'v3_conclusions', 'v3_peer_cards', 'v3_webhooks', 'v3_sessions', 'v3_peers'] as const;

async function deleteSession(db: Kysely<any>, workspace: string, session: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const s = await trx.selectFrom('v3_sessions').select('is_active').where('workspace', '=', workspace).where('name', '=', session).executeTakeFirst();
    // Re-created under the same id since the delete was accepted? Not this job's to remove.
    if (!s || s.is_active === true || s.is_active === 1) return;
    for (const t of ['v3_messages', 'v3_conclusions']) {
      await trx.deleteFrom('v3_vectors').where('id', 'in', (eb: any) => eb.selectFrom(t).select('id').where('workspace', '=', workspace).where('session', '=', session)).execute();
    }
    await trx.deleteFrom('v3_work').where('workspace', '=', workspace).where('session', '=', session).execute();
    await trx.deleteFrom('v3_scope_backfill').where('workspace', '=', workspace).where('session', '=', session).execute();
    for (const t of SESSION_TABLES) await trx.deleteFrom(t).where('workspace', '=', workspace).where('session', '=', session).execute();
    await trx.deleteFrom('v3_sessions').where('workspace', '=', workspace).where('name', '=', session).execute();
  });
}

async function deleteWorkspace(db: Kysely<any>, workspace: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const t of WORKSPACE_TABLES) await trx.deleteFrom(t).where('workspace', '=', workspace).execute();
    await trx.deleteFrom('v3_workspaces').where('name', '=', workspace).execute();
  });
}

/** The background deletion of the v3 API (the reference's `deletion` queue task), one transaction per resource. */
export function v3Tasks(storage: Storage): Record<string, TaskHandler> {
  return {
    [DELETE_TASK]: async (p: { kind: 'session' | 'workspace'; workspace: string; session?: string }) => {
      if (p.kind === 'session' && p.session) await deleteSession(storage.db, p.workspace, p.session);
      else if (p.kind === 'workspace') await deleteWorkspace(storage.db, p.workspace);
    },
  };
}
