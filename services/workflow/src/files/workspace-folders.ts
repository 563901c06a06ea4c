import { createHash } from 'node:crypto';
import path from 'node:path';

const PLAIN_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** A workspace's folder name: its id when that is a plain name (ids are UUIDs), a hash of it otherwise. */
export function workspaceFolderName(owner: string): string {
  return PLAIN_ID.test(owner) ? owner : `h-${createHash('sha256').update(owner).digest('hex').slice(0, 32)}`;
}

/** `<data-dir>/workspaces`: each workspace's own files (its input folder) in the hosted runtime. */
export function workspacesRoot(dataDir: string): string {
  return path.join(dataDir, 'workspaces');
}
