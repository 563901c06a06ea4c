import type { Storage } from '@svc/storage';
import { hashTokenKey, newTokenKey } from './keys.ts';
import type { TokenRow } from './store.ts';

/**
 * API token domain functions shared by `/api/users/tokens/` and the UI's own-token pages (`/user/api-tokens/`):
 * a token is stored as the SHA-256 hash of its key and the key's last four characters; the key itself exists only in
 * what `createToken` returns.
 */

export interface NewToken {
  userId: number;
  /** A chosen key (already validated); a random 40-hex key when absent. */
  key?: string;
  writeEnabled: boolean;
  description: string;
  expires: Date | null;
}

export async function createToken(storage: Storage, t: NewToken): Promise<{ row: TokenRow; key: string }> {
  const d = storage.dialect;
  const key = t.key ?? newTokenKey();
  const row = (await storage.db
    .insertInto('users_token')
    .values({
      user_id: t.userId,
      key_hash: hashTokenKey(key),
      key_prefix: key.slice(-4),
      created: d.timestamp(new Date()),
      expires: t.expires ? d.timestamp(t.expires) : null,
      write_enabled: d.bool(t.writeEnabled),
      description: t.description,
    })
    .returningAll()
    .executeTakeFirstOrThrow()) as TokenRow;
  return { row, key };
}

/** A user's tokens, oldest first. */
export async function tokensOfUser(storage: Storage, userId: number): Promise<TokenRow[]> {
  return (await storage.db.selectFrom('users_token').selectAll().where('user_id', '=', userId).orderBy('id').execute()) as TokenRow[];
}

/** Deletes a token (only one of `userId`'s when given); whether one was deleted. */
export async function deleteToken(storage: Storage, id: number, userId?: number): Promise<boolean> {
  let q = storage.db.deleteFrom('users_token').where('id', '=', id);
  if (userId !== undefined) q = q.where('user_id', '=', userId);
  return Number((await q.executeTakeFirst()).numDeletedRows) > 0;
}
