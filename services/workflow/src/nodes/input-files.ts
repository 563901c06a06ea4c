import fs from 'node:fs';
import path from 'node:path';
import { parseAnnotated, safeRelative } from '../files/paths.ts';
import type { NodeEnv } from './api.ts';

/**
 * Files directly in the input folder whose names match `ext`, as the
 * reference's loaders list them (os.listdir, files only, sorted): files in
 * subfolders (the mask editor's clipspace, pasted images) are loaded by name
 * but not offered, so a large tree never bloats object_info. Symlinks are
 * not listed.
 */
export function listInputFiles(inputDir: string, ext: RegExp): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(inputDir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => e.name)
    .sort();
}

/** Resolves a file name as the loaders take it (`sub/name.png`, `name.png [output]`); a name that climbs out is refused. */
export function inputPath(dirs: NodeEnv['dirs'], name: string): string {
  const { name: rel, type } = parseAnnotated(name, 'input');
  return safeRelative(dirs[type], rel);
}

/** The file a loader's name points to, if it is a regular file there (any refused or missing name: undefined). */
export function existingInput(dirs: NodeEnv['dirs'], name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  try {
    const file = inputPath(dirs, name);
    return fs.statSync(file).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A bounded walk of the folders below `root` (inside the input folder): the
 * input-relative, '/'-separated paths of the entries `pick` keeps, sorted;
 * it stops once `limit` are found. Unreadable folders are passed over.
 */
export function walkInput(inputDir: string, root: string, limit: number, pick: (e: fs.Dirent) => boolean): string[] {
  const out: string[] = [];
  const stack = [root];
  while (stack.length > 0 && out.length < limit) {
    const dir = stack.pop()!;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (pick(e)) out.push(path.relative(inputDir, p).split(path.sep).join('/'));
      if (e.isDirectory()) stack.push(p);
    }
  }
  return out.sort();
}
