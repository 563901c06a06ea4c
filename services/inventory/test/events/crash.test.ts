import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

// The crash test at CI size: a separate worker process is SIGKILLed (up to three times) during 500 changes and their delivery.
it('no committed change is lost when the worker process is killed (crash-test, 500 changes)', { timeout: 120_000 }, async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/crash-test.ts', '500', '--kills', '3', '--per-request', '10', '--duration', '8'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, out);
  // Write transactions take SQLite's write lock at BEGIN (busy_timeout applies), so no request fails while the worker is killed and restarted.
  assert.match(out, /\d+ changes committed/);
  assert.doesNotMatch(out, /API requests? failed/);
  assert.match(out, /worker SIGKILLed [2-9] times in total/);
  assert.match(out, /delivered (\d+)\/\1 changes .* lost 0/);
});
