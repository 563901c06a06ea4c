import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { uiClient } from '../ui/ui-client.ts';
import { ADMIN_TOKEN } from './helpers.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function start(storage: 'sqlite' | 'postgres', flags: Record<string, string>) {
  const server = await startTestServer('invlogin', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN_TOKEN, ...flags } });
  const admin = client(server.url, { authorization: `Token ${ADMIN_TOKEN}` });
  const anon = client(server.url);
  const u = await admin.post('/api/users/users/', { username: 'alice', password: 'correct horse' });
  assert.equal(u.status, 201, u.text);
  return { server, admin, anon };
}

forEachStorage('inventory: unauthenticated credential checks are throttled and hashed off the event loop', (storage) => {
  const servers: TestServer[] = [];
  after(async () => {
    for (const s of servers) await s.close();
  });

  it('limits attempts per username with 429, Retry-After and DRF wording', async () => {
    const { server, anon } = await start(storage, { loginRatePerUsername: '3', loginRatePerAddress: '1000', loginRateWindow: '600' });
    servers.push(server);
    for (let i = 0; i < 3; i++) assert.equal((await anon.post('/api/users/tokens/provision/', { username: 'alice', password: 'wrong' })).status, 403);
    const r = await anon.post('/api/users/tokens/provision/', { username: 'ALICE', password: 'correct horse' });
    assert.equal(r.status, 429, r.text);
    const wait = Number(r.headers.get('retry-after'));
    assert.ok(wait >= 1 && wait <= 600, `Retry-After ${wait}`);
    assert.match(r.body.detail, /^Request was throttled\. Expected available in \d+ seconds?\.$/);
    // Another username from the same address is not affected.
    assert.equal((await anon.post('/api/users/tokens/provision/', { username: 'bob', password: 'x' })).status, 403);
  });

  it('limits attempts per client address, whatever the usernames', async () => {
    const { server, anon } = await start(storage, { loginRatePerUsername: '1000', loginRatePerAddress: '5', loginRateWindow: '600' });
    servers.push(server);
    for (let i = 0; i < 5; i++) assert.equal((await anon.post('/api/users/tokens/provision/', { username: `user${i}`, password: 'x' })).status, 403);
    const r = await anon.post('/api/users/tokens/provision/', { username: 'alice', password: 'correct horse' });
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
  });

  it('the UI login is throttled per client address too', async () => {
    const { server } = await start(storage, { loginRatePerAddress: '3', loginRateWindow: '600' });
    servers.push(server);
    const c = uiClient(server.url);
    for (let i = 0; i < 3; i++) assert.equal((await c.login('wrong-token-0123456789')).status, 400);
    const r = await c.login(ADMIN_TOKEN);
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
    assert.match(r.text, /Too many login attempts/);
  });

  it('spends a password hash on unknown usernames too, and never blocks other requests while hashing', async () => {
    const { server, anon } = await start(storage, { loginRatePerUsername: '0', loginRatePerAddress: '0' });
    servers.push(server);
    const timed = async (body: unknown) => {
      const t0 = performance.now();
      const r = await anon.post('/api/users/tokens/provision/', body);
      assert.equal(r.status, 403);
      return performance.now() - t0;
    };
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 15; i++) {
      known.push(await timed({ username: 'alice', password: `wrong${i}` }));
      unknown.push(await timed({ username: `nobody${i}`, password: `wrong${i}` }));
    }
    // Without the dummy hash an unknown username answers in a fraction of the time; the ratio, not a clock, is compared.
    const ratio = median(unknown) / median(known);
    assert.ok(ratio > 0.5 && ratio < 2, `unknown/known median time ratio ${ratio.toFixed(2)} (${median(unknown).toFixed(1)} / ${median(known).toFixed(1)} ms)`);

    // 40 concurrent attempts against a real user: other requests are answered while they hash.
    const provisionTimes: number[] = [];
    const healthTimes: number[] = [];
    let done = false;
    const attempts = Promise.all(Array.from({ length: 40 }, (_, i) => timed({ username: 'alice', password: `p${i}` }).then((t) => provisionTimes.push(t)))).finally(() => (done = true));
    while (!done || healthTimes.length < 5) {
      const t0 = performance.now();
      assert.equal((await anon.get('/health')).status, 200);
      healthTimes.push(performance.now() - t0);
      if (healthTimes.length > 200) break;
    }
    await attempts;
    assert.ok(median(healthTimes) < median(provisionTimes) / 4, `health p50 ${median(healthTimes).toFixed(1)} ms vs provision p50 ${median(provisionTimes).toFixed(1)} ms`);
  });
});
