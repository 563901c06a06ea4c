/**
 * Saved workflows of a workspace and their versions. A version is
 * immutable; `latest_version` on the workflow row is the compare-and-set
 * point of optimistic concurrency (a new version is written only by the
 * writer whose base matched, and (workflow_id, version) is unique, so two
 * concurrent writers on any number of processes cannot both win).
 * Publishing gives a workflow a `share_id`: anyone can then read it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { isUniqueViolation } from '../../identity/store.ts';

export interface WorkflowRow {
  id: string;
  workspace_id: string;
  name: string;
  name_norm: string;
  description: string;
  share_id: string | null;
  listed: number;
  publish_time: number | null;
  source_path: string | null;
  latest_version: number;
  latest_version_id: string | null;
  thumbnail_url: string | null;
  forked_from: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface VersionRow {
  id: string;
  workflow_id: string;
  workspace_id: string;
  version: number;
  content: string;
  created_by: string;
  created_at: number;
}

/** The workflow was deleted while a version was being added. */
export class WorkflowGone extends Error {}

export class VersionConflict extends Error {
  constructor(readonly latest: number) {
    super('stale base version');
  }
}

const iso = (ms: unknown) => new Date(Number(ms)).toISOString();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

export function normName(name: string): string {
  return name.normalize('NFKC').toLowerCase();
}

/** 22 URL-safe characters (128 bits): unguessable, so an unpublished link cannot be found. */
export function newShareId(): string {
  return randomBytes(16).toString('base64url');
}

export function workflowView(w: WorkflowRow): Record<string, unknown> {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    share_id: w.share_id,
    latest_version_id: w.latest_version_id,
    latest_version: Number(w.latest_version),
    thumbnail_url: w.thumbnail_url,
    created_at: iso(w.created_at),
    updated_at: iso(w.updated_at),
  };
}

export function versionView(v: VersionRow): Record<string, unknown> {
  return { id: v.id, workflow_id: v.workflow_id, version_number: Number(v.version), created_by: v.created_by, created_at: iso(v.created_at) };
}

export type WorkflowSort = 'created_at' | 'updated_at' | 'name';

export class WorkflowStore {
  constructor(private readonly db: () => Kysely<any>) {}

