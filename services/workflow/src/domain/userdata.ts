import fs from 'node:fs';
import path from 'node:path';
import { insideReal } from '../files/paths.ts';

export interface FileInfo {
  path: string;
  size: number;
  /** Milliseconds since the epoch, whole (the reference's int(mtime*1000)). */
  modified: number;
  created: number;
}

/** Walks stop here: a user folder with more entries than this is answered in part rather than exhausting memory. */
export const MAX_WALK_ENTRIES = 100_000;
const MAX_WALK_DEPTH = 64;

function toPosix(rel: string): string {
  return rel.split(path.sep).join('/');
}

export function fileInfo(file: string, relativeTo: string, st = fs.statSync(file)): FileInfo {
  return {
    path: toPosix(path.relative(relativeTo, file)),
    size: st.size,
    modified: Math.floor(st.mtimeMs),
    created: Math.floor(st.ctimeMs),
  };
}

/** What a directory entry is once symlinks are judged: links are followed only when they stay inside `root`. */
function kindOf(root: string, full: string, e: fs.Dirent): 'file' | 'dir' | undefined {
  if (e.isFile()) return 'file';
  if (e.isDirectory()) return 'dir';
  if (e.isSymbolicLink() && insideReal(root, full)) {
    const st = fs.statSync(full, { throwIfNoEntry: false });
    if (st?.isFile()) return 'file';
    if (st?.isDirectory()) return 'dir';
  }
  return undefined;
}

/**
 * Files of a folder as the reference's glob (`*` or `**` with recurse): names
 * starting with a dot are skipped, as glob skips them. Sorted by path.
 */
export function listFiles(root: string, dir: string, recurse: boolean): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const walk = (d: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (out.length >= MAX_WALK_ENTRIES) return;
      if (e.name.startsWith('.')) continue;
      const full = path.join(d, e.name);
      const kind = kindOf(root, full, e);
      if (kind === 'file') out.push(full);
      else if (kind === 'dir' && recurse && depth < MAX_WALK_DEPTH) {
        // A link back up the tree would loop: each real folder is walked once.
        const real = fs.realpathSync(full);
        if (seen.has(real)) continue;
        seen.add(real);
        walk(full, depth + 1);
      }
    }
  };
  seen.add(fs.realpathSync(dir));
  walk(dir, 0);
  return out.sort();
}

export interface V2Entry {
  name: string;
  path: string;
  type: 'file' | 'directory';
  size?: number;
  /** Seconds since the epoch (float), as the reference's st_mtime. */
  modified?: number;
}

/** GET /v2/userdata: every file and folder below `dir` (hidden ones too), paths relative to the user's root, folders first. */
export function listTree(userRoot: string, dir: string): V2Entry[] {
  const out: V2Entry[] = [];
  const seen = new Set<string>([fs.realpathSync(dir)]);
  const walk = (d: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (out.length >= MAX_WALK_ENTRIES) return;
      const full = path.join(d, e.name);
      const kind = kindOf(userRoot, full, e);
      const rel = toPosix(path.relative(userRoot, full));
      if (kind === 'dir') {
        out.push({ name: e.name, path: rel, type: 'directory' });
        const real = fs.realpathSync(full);
        if (depth < MAX_WALK_DEPTH && !seen.has(real)) {
          seen.add(real);
          walk(full, depth + 1);
        }
      } else if (kind === 'file') {
        const entry: V2Entry = { name: e.name, path: rel, type: 'file' };
        const st = fs.statSync(full, { throwIfNoEntry: false });
        if (st) {
          entry.size = st.size;
          entry.modified = st.mtimeMs / 1000;
        }
        out.push(entry);
      }
    }
  };
  walk(dir, 0);
  return out.sort((a, b) => {
    if (a.type !== b.type) return a.type === 'directory' ? -1 : 1;
    const x = a.name.toLowerCase();
    const y = b.name.toLowerCase();
    return x < y ? -1 : x > y ? 1 : 0;
  });
}
