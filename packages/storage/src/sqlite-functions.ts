import type BetterSqlite3 from 'better-sqlite3';
import { jsonContains } from './json-contains.ts';

/** Functions our SQL needs on SQLite that PostgreSQL has built in. */
export function registerSqliteFunctions(db: BetterSqlite3.Database): void {
  db.function('json_contains', { deterministic: true }, (left: unknown, right: unknown) => {
    if (typeof left !== 'string' || typeof right !== 'string') return 0;
    try {
      return jsonContains(JSON.parse(left), JSON.parse(right)) ? 1 : 0;
    } catch {
      return 0;
    }
  });
}
