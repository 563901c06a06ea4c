import type { Kysely } from 'kysely';
import { HUB_STATUSES, HubStore, type HubStatus } from './hub.ts';
import { WorkflowStore } from './workflows.ts';

/**
 * An operator's decision on a hub publication (with --hub-moderation new
 * ones wait as pending): only approved entries are listed, searched,
 * indexed and counted on profiles, and the workflow's listed flag follows.
 */
export async function moderateHubWorkflow(db: () => Kysely<any>, shareId: string, status: HubStatus): Promise<boolean> {
  if (!HUB_STATUSES.includes(status)) throw new Error(`status must be one of ${HUB_STATUSES.join(', ')}`);
  const hub = new HubStore(db);
  const row = await hub.byShareId(shareId);
  if (!row) return false;
  await hub.setStatus(shareId, status);
  await new WorkflowStore(db).setListed(row.workflow_id, status === 'approved');
  return true;
}

/** Publications waiting for a decision, oldest first. */
export async function pendingHubWorkflows(db: () => Kysely<any>): Promise<Array<{ share_id: string; name: string; workspace_id: string; updated_at: number }>> {
  return (await db().selectFrom('hub_workflows').select(['share_id', 'name', 'workspace_id', 'updated_at']).where('status', '=', 'pending').orderBy('updated_at').orderBy('share_id').execute()) as any;
}
