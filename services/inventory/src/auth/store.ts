import type { Kysely } from 'kysely';
import type { Storage } from '@svc/storage';
import { hashTokenKey, newTokenKey, validTokenKey } from './keys.ts';
import type { Principal } from './principal.ts';
import { loadGrants } from './permissions.ts';

export interface UserRow {
  id: number;
  username: string;
  password_hash: string | null;
  first_name: string;
  last_name: string;
  email: string;
  is_superuser: unknown;
  can_write: unknown;
  is_active: unknown;
  date_joined: unknown;
  last_login: unknown;
}

export interface TokenRow {
  id: number;
  user_id: number;
  key_hash: string;
  key_prefix: string;
  created: unknown;
  expires: unknown;
  last_used: unknown;
  write_enabled: unknown;
  description: string;
}

/** Resolves a presented key to its principal; null when unknown, expired or the user is inactive. */
export async function principalForKey(storage: Storage, key: string): Promise<{ principal: Principal | null; reason?: string }> {
  const row = await storage.db
    .selectFrom('users_token as t')
    .innerJoin('users_user as u', 'u.id', 't.user_id')
    .select(['t.id as token_id', 't.expires', 't.last_used', 't.write_enabled', 'u.id as user_id', 'u.username', 'u.is_superuser', 'u.can_write', 'u.is_active'])
    .where('t.key_hash', '=', hashTokenKey(key))
    .executeTakeFirst();
  if (!row) return { principal: null, reason: 'Invalid token' };
  const d = storage.dialect;
  if (row.expires && new Date(d.readTimestamp(row.expires)).getTime() < Date.now()) return { principal: null, reason: 'Token expired' };
  if (!d.readBool(row.is_active)) return { principal: null, reason: 'User inactive' };
  // As NetBox: record use at most once a minute, so reads do not turn into writes.
  const now = Date.now();
  if (!row.last_used || new Date(d.readTimestamp(row.last_used)).getTime() < now - 60_000) {
    await storage.db.updateTable('users_token').set({ last_used: d.timestamp(new Date(now)) }).where('id', '=', row.token_id).execute();
  }
  return {
    principal: {
      userId: Number(row.user_id),
      username: row.username,
      isSuperuser: d.readBool(row.is_superuser),
      canWrite: d.readBool(row.can_write),
      tokenId: Number(row.token_id),
      writeEnabled: d.readBool(row.write_enabled),
      grants: d.readBool(row.is_superuser) ? null : await loadGrants(storage.db, d, Number(row.user_id)),
    },
  };
}

/**
 * Makes sure a superuser token exists: with `key`, that key (created for user
 * "admin" when missing); without, a fresh key only when no user exists yet.
 * Returns the key when it was generated here, so the caller can print it once.
 */
export async function ensureAdminToken(storage: Storage, key: string | undefined): Promise<string | undefined> {
  const d = storage.dialect;
  if (key !== undefined && !validTokenKey(key)) throw new Error('the admin token must be 8 to 256 printable characters without spaces');
  return storage.db.transaction().execute(async (trx: Kysely<any>) => {
    if (key) {
      const exists = await trx.selectFrom('users_token').select('id').where('key_hash', '=', hashTokenKey(key)).executeTakeFirst();
      if (exists) return undefined;
    } else {
      const anyUser = await trx.selectFrom('users_user').select('id').limit(1).executeTakeFirst();
      if (anyUser) return undefined;
    }
    const now = d.timestamp(new Date());
    let admin = await trx.selectFrom('users_user').select('id').where('username', '=', 'admin').executeTakeFirst();
    if (!admin) {
      admin = await trx
        .insertInto('users_user')
        .values({ username: 'admin', password_hash: null, first_name: '', last_name: '', email: '', is_superuser: d.bool(true), can_write: d.bool(true), is_active: d.bool(true), date_joined: now })
        .returning('id')
        .executeTakeFirstOrThrow();
    }
    const generated = key ? undefined : newTokenKey();
    const k = key ?? generated!;
    await trx
      .insertInto('users_token')
      .values({ user_id: admin.id, key_hash: hashTokenKey(k), key_prefix: k.slice(-4), created: now, write_enabled: d.bool(true), description: 'admin token created at first start' })
      .execute();
    return generated;
  });
}
