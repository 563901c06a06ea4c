import fs from 'node:fs';
import path from 'node:path';

export type FolderType = 'input' | 'output' | 'temp';

/** A name that reached the disk layer unsafe: the routes answer 400 or 403 for it. */
export class UnsafePathError extends Error {
  constructor(
    message: string,
    /** 400 for a bad name, 403 for a path that leaves its folder. */
    readonly status: 400 | 403,
  ) {
    super(message);
    this.name = 'UnsafePathError';
  }
}

/** Refuses what no file name may contain: NUL, lone surrogates and control characters. */
function checkChars(s: string, what: string): void {
  if (/[\u0000-\u001f\u007f]/.test(s) || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s)) {
    throw new UnsafePathError(`Invalid ${what}`, 400);
  }
}

/**
 * Joins a subfolder and file name under a base folder and proves the result
 * stays inside it: no absolute parts, no `..`, no backslashes, no NUL, and no
 * symlink whose target leaves the base (checked on the real path of the
 * deepest existing ancestor).
 */
export function safeJoin(base: string, subfolder: string, filename: string): string {
  checkChars(subfolder, 'subfolder');
  checkChars(filename, 'filename');
  if (filename.includes('/') || filename.includes('\\') || filename === '..' || filename === '.') throw new UnsafePathError('Invalid filename', 400);
  if (subfolder.includes('\\') || path.isAbsolute(subfolder) || subfolder.split('/').includes('..')) throw new UnsafePathError('Invalid subfolder', 403);
  const full = path.resolve(base, subfolder, filename);
  const root = path.resolve(base);
  if (full !== root && !full.startsWith(root + path.sep)) throw new UnsafePathError('Path escapes its folder', 403);
  checkRealPath(root, full);
  return full;
}

/** Like safeJoin for a relative path that may hold subfolders (userdata files, annotated image names). */
export function safeRelative(base: string, rel: string): string {
  checkChars(rel, 'path');
  if (rel.includes('\\') || path.isAbsolute(rel) || rel.split('/').some((p) => p === '..')) throw new UnsafePathError('Invalid path', 403);
  const root = path.resolve(base);
  const full = path.resolve(root, rel);
  if (full !== root && !full.startsWith(root + path.sep)) throw new UnsafePathError('Path escapes its folder', 403);
  checkRealPath(root, full);
  return full;
}

function checkRealPath(root: string, full: string): void {
  let realRoot: string;
  try {
    realRoot = fs.realpathSync(root);
  } catch {
    return; // the folder does not exist yet: nothing below it can be a link
  }
  let probe = full;
  for (;;) {
    try {
      const real = fs.realpathSync(probe);
      if (real !== realRoot && !real.startsWith(realRoot + path.sep)) throw new UnsafePathError('Path escapes its folder', 403);
      return;
    } catch (err) {
      if (err instanceof UnsafePathError) throw err;
      const parent = path.dirname(probe);
      if (parent === probe || probe === root) return;
      probe = parent;
    }
  }
}

/** `name.png [output]` → the name and its folder type (the reference's annotated file names). */
export function parseAnnotated(name: string, defaultType: FolderType): { name: string; type: FolderType } {
  const m = /^(.*) \[(input|output|temp)\]$/.exec(name);
  return m ? { name: m[1]!, type: m[2] as FolderType } : { name, type: defaultType };
}
