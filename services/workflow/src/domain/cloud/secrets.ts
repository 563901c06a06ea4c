/**
 * Workspace secrets (API keys for third-party services). Values are sealed
 * by a SecretBox and never leave this module except to a node that asks for
 * one by name while a prompt of the same workspace runs.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUniqueViolation, lockWorkspace } from '../../identity/store.ts';
import type { SecretBox } from './secret-box.ts';

export interface SecretRow {
  id: string;
  workspace_id: string;
  name: string;
  provider: string | null;
  key_id: string;
  ciphertext: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  last_used_at: number | null;
}

export class SecretNameTaken extends Error {}
export class TooManySecrets extends Error {}
/** The caller may not replace this secret (see `put`'s `mayReplace`). */
export class SecretForbidden extends Error {}

/** Secrets a workspace may keep. */
export const MAX_SECRETS = 200;

const iso = (ms: unknown) => new Date(Number(ms)).toISOString();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** SecretMeta: never the value; `provider` and `last_used_at` only when known. */
export function secretMeta(r: SecretRow): Record<string, unknown> {
  return {
    id: r.id,
    name: r.name,
    ...(r.provider !== null ? { provider: r.provider } : {}),
    ...(r.last_used_at !== null && r.last_used_at !== undefined ? { last_used_at: iso(r.last_used_at) } : {}),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

/** The sealed value is bound to its row and workspace. */
const aadOf = (r: { id: string; workspace_id: string }) => `secret\u0000${r.workspace_id}\u0000${r.id}`;

export class SecretStore {
  constructor(
    private readonly db: () => Kysely<any>,
    readonly box: SecretBox,
  ) {}

  async list(workspaceId: string): Promise<SecretRow[]> {
    return (await this.db().selectFrom('cloud_secrets').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at').orderBy('id').execute()) as SecretRow[];
  }

  async get(workspaceId: string, id: string): Promise<SecretRow | null> {
    if (!UUID.test(id)) return null;
    return ((await this.db().selectFrom('cloud_secrets').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id.toLowerCase()).executeTakeFirst()) as SecretRow | undefined) ?? null;
  }

  async byName(workspaceId: string, name: string): Promise<SecretRow | null> {
    return ((await this.db().selectFrom('cloud_secrets').selectAll().where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst()) as SecretRow | undefined) ?? null;
  }

  /** Creates the secret, or replaces the value (and provider, when given) of the one with that name. */
  async put(workspaceId: string, userId: string, name: string, value: string, provider: string | undefined, mayReplace: (row: SecretRow) => boolean = () => true): Promise<{ row: SecretRow; created: boolean }> {
    for (let attempt = 0; ; attempt++) {
      const existing = await this.byName(workspaceId, name);
      const now = Date.now();
      if (existing) {
        if (!mayReplace(existing)) throw new SecretForbidden();
        const sealed = this.box.seal(value, aadOf(existing));
        const patch: Record<string, unknown> = { key_id: sealed.keyId, ciphertext: sealed.ciphertext, updated_at: now };
        if (provider !== undefined) patch.provider = provider;
        const r = await this.db().updateTable('cloud_secrets').set(patch).where('id', '=', existing.id).executeTakeFirst();
        if (Number(r.numUpdatedRows) === 1) return { row: { ...existing, ...patch } as SecretRow, created: false };
        continue;
      }
      const id = randomUUID();
      const sealed = this.box.seal(value, aadOf({ id, workspace_id: workspaceId }));
      const row: SecretRow = { id, workspace_id: workspaceId, name, provider: provider ?? null, key_id: sealed.keyId, ciphertext: sealed.ciphertext, created_by: userId, created_at: now, updated_at: now, last_used_at: null };
      try {
        // Counted and inserted under the workspace's lock: concurrent creates cannot each see room for one more.
        await this.db()
          .transaction()
          .execute(async (trx) => {
            await lockWorkspace(trx, workspaceId);
            const count = await trx.selectFrom('cloud_secrets').select((eb: any) => eb.fn.countAll().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
            if (Number((count as { n: unknown }).n) >= MAX_SECRETS) throw new TooManySecrets();
            await trx.insertInto('cloud_secrets').values(row).execute();
          });
        return { row, created: true };
      } catch (err) {
        // A concurrent create of the same name: the next round updates it.
        if (!isUniqueViolation(err) || attempt > 2) throw err;
      }
    }
  }

  /** PATCH: a new name (unique in the workspace) and/or value; null when the secret is gone. */
  async update(workspaceId: string, id: string, change: { name?: string; value?: string; provider?: string }): Promise<SecretRow | null> {
    const row = await this.get(workspaceId, id);
    if (!row) return null;
    const patch: Record<string, unknown> = { updated_at: Date.now() };
    if (change.name !== undefined) patch.name = change.name;
    if (change.provider !== undefined) patch.provider = change.provider;
    if (change.value !== undefined) {
      const sealed = this.box.seal(change.value, aadOf(row));
      patch.key_id = sealed.keyId;
      patch.ciphertext = sealed.ciphertext;
    }
    try {
      const r = await this.db().updateTable('cloud_secrets').set(patch).where('id', '=', row.id).where('workspace_id', '=', workspaceId).executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return null;
    } catch (err) {
      if (isUniqueViolation(err)) throw new SecretNameTaken();
      throw err;
    }
    return { ...row, ...patch } as SecretRow;
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    if (!UUID.test(id)) return false;
    const r = await this.db().deleteFrom('cloud_secrets').where('workspace_id', '=', workspaceId).where('id', '=', id.toLowerCase()).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /**
   * The plaintext of the workspace's secret `name` for a running node, marking
   * it used; a value sealed under a retired key that is still configured is
   * re-sealed under the active one. Undefined when there is no such secret;
   * an error when no configured key opens it.
   */
  async reveal(workspaceId: string, name: string): Promise<string | undefined> {
    const row = await this.byName(workspaceId, name);
    if (!row) return undefined;
    const value = this.box.open(row.key_id, row.ciphertext, aadOf(row));
    if (value === null) throw new Error(`the stored secret "${name}" cannot be decrypted with the configured keys (--secrets-key)`);
    await this.db().updateTable('cloud_secrets').set({ last_used_at: Date.now() }).where('id', '=', row.id).execute();
    if (row.key_id !== this.box.activeKeyId) {
      const sealed = this.box.seal(value, aadOf(row));
      // Only if the row still holds what was opened: a concurrent PATCH wins.
      await this.db().updateTable('cloud_secrets').set({ key_id: sealed.keyId, ciphertext: sealed.ciphertext }).where('id', '=', row.id).where('ciphertext', '=', row.ciphertext).execute();
    }
    return value;
  }
}
