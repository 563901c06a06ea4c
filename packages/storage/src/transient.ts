/**
 * Errors that mean "the database was busy, try again" rather than "this
 * request is wrong" or "the code is broken": a lock or serialisation
 * conflict that a retry of the same request can get past.
 */
const SQLITE_TRANSIENT = /^SQLITE_(BUSY|LOCKED)(_[A-Z]+)?$/;
// serialization_failure, deadlock_detected, lock_not_available.
const PG_TRANSIENT = new Set(['40001', '40P01', '55P03']);

export function isTransientStorageError(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    if (SQLITE_TRANSIENT.test(code) || PG_TRANSIENT.has(code)) return true;
  }
  return false;
}
