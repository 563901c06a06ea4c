/** One write to one object, as recorded while a request runs. */
export interface RecordedChange {
  action: 'create' | 'update' | 'delete';
  objectType: string;
  model: string;
  objectId: number;
  /** str(obj); filled from the final representation at flush time when the writer did not set it. */
  objectRepr?: string;
  prechange: Record<string, unknown> | null;
  postchange: Record<string, unknown> | null;
  /** REST representation frozen before a delete (the row is gone afterwards). */
  deletedData?: Record<string, unknown>;
}

export interface PendingEvent {
  event: 'created' | 'updated' | 'deleted';
  objectType: string;
  model: string;
  objectId: number;
  prechange: Record<string, unknown> | null;
  postchange: Record<string, unknown> | null;
  deletedData?: Record<string, unknown>;
}

const EVENT = { create: 'created', update: 'updated', delete: 'deleted' } as const;

/**
 * NetBox's per-request event queue: one entry per object, in first-change
 * order. A later change replaces the postchange snapshot and turns the event
 * into a delete when it is one; otherwise the first event kind stays
 * (create+update → created, update+update → updated with the first prechange).
 */
export function coalesce(changes: RecordedChange[]): PendingEvent[] {
  const byKey = new Map<string, PendingEvent>();
  for (const c of changes) {
    const key = `${c.objectType}:${c.objectId}`;
    const seen = byKey.get(key);
    if (!seen) {
      byKey.set(key, {
        event: EVENT[c.action],
        objectType: c.objectType,
        model: c.model,
        objectId: c.objectId,
        prechange: c.prechange,
        postchange: c.postchange,
        deletedData: c.deletedData,
      });
      continue;
    }
    seen.postchange = c.postchange;
    if (c.action === 'delete') {
      seen.event = 'deleted';
      seen.deletedData = c.deletedData;
    }
  }
  return [...byKey.values()];
}
