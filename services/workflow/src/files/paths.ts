import fs from 'node:fs';
import path from 'node:path';

/**
 * The one place where names from requests become paths on disk. Every route
 * and node that touches a file goes through safeJoin/safeRelative, so the
 * rules (no `..`, no absolute or Windows paths, no NUL or control characters,
 * no symlink leading out) are written once.
 */

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

/** Longest name one path component may have (bytes, as Linux counts) and longest relative path. */
const MAX_COMPONENT_BYTES = 255;
const MAX_PATH_CHARS = 2048;

/** Refuses what no file name may contain: NUL, lone surrogates, control characters, over-long names. */
function checkChars(s: string, what: string): void {
  if (/[\u0000-\u001f\u007f]/.test(s) || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s)) {
    throw new UnsafePathError(`Invalid ${what}`, 400);
  }
  if (s.length > MAX_PATH_CHARS) throw new UnsafePathError(`Invalid ${what}: too long`, 400);
  for (const part of s.split('/')) {
    if (Buffer.byteLength(part) > MAX_COMPONENT_BYTES) throw new UnsafePathError(`Invalid ${what}: a name is longer than ${MAX_COMPONENT_BYTES} bytes`, 400);
  }
}

/** `C:/x`, `C:\x`, `\\server\share`: absolute on Windows, refused everywhere so no client can mean one. */
function windowsAbsolute(s: string): boolean {
  return /^[A-Za-z]:[\\/]/.test(s) || s.startsWith('\\\\');
}

function escapes(rel: string): boolean {
  return rel.includes('\\') || path.isAbsolute(rel) || windowsAbsolute(rel) || rel.split('/').includes('..');
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
  if (escapes(subfolder)) throw new UnsafePathError('Invalid subfolder', 403);
  const full = path.resolve(base, subfolder, filename);
  const root = path.resolve(base);
  if (full !== root && !full.startsWith(root + path.sep)) throw new UnsafePathError('Path escapes its folder', 403);
  checkRealPath(root, full);
  return full;
}

/** Like safeJoin for a relative path that may hold subfolders (userdata files, annotated image names). */
export function safeRelative(base: string, rel: string): string {
  checkChars(rel, 'path');
  if (escapes(rel)) throw new UnsafePathError('Invalid path', 403);
  const root = path.resolve(base);
  const full = path.resolve(root, rel);
  if (full !== root && !full.startsWith(root + path.sep)) throw new UnsafePathError('Path escapes its folder', 403);
  checkRealPath(root, full);
  return full;
}

/** A folder name below a base (a user id, a model folder): one component, nothing that climbs. */
export function safeChild(base: string, name: string): string {
  checkChars(name, 'name');
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\\') || windowsAbsolute(name)) throw new UnsafePathError('Invalid name', 403);
  return safeRelative(base, name);
}

/**
 * Proves that `full` (below `root`) resolves inside the root's real path: the
 * deepest existing ancestor is resolved with every symlink followed, and a
 * dangling symlink on the way (it would be followed by a later write) is
 * refused as well. Missing entries are found with lstat's undefined answer and
 * paths resolved by one realpath(3) call: a save's new file name is missing by
 * design, and Node's JavaScript realpath (an lstat per component) and the
 * errors it threw for it were a quarter of a small save's CPU.
 */
export function checkRealPath(root: string, full: string): void {
  let realRoot: string;
  try {
    realRoot = fs.realpathSync.native(root);
  } catch {
    return; // the folder does not exist yet: nothing below it can be a link
  }
  for (let probe = full; ; ) {
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(probe, { throwIfNoEntry: false });
    } catch {
      st = undefined; // below a file (ENOTDIR) or unreadable: nothing to follow here
    }
    if (st !== undefined) {
      let real: string | undefined;
      try {
        real = fs.realpathSync.native(probe);
      } catch {
        // A link that leads nowhere (or in a loop) would be followed by a later write.
        if (st.isSymbolicLink()) throw new UnsafePathError('Path escapes its folder', 403);
      }
      if (real !== undefined) {
        if (!isWithin(realRoot, real)) throw new UnsafePathError('Path escapes its folder', 403);
        return;
      }
    }
    const parent = path.dirname(probe);
    if (parent === probe || probe === root) return;
    probe = parent;
  }
}

/** Whether the real path `real` is the real folder `realRoot` or lies below it. */
function isWithin(realRoot: string, real: string): boolean {
  return real === realRoot || real.startsWith(realRoot + path.sep);
}

/** Whether a path found while walking a folder (maybe through a symlink) really lies inside `root`. */
export function insideReal(root: string, p: string): boolean {
  try {
    const realRoot = fs.realpathSync(root);
    const real = fs.realpathSync(p);
    return isWithin(realRoot, real);
  } catch {
    return false;
  }
}

/** `name.png [output]` → the name and its folder type (the reference's annotated file names). */
export function parseAnnotated(name: string, defaultType: FolderType): { name: string; type: FolderType } {
  const m = /^(.*) \[(input|output|temp)\]$/.exec(name);
  return m ? { name: m[1]!, type: m[2] as FolderType } : { name, type: defaultType };
}

/**
 * Python's urllib.parse.unquote: the reference decodes names that still hold
 * `%` once more after the router did. Valid `%XX` runs become UTF-8 text
 * (invalid bytes as U+FFFD); anything else stays as it is. The result is
 * checked like any other name, so double encoding reaches the same refusals.
 */
export function pyUnquote(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    const bytes = Buffer.from(run.replace(/%/g, ''), 'hex');
    return new TextDecoder('utf-8').decode(bytes);
  });
}

/** O_NOFOLLOW on the last component: a symlink swapped in after the checks is never written through. */
export const WRITE_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW;
