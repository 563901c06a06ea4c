import { sql, type Kysely } from 'kysely';

/**
 * Multi-user isolation of produced files. A job's outputs list the files it
 * wrote (`{filename, subfolder, type}` entries in its history row). In
 * multi-user mode a file that jobs of other users produced, and no job of
 * the asking user, is hidden from /view and /internal/files; files no job
 * produced (placed by hand, uploaded) stay shared, as inputs are.
 */

export interface FileRef {
  filename: string;
  subfolder: string;
  type: string;
}

function mentions(outputs: unknown, ref: FileRef): boolean {
  const stack: unknown[] = [outputs];
  let budget = 100_000;
  while (stack.length > 0 && budget-- > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (o.filename === ref.filename && (o.subfolder ?? '') === ref.subfolder && (o.type ?? 'output') === ref.type) return true;
      for (const x of Object.values(o)) if (x && typeof x === 'object') stack.push(x);
    }
  }
  return false;
}

/** Files named in outputs (for listings): `type/subfolder/filename` keys. */
function collect(outputs: unknown, into: Set<string>): void {
  const stack: unknown[] = [outputs];
  let budget = 100_000;
  while (stack.length > 0 && budget-- > 0) {
    const v = stack.pop();
    if (Array.isArray(v)) stack.push(...v);
    else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.filename === 'string') into.add(`${(o.type as string) ?? 'output'}/${(o.subfolder as string) ?? ''}/${o.filename}`);
      for (const x of Object.values(o)) if (x && typeof x === 'object') stack.push(x);
    }
  }
}

function parse(text: unknown): unknown {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** LIKE pattern for the file name as it appears inside the JSON text (a cheap filter; the match is then checked exactly). */
function likePattern(filename: string): string {
  const inJson = JSON.stringify(filename).slice(1, -1);
  return `%${inJson.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

/** Whether `owner` may see a produced file: yes unless only other users' jobs produced it. */
export async function mayViewOutput(db: Kysely<any>, owner: string, ref: FileRef): Promise<boolean> {
  const rows = await db
    .selectFrom('prompts')
    .select(['owner', 'outputs'])
    .where('outputs', 'is not', null)
    .where(sql<boolean>`outputs like ${likePattern(ref.filename)} escape '!'`)
    .limit(10_000)
    .execute();
  let others = false;
  for (const r of rows) {
    if (!mentions(parse(r.outputs), ref)) continue;
    if (r.owner === owner) return true;
    others = true;
  }
  return !others;
}

/** The files of `type` (keys `type/subfolder/filename`) that jobs of other users produced and no job of `owner` did. */
export async function hiddenOutputs(db: Kysely<any>, owner: string): Promise<Set<string>> {
  const rows = await db.selectFrom('prompts').select(['owner', 'outputs']).where('outputs', 'is not', null).execute();
  const mine = new Set<string>();
  const theirs = new Set<string>();
  for (const r of rows) collect(parse(r.outputs), r.owner === owner ? mine : theirs);
  for (const k of mine) theirs.delete(k);
  return theirs;
}
