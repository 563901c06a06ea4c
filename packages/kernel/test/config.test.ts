import { it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '@svc/kernel';

it('loadConfig reads `--flag value` as well as `--flag=value`', () => {
  const cfg = loadConfig('svc', { port: 8080 }, ['--port', '0', '--data-dir', '/tmp/x', '--admin-token', 'abc', '--no-workers', '--log-level=warn'], {});
  assert.equal(cfg.port, 0);
  assert.equal(cfg.dataDir, '/tmp/x');
  assert.equal(cfg.flags.adminToken, 'abc');
  assert.equal(cfg.runWorkers, false);
  assert.equal(cfg.logLevel, 'warn');
});
