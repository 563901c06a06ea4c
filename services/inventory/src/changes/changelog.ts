import type { Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import type { RecordedChange } from './coalesce.ts';

export const ACTION_LABELS: Record<string, string> = { create: 'Created', update: 'Updated', delete: 'Deleted' };

export interface ChangeAuthor {
  userId: number | null;
  username: string;
  requestId: string;
}

/** Writes one object_changes row per recorded change, in the caller's transaction. */
export async function writeChangelog(trx: Kysely<any>, d: SqlDialect, author: ChangeAuthor, time: Date, changes: RecordedChange[]): Promise<void> {
  if (changes.length === 0) return;
  const rows = changes.map((c) => ({
    time: d.timestamp(time),
    user_id: author.userId,
    user_name: author.username,
    request_id: author.requestId,
    action: c.action,
    changed_object_type: c.objectType,
    changed_object_id: c.objectId,
    object_repr: (c.objectRepr ?? String(c.objectId)).slice(0, 200),
    prechange_data: c.prechange === null ? null : d.json(c.prechange),
    postchange_data: c.postchange === null ? null : d.json(c.postchange),
  }));
  // Chunked so a 1,000-object bulk request stays under SQLite's bound-parameter limit.
  for (let i = 0; i < rows.length; i += 200) await trx.insertInto('object_changes').values(rows.slice(i, i + 200)).execute();
}
