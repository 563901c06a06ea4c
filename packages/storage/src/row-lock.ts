import { sql, type Kysely } from 'kysely';

/**
 * Inside a transaction: takes the write lock of the row whose `key` column
 * equals `value` and holds it until the transaction ends, on either dialect.
 * A no-op update (`touch` set to itself), because SQLite has no FOR UPDATE;
 * unlike a SELECT it also tells whether the row still exists, in the same
 * statement. Writers that lock the same rows in the same order then run one
 * after another on any number of processes. False when no row matches.
 */
export async function holdRow(trx: Kysely<any>, table: string, key: string, value: unknown, touch = key): Promise<boolean> {
  const r = await trx.updateTable(table).set({ [touch]: sql.ref(touch) }).where(key, '=', value).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
