import pg from 'pg';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let probe: Promise<boolean> | undefined;

/**
 * Whether the PostgreSQL half of the suite runs. TEST_POSTGRES=1 demands it
 * (CI: an unreachable server fails the run), TEST_POSTGRES=0 skips it, and
 * otherwise it runs when the server answers.
 */
export function postgresAvailable(): Promise<boolean> {
  probe ??= (async () => {
    if (process.env.TEST_POSTGRES === '0') return false;
    const c = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 15_000 });
    try {
      await c.connect();
      await c.query('select 1');
      return true;
    } catch (err) {
      if (process.env.TEST_POSTGRES === '1') throw new Error(`TEST_POSTGRES=1 but PostgreSQL is unreachable at ${TEST_DATABASE_URL}: ${err}`);
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  })();
  return probe;
}
