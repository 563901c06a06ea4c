import path from 'node:path';
import { workspaceFolderName, workspacesRoot } from '../files/workspace-folders.ts';
import type { NodeEnv, NodeScope } from '../nodes/api.ts';

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
