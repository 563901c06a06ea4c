import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { postgresAvailable, TEST_DATABASE_URL } from '@svc/testkit';

const root = path.resolve(import.meta.dirname, '../..');

// The crash test at CI size: a separate worker process is SIGKILLed three times, each after it delivered a share of 500 changes.
for (const pg of [false, true]) {
it(`no committed change is lost when the worker process is killed (crash-test, 500 changes, ${pg ? 'PostgreSQL' : 'SQLite'})`, { timeout: 180_000 }, async (t) => {
  if (pg && !(await postgresAvailable())) return t.skip('PostgreSQL not available');
  const args = ['--import', 'tsx', 'scripts/crash-test.ts', '500', '--kills', '3', '--per-request', '10', '--duration', '4', ...(pg ? ['--database-url', TEST_DATABASE_URL] : [])];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, out);
  // Write transactions take SQLite's write lock at BEGIN (busy_timeout applies), so no request fails while the worker is killed and restarted.
  assert.match(out, /\d+ changes committed/);
  assert.doesNotMatch(out, /API requests? failed/);
  // Kills follow deliveries, not the clock; a worker that delivers the rest of the backlog in one burst after a
  // restart leaves no progress for a later kill, so at least one kill (mid-batch) is what every run guarantees.
  const kills = Number(/worker SIGKILLed (\d+) times in total/.exec(out)?.[1] ?? 0);
  assert.ok(kills >= 1 && kills <= 3, out);
  assert.match(out, /delivered (\d+)\/\1 changes .* lost 0/);
});
}
