/**
 * Publishing to the hub: the workflow a request names (a saved workflow of
 * the workspace by id, else a user data file, a bare name meaning the file
 * under `workflows/` where the frontend saves them) gets its share id, and
 * its latest graph becomes the hub entry's snapshot.
 */
import fs from 'node:fs';
import type { Kysely } from 'kysely';
import { cloudError } from '../../identity/errors.ts';
import { storable } from '../../identity/store.ts';
import type { UserManager } from '../users.ts';
import { isLabel, type HubDetail, type HubRow, type HubStatus, type HubStore } from './hub.ts';
import { publishUserdataWorkflow, userdataFile } from './publish.ts';
import { isUuid, type WorkflowRow, type WorkflowStore } from './workflows.ts';

export interface HubPublishDeps {
  workflows: WorkflowStore;
  hub: HubStore;
  users: UserManager;
}

export async function publishToHub(
  d: HubPublishDeps,
  e: { workspaceId: string; userId: string; file: string; name: string; description: string; detail: HubDetail; moderation: boolean },
): Promise<{ row: HubRow; workflow: WorkflowRow; content: Record<string, unknown>; status: HubStatus }> {
  let w: WorkflowRow | null = isUuid(e.file) ? await d.workflows.get(e.workspaceId, e.file) : null;
  if (w) {
    if (Number(w.latest_version) === 0) throw cloudError(400, 'invalid_request', 'The workflow has no content to publish');
    w = await d.workflows.publish(w);
  } else {
    const inWorkflows = `workflows/${e.file}`;
    const abs = userdataFile(d.users, e.workspaceId, e.file);
    const bare = !e.file.startsWith('workflows/') && !(abs && fs.existsSync(abs)) && userdataFile(d.users, e.workspaceId, inWorkflows) !== null;
    w = await publishUserdataWorkflow(d, e.workspaceId, e.userId, bare ? inWorkflows : e.file);
  }
  const version = await d.workflows.version(w);
  if (!version) throw cloudError(404, 'not_found', 'Workflow not found');
  const status: HubStatus = e.moderation ? 'pending' : 'approved';
  const row = await d.hub.upsert({ share_id: w.share_id!, workspace_id: e.workspaceId, workflow_id: w.id, name: e.name, description: e.description, status, labels: JSON.stringify(e.detail.tags.filter(isLabel)), detail: JSON.stringify(e.detail), workflow_json: version.content, publish_time: Number(w.publish_time) });
  await d.workflows.setListed(w.id, status === 'approved');
  if (e.detail.thumbnail_url) await d.workflows.setThumbnail(w.id, e.detail.thumbnail_url);
  return { row, workflow: w, content: JSON.parse(version.content) as Record<string, unknown>, status };
}

/** AssetInfo of assets the workspace sees (its own and the shared input files, as the asset routes), in the order asked; a 400 naming any it does not. */
export async function assetInfos(db: () => Kysely<any>, workspaceId: string, ids: string[]): Promise<HubDetail['assets']> {
  const wanted = [...new Set(ids)];
  if (wanted.length === 0) return [];
  const valid = wanted.filter((id) => storable(id, 100));
  const rows = valid.length ? await db().selectFrom('assets').select(['id', 'name', 'mime_type', 'size']).where('owner', 'in', ['', workspaceId]).where('id', 'in', valid).execute() : [];
  const byId = new Map(rows.map((r: any) => [r.id as string, r]));
  const missing = wanted.filter((id) => !byId.has(id));
  if (missing.length) throw cloudError(400, 'invalid_asset', 'Some asset_ids are not assets of this workspace', { missing });
  return wanted.map((id) => {
    const r = byId.get(id);
    return { id, filename: r.name as string, ...(r.mime_type ? { mime_type: r.mime_type as string } : {}), size_bytes: Number(r.size) };
  });
}