  async get(workspaceId: string, id: string): Promise<WorkflowRow | null> {
    if (!isUuid(id)) return null;
    return ((await this.db().selectFrom('cloud_workflows').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id.toLowerCase()).executeTakeFirst()) as WorkflowRow | undefined) ?? null;
  }

  /** Any workspace's workflow (callers decide what a stranger may see). */
  async getAny(id: string): Promise<WorkflowRow | null> {
    if (!isUuid(id)) return null;
    return ((await this.db().selectFrom('cloud_workflows').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst()) as WorkflowRow | undefined) ?? null;
  }

  /** A published workflow whose workspace still exists. */
  async byShareId(shareId: string): Promise<WorkflowRow | null> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(shareId)) return null;
    return ((await this.db().selectFrom('cloud_workflows').selectAll().where('share_id', '=', shareId).where(liveWorkspace).executeTakeFirst()) as WorkflowRow | undefined) ?? null;
  }

  async bySource(workspaceId: string, sourcePath: string): Promise<WorkflowRow | null> {
    return ((await this.db().selectFrom('cloud_workflows').selectAll().where('workspace_id', '=', workspaceId).where('source_path', '=', sourcePath).executeTakeFirst()) as WorkflowRow | undefined) ?? null;
  }

  async list(workspaceId: string, q: { search?: string; sort: WorkflowSort; order: 'asc' | 'desc'; limit: number; offset: number }): Promise<{ rows: WorkflowRow[]; total: number }> {
    let base = this.db().selectFrom('cloud_workflows').where('workspace_id', '=', workspaceId);
    if (q.search) {
      // Substring match on the normalised name; LIKE's wildcards in the search are literal.
      const pattern = `%${normName(q.search).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      base = base.where(likeEscaped('name_norm', pattern));
    }
    const total = Number(((await base.select((eb: any) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()) as { n: unknown }).n);
    const col = q.sort === 'name' ? 'name_norm' : q.sort;
    const rows = (await base.selectAll().orderBy(col, q.order).orderBy('id', q.order).limit(q.limit).offset(q.offset).execute()) as WorkflowRow[];
    return { rows, total };
  }

  async create(workspaceId: string, userId: string, f: { name: string; description: string; content?: unknown; sourcePath?: string; forkedFrom?: string }): Promise<WorkflowRow> {
    const now = Date.now();
    const id = randomUUID();
    const w: WorkflowRow = {
      id,
      workspace_id: workspaceId,
      name: f.name,
      name_norm: normName(f.name),
      description: f.description,
      share_id: null,
      listed: 0,
      publish_time: null,
      source_path: f.sourcePath ?? null,
      latest_version: 0,
      latest_version_id: null,
      thumbnail_url: null,
      forked_from: f.forkedFrom ?? null,
      created_by: userId,
      created_at: now,
      updated_at: now,
    };
    let version: VersionRow | null = null;
    if (f.content !== undefined) {
      version = { id: randomUUID(), workflow_id: id, workspace_id: workspaceId, version: 1, content: JSON.stringify(f.content), created_by: userId, created_at: now };
      w.latest_version = 1;
      w.latest_version_id = version.id;
    }
    await this.db()
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('cloud_workflows').values(w).execute();
        if (version) await trx.insertInto('cloud_workflow_versions').values(version).execute();
      });
    return w;
  }

  /** Null when the workflow was deleted meanwhile. */
  async update(w: WorkflowRow, patch: { name?: string; description?: string }): Promise<WorkflowRow | null> {
    const set: Record<string, unknown> = { updated_at: Math.max(Date.now(), Number(w.updated_at)) };
    if (patch.name !== undefined) {
      set.name = patch.name;
      set.name_norm = normName(patch.name);
    }
    if (patch.description !== undefined) set.description = patch.description;
    const r = await this.db().updateTable('cloud_workflows').set(set).where('id', '=', w.id).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0 ? ({ ...w, ...set } as WorkflowRow) : null;
  }

  /** False when it was gone already (of concurrent deletes, one deletes). */
  async delete(w: WorkflowRow): Promise<boolean> {
    return this.db()
      .transaction()
      .execute(async (trx) => {
        // The workflow row first: a concurrent addVersion waits on its lock and then finds nothing, so no version outlives it.
        const r = await trx.deleteFrom('cloud_workflows').where('id', '=', w.id).executeTakeFirst();
        await trx.deleteFrom('cloud_workflow_versions').where('workflow_id', '=', w.id).execute();
        await trx.deleteFrom('hub_workflows').where('workflow_id', '=', w.id).execute();
        return Number(r.numDeletedRows) > 0;
      });
  }

  async version(w: WorkflowRow, versionId?: string): Promise<VersionRow | null> {
    let q = this.db().selectFrom('cloud_workflow_versions').selectAll().where('workflow_id', '=', w.id);
    if (versionId !== undefined) {
      if (!isUuid(versionId)) return null;
      q = q.where('id', '=', versionId.toLowerCase());
    } else q = q.where('version', '=', Number(w.latest_version));
    return ((await q.executeTakeFirst()) as VersionRow | undefined) ?? null;
  }

  async versions(w: WorkflowRow, limit: number, offset: number): Promise<{ rows: VersionRow[]; total: number }> {
    const base = this.db().selectFrom('cloud_workflow_versions').where('workflow_id', '=', w.id);
    const total = Number(((await base.select((eb: any) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()) as { n: unknown }).n);
    const rows = (await base.select(['id', 'workflow_id', 'workspace_id', 'version', 'created_by', 'created_at']).orderBy('version', 'desc').limit(limit).offset(offset).execute()) as VersionRow[];
    return { rows, total };
  }

  /**
   * Appends a version. With `base`, only if it is still the latest
   * (VersionConflict otherwise); without, on top of whatever is latest.
   */
  async addVersion(w: WorkflowRow, userId: string, content: unknown, base?: number): Promise<{ version: VersionRow; workflow: WorkflowRow }> {
    const text = JSON.stringify(content);
    for (let attempt = 0; ; attempt++) {
      const cur = base === undefined && attempt > 0 ? await this.get(w.workspace_id, w.id) : w;
      if (!cur) throw new WorkflowGone();
      const latest = base ?? Number(cur.latest_version);
      const now = Date.now();
      const v: VersionRow = { id: randomUUID(), workflow_id: w.id, workspace_id: w.workspace_id, version: latest + 1, content: text, created_by: userId, created_at: now };
      try {
        const won = await this.db()
          .transaction()
          .execute(async (trx) => {
            const r = await trx
              .updateTable('cloud_workflows')
              .set({ latest_version: v.version, latest_version_id: v.id, updated_at: now })
              .where('id', '=', w.id)
              .where('latest_version', '=', latest)
              .executeTakeFirst();
            if (Number(r.numUpdatedRows) !== 1) return false;
            await trx.insertInto('cloud_workflow_versions').values(v).execute();
            return true;
          });
        if (won) return { version: v, workflow: { ...cur, latest_version: v.version, latest_version_id: v.id, updated_at: now } };
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      if (base !== undefined || attempt > 5) {
        const fresh = await this.get(w.workspace_id, w.id);
        if (!fresh) throw new WorkflowGone();
        throw new VersionConflict(Number(fresh.latest_version));
      }
    }
  }

  /** Gives the workflow a share id (kept if it has one; concurrent publishers agree on the first) and a publish time. */
  async publish(w: WorkflowRow, listed?: boolean): Promise<WorkflowRow> {
    if (w.share_id === null) await this.db().updateTable('cloud_workflows').set({ share_id: newShareId() }).where('id', '=', w.id).where('share_id', 'is', null).execute();
    const set: Record<string, unknown> = { publish_time: Date.now() };
    if (listed !== undefined) set.listed = listed ? 1 : 0;
    await this.db().updateTable('cloud_workflows').set(set).where('id', '=', w.id).execute();
    return ((await this.getAny(w.id)) ?? { ...w, ...set }) as WorkflowRow;
  }

  async setThumbnail(workflowId: string, url: string): Promise<void> {
    await this.db().updateTable('cloud_workflows').set({ thumbnail_url: url }).where('id', '=', workflowId).execute();
  }

  async setListed(workflowId: string, listed: boolean): Promise<void> {
    await this.db().updateTable('cloud_workflows').set({ listed: listed ? 1 : 0 }).where('id', '=', workflowId).execute();
  }
}

/** `column LIKE pattern ESCAPE '\\'` on both databases (SQLite has no default escape character). */
export function likeEscaped(column: string, pattern: string, lower = false): RawBuilder<boolean> {
  const c = lower ? sql`lower(${sql.ref(column)})` : sql.ref(column);
  return sql<boolean>`${c} like ${pattern} escape '\\'`;
}

/** Rows of workspaces that were not deleted: what a deleted workspace published disappears with it. */
export function liveWorkspace(eb: any): any {
  return eb('workspace_id', 'not in', eb.selectFrom('id_workspaces').select('id').where('deleted_at', 'is not', null));
}
