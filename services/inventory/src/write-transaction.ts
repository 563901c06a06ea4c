import type { Kysely } from 'kysely';
import type { Storage } from '@svc/storage';

// Kept apart from storage.ts, which opens and migrates the database and so stands above every module with tables.

const UNIQUE_VIOLATION = new Set(['23505', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);
// PostgreSQL deadlock_detected and serialization_failure: the transaction was rolled back and may simply run again.
const RETRYABLE = new Set(['40P01', '40001']);

export function isUniqueViolation(err: unknown): boolean {
  return UNIQUE_VIOLATION.has(String((err as { code?: unknown })?.code ?? ''));
}

/**
 * A write transaction that is run again when it lost a race: a unique key
 * another writer committed first (the re-run's validators then see that row
 * and answer exactly as a sequential clash would) or a PostgreSQL deadlock.
 * `fn` must keep its state inside the transaction, as it may run more than once.
 */
export async function writeTransaction<T>(storage: Storage, fn: (trx: Kysely<any>) => Promise<T>, tries = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await storage.db.transaction().execute(fn);
    } catch (err) {
      const code = String((err as { code?: unknown })?.code ?? '');
      if (attempt >= tries || !(UNIQUE_VIOLATION.has(code) || RETRYABLE.has(code))) throw err;
    }
  }
}
