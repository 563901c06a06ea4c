/** One coalesced change of one object in one request, as handed to the event pipeline. */
export interface ObjectEvent {
  event: 'created' | 'updated' | 'deleted';
  /** `app_label.model`, e.g. 'dcim.device'. */
  objectType: string;
  /** Model name, e.g. 'device'. */
  model: string;
  objectId: number;
  /** REST representation (relative URLs, as NetBox serialises without a request). */
  data: Record<string, unknown>;
  /** Raw field values (NetBox serialize_object); prechange null on create, postchange null on delete. */
  snapshots: { prechange: Record<string, unknown> | null; postchange: Record<string, unknown> | null };
  username: string;
  requestId: string;
  /** ISO 8601 with `+00:00`, as Python's isoformat. */
  timestamp: string;
}
