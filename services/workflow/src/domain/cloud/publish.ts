/**
 * Publishing a user data file (`user/<workspace>/…`, the frontend's saved
 * workflow JSON): the saved workflow tied to that path, created on first
 * publish and given a new version whenever the file changed, with a share id.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cloudError } from '../../identity/errors.ts';
import type { UserManager } from '../users.ts';
import type { WorkflowRow, WorkflowStore } from './workflows.ts';

/** Largest workflow graph stored (JSON text). */
export const MAX_WORKFLOW_BYTES = 8 * 1024 * 1024;

/** A user data file of the caller's workspace: its absolute path, or null when the name cannot be one. */
export function userdataFile(users: UserManager, workspaceId: string, file: string): string | null {
  if (typeof file !== 'string' || file === '' || file.length > 1000 || file.includes('\u0000')) return null;
  try {
    return users.userPath(workspaceId, file);
  } catch {
    return null;
  }
}

/** Reads a user data file as a workflow graph (400 when it is not one, 404 when it is missing). */
export async function readUserdataWorkflow(users: UserManager, workspaceId: string, file: string): Promise<Record<string, unknown>> {
  const abs = userdataFile(users, workspaceId, file);
  const st = abs ? await fs.promises.stat(abs).catch(() => null) : null;
  if (!abs || !st || !st.isFile()) throw cloudError(404, 'not_found', 'Workflow file not found');
  if (st.size > MAX_WORKFLOW_BYTES) throw cloudError(413, 'payload_too_large', `The workflow file is larger than ${MAX_WORKFLOW_BYTES} bytes`, { max_bytes: MAX_WORKFLOW_BYTES });
  let v: unknown;
  try {
    v = JSON.parse(await fs.promises.readFile(abs, 'utf8'));
  } catch {
    throw cloudError(400, 'invalid_workflow', 'The file is not a JSON workflow');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw cloudError(400, 'invalid_workflow', 'The file is not a JSON workflow');
  return v as Record<string, unknown>;
}

/**
 * The cloud workflow published from a user data file (created on first
 * publish, a new version whenever the file changed), with a share id.
 */
export async function publishUserdataWorkflow(d: { workflows: WorkflowStore; users: UserManager }, workspaceId: string, userId: string, file: string, listed?: boolean): Promise<WorkflowRow> {
  const content = await readUserdataWorkflow(d.users, workspaceId, file);
  let w = await d.workflows.bySource(workspaceId, file);
  if (!w) {
    const name = path.basename(file).replace(/\.json$/i, '').slice(0, 255) || 'workflow';
    try {
      w = await d.workflows.create(workspaceId, userId, { name, description: '', content, sourcePath: file });
    } catch {
      // Published concurrently: use the other request's row.
      w = await d.workflows.bySource(workspaceId, file);
      if (!w) throw cloudError(409, 'conflict', 'The workflow is being published by another request; retry');
    }
  } else {
    const latest = await d.workflows.version(w);
    if (!latest || latest.content !== JSON.stringify(content)) w = (await d.workflows.addVersion(w, userId, content)).workflow;
  }
  return d.workflows.publish(w, listed);
}
