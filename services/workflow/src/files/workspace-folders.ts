import { createHash } from 'node:crypto';
import path from 'node:path';
import type { NodeEnv, NodeScope } from '../nodes/api.ts';

const PLAIN_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** A workspace's folder name: its id when that is a plain name (ids are UUIDs), a hash of it otherwise. */
export function workspaceFolderName(owner: string): string {
  return PLAIN_ID.test(owner) ? owner : `h-${createHash('sha256').update(owner).digest('hex').slice(0, 32)}`;
}

/** `<data-dir>/workspaces`: each workspace's own files (its input folder) in the hosted runtime. */
export function workspacesRoot(dataDir: string): string {
  return path.join(dataDir, 'workspaces');
}

/**
 * The folders a workspace's requests and prompts see in the hosted runtime:
 * its own input and output folders (uploads, LoadImage's list, saved images:
 * a save's next file number counts only the workspace's own files, so it
 * tells nothing of another workspace's), and the shared temp folder, whose
 * files are checked against the job that wrote them.
 */
export function workspaceScope(base: NodeEnv['dirs'], dataDir: string, owner: string, canRead?: NodeScope['canRead']): NodeScope {
  const own = path.join(workspacesRoot(dataDir), workspaceFolderName(owner));
  return { dirs: { ...base, input: path.join(own, 'input'), output: path.join(own, 'output') }, canRead };
}
