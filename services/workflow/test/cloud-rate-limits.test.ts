import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client } from '@svc/testkit';
import { buildApp } from '../src/app.ts';
import { isCloudError } from './cloud-helpers.ts';
import { startWorkflow } from './helpers.ts';

test('hosted runtime on PostgreSQL: two API processes count against one rate-limit window', async () => {
  const srv = await startWorkflow('postgres', { runtime: 'cloud', authRateLimits: 'signup=4,login_account=3' });
  const second = await buildApp(srv.cfg);
  try {
    const url2 = await second.listen({ port: 0, host: '127.0.0.1' });
    const apis = [client(srv.url), client(url2)];
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await apis[i % 2]!.post('/api/auth/signup', { email: `rl-${process.pid}-${i}@example.test`, password: 'correct horse battery staple' });
      statuses.push(r.status);
      if (r.status === 429) {
        assert.ok(isCloudError(r.body, 'rate_limited'));
        assert.match(String(r.headers.get('retry-after')), /^[1-9]\d*$/);
      }
    }
    // Four signups per window from this address in all, whichever process answers (not four per process).
    assert.deepEqual(statuses, [201, 201, 201, 201, 429, 429]);

    // Failed logins of one account: counted across both processes, and both refuse once it is over.
    const email = `rl-${process.pid}-0@example.test`;
    const wrong = [];
    for (let i = 0; i < 3; i++) wrong.push((await apis[i % 2]!.post('/api/auth/login', { email, password: 'wrong password here' })).status);
    assert.deepEqual(wrong, [401, 401, 401]);
    for (const api of apis) {
      const r = await api.post('/api/auth/login', { email, password: 'correct horse battery staple' });
      assert.equal(r.status, 429, 'the account is locked for its window on every process');
    }
  } finally {
    await second.close();
    await srv.close();
  }
});
