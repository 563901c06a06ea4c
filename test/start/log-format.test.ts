import assert from 'node:assert/strict';
import { test } from 'node:test';
// @ts-expect-error: a plain JavaScript module of the scripts folder, without types
import { logFormatter } from '../../scripts/log-format.mjs';

/** How npm start shows its services' output lines (scripts/log-format.mjs). */

const line = (o: object) => JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 2, 3, 4, 5), pid: 1, hostname: 'h', service: 'memory', ...o });

test('on a terminal a request is one readable line at its completion', () => {
  const f = logFormatter('memory', { pretty: true, color: false });
  assert.equal(f(line({ request_id: 'r1', req: { method: 'GET', url: '/apps/x' }, msg: 'incoming request' })), null);
  assert.equal(f(line({ request_id: 'r1', res: { statusCode: 404 }, responseTime: 3.21, msg: 'request completed' })), '03:04:05 memory    INFO  GET /apps/x → 404 (3.2 ms)');
  assert.equal(f(line({ level: 40, msg: 'job failed', task: 'derive', attempt: 2 })), '03:04:05 memory    WARN  job failed task=derive attempt=2');
  assert.match(f(line({ level: 50, msg: 'unhandled error', err: { message: 'boom', stack: 'Error: boom\n    at x' } }))!, /ERROR unhandled error \n {4}Error: boom\n {8}at x/);
});

test('otherwise pino lines stay JSON; other lines get the service in front; the listening line is left to the banner', () => {
  const f = logFormatter('inventory', { pretty: false });
  const json = line({ msg: 'request completed', res: { statusCode: 200 } });
  assert.equal(f(json), json);
  assert.equal(f('received SIGTERM, shutting down'), 'inventory received SIGTERM, shutting down');
  assert.equal(f(line({ msg: 'Server listening at http://127.0.0.1:8080' })), null);
  assert.equal(f(''), null);
  assert.equal(f('{not json'), 'inventory {not json');
});
