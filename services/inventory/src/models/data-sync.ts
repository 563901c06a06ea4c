import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';

/**
 * DataSource.sync() for the `local` backend: the files under the source's directory become its data files (new ones
 * added, changed ones updated, vanished ones deleted), skipping dot files and directories and the `ignore_rules`
 * (fnmatch patterns, one a line). A directory is only read when it lies inside the configured data source root
 * (`--data-source-root`): without one every local sync is refused, so an API user cannot read the server's files.
 * Symbolic links are followed only while they stay inside the root (a file link leading out refuses the sync;
 * directory links are not followed, as os.walk). Git and S3 need the network, which this server does not have.
 */

/** Bounds on one sync: a source is a directory of templates and context data, not a disk image. */
export const MAX_FILES = 10_000;
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
export const MAX_TOTAL_BYTES = 256 * 1024 * 1024;

export class SyncError extends Error {}

export interface SyncedFile {
  path: string;
  size: number;
  hash: string;
  data: Buffer;
}

/** Python's fnmatch.fnmatchcase: `*`, `?`, `[seq]`, `[!seq]`, the rest literal. */
export function fnmatchcase(name: string, pattern: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) re += '\\[';
      else {
        let body = pattern.slice(i + 1, end);
        const negate = body.startsWith('!');
        if (negate) body = body.slice(1);
        re += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, (x) => `\\${x}`)}]`;
        i = end;
      }
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, (x) => `\\${x}`);
  }
  return new RegExp(`^${re}$`, 's').test(name);
}

function ignored(name: string, rules: string): boolean {
  if (name.startsWith('.')) return true;
  return rules.split(/\r?\n/).some((rule) => rule !== '' && fnmatchcase(name, rule));
}

const inside = (root: string, p: string) => p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);

/** The directory a local source names (a path or a file:// URL), resolved and checked against the allowed root. */
export async function localDirectory(sourceUrl: string, root: string | undefined): Promise<{ dir: string; root: string }> {
  if (!root) throw new SyncError('Local data sources are disabled on this server: no data source root is configured (--data-source-root / INVENTORY_DATA_SOURCE_ROOT).');
  let dir = sourceUrl;
  if (/^file:/i.test(dir)) {
    try {
      dir = fileURLToPath(dir);
    } catch {
      throw new SyncError(`Invalid file URL: ${sourceUrl.slice(0, 200)}`);
    }
  }
  if (!path.isAbsolute(dir)) dir = path.join(root, dir);
  const realRoot = await fs.realpath(root).catch(() => {
    throw new SyncError('The configured data source root does not exist.');
  });
  const real = await fs.realpath(dir).catch(() => {
    throw new SyncError(`The data source path does not exist: ${sourceUrl.slice(0, 200)}`);
  });
  if (!inside(realRoot, real)) throw new SyncError(`The data source path is outside the allowed data source root: ${sourceUrl.slice(0, 200)}`);
  const st = await fs.stat(real);
  if (!st.isDirectory()) throw new SyncError(`The data source path is not a directory: ${sourceUrl.slice(0, 200)}`);
  return { dir: real, root: realRoot };
}

/** Every file of the directory (paths relative to it, `/`-separated), as DataSource._walk() chooses them. */
export async function readLocalFiles(dir: string, realRoot: string, rules: string): Promise<SyncedFile[]> {
  const out: SyncedFile[] = [];
  let total = 0;
  const walk = async (rel: string): Promise<void> => {
    const entries = await fs.readdir(path.join(dir, rel), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const relPath = rel ? `${rel}/${e.name}` : e.name;
      const full = path.join(dir, relPath);
      if (e.isDirectory()) {
        // os.walk skips nothing by name, but DataSource._walk() drops paths under a dot directory.
        if (!e.name.startsWith('.')) await walk(relPath);
        continue;
      }
      if (ignored(e.name, rules)) continue;
      let target = full;
      if (e.isSymbolicLink()) {
        const real = await fs.realpath(full).catch(() => null);
        if (real === null) continue; // a dangling link: os.walk lists it, open() would fail; skipped here
        if (!inside(realRoot, real)) throw new SyncError(`A symbolic link leads outside the allowed data source root: ${relPath.slice(0, 300)}`);
        const st = await fs.stat(real);
        if (st.isDirectory()) continue; // not followed, as os.walk(followlinks=False)
        target = real;
      } else if (!e.isFile()) continue;
      const st = await fs.stat(target);
      if (st.size > MAX_FILE_BYTES) throw new SyncError(`File too large to sync (over ${MAX_FILE_BYTES} bytes): ${relPath.slice(0, 300)}`);
      if (out.length >= MAX_FILES) throw new SyncError(`Too many files to sync (over ${MAX_FILES}).`);
      total += st.size;
      if (total > MAX_TOTAL_BYTES) throw new SyncError(`The data source holds more than ${MAX_TOTAL_BYTES} bytes.`);
      const data = await fs.readFile(target);
      out.push({ path: relPath, size: data.length, hash: createHash('sha256').update(data).digest('hex'), data });
    }
  };
  await walk('');
  return out;
}

/** Brings a source's data files in step with `files`; returns the ids of the files added or changed. */
export async function storeFiles(db: Kysely<any>, dialect: SqlDialect, sourceId: number, files: SyncedFile[], now: Date): Promise<number[]> {
  const existing = await db.selectFrom('core_datafile').select(['id', 'path', 'hash']).where('source_id', '=', sourceId).execute();
  const byPath = new Map(existing.map((r) => [String(r.path), r]));
  const changed: number[] = [];
  const ts = dialect.timestamp(now);
  for (const f of files) {
    const old = byPath.get(f.path);
    byPath.delete(f.path);
    if (old && old.hash === f.hash) continue;
    if (old) {
      await db.updateTable('core_datafile').set({ size: f.size, hash: f.hash, data: f.data, last_updated: ts }).where('id', '=', old.id).execute();
      changed.push(Number(old.id));
    } else {
      const r = await db.insertInto('core_datafile').values({ source_id: sourceId, path: f.path, size: f.size, hash: f.hash, data: f.data, custom_fields: dialect.json({}), created: ts, last_updated: ts }).returning('id').executeTakeFirstOrThrow();
      changed.push(Number(r.id));
    }
  }
  const gone = [...byPath.values()].map((r) => Number(r.id));
  if (gone.length) await db.deleteFrom('core_datafile').where('id', 'in', gone).execute();
  return changed;
}
