import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { passwordHashes } from '../../src/auth/keys.ts';
import { uiClient } from '../ui/ui-client.ts';
import { ADMIN_TOKEN } from './helpers.ts';

/** Polls until `fn` holds (a failure detector only: a correct service ends it at once). */
async function until(fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

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
  // The limiter counts in memory (auth/throttle.ts), never in the storage: its tests run on SQLite only. The hashing
  // test reads users of each kind (inactive, without a password) from the storage: both.
  const limiter = { skip: storage !== 'sqlite' && 'the in-memory limiter: checked on SQLite' };
  after(async () => {
    for (const s of servers) await s.close();
  });

  it('limits attempts per username with 429, Retry-After and DRF wording', limiter, async () => {
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

  it('limits attempts per client address, whatever the usernames', limiter, async () => {
    const { server, anon } = await start(storage, { loginRatePerUsername: '1000', loginRatePerAddress: '5', loginRateWindow: '600' });
    servers.push(server);
    for (let i = 0; i < 5; i++) assert.equal((await anon.post('/api/users/tokens/provision/', { username: `user${i}`, password: 'x' })).status, 403);
    const r = await anon.post('/api/users/tokens/provision/', { username: 'alice', password: 'correct horse' });
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
  });

  it('the UI login is throttled per client address too', limiter, async () => {
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
    const { server, admin, anon } = await start(storage, { loginRatePerUsername: '0', loginRatePerAddress: '0' });
    servers.push(server);
    assert.equal((await admin.post('/api/users/users/', { username: 'nopass' })).status, 201);
    assert.equal((await admin.post('/api/users/users/', { username: 'retired', password: 'correct horse', is_active: false })).status, 201);
    // The work done, not the time taken, is compared (a loaded machine makes timings noise): every check runs
    // exactly one scrypt hash with the same parameters — a real user's, an unknown user's (against a dummy
    // hash made like a real one), a user without a password's, an inactive user's.
    const hashesFor = async (body: { username: string; password: string }) => {
      const before = passwordHashes.started;
      const r = await anon.post('/api/users/tokens/provision/', body);
      assert.equal(r.status, 403, r.text);
      assert.deepEqual(r.body, { detail: 'Invalid username/password' });
      return passwordHashes.started - before;
    };
    assert.equal(await hashesFor({ username: 'alice', password: 'wrong' }), 1);
    assert.equal(await hashesFor({ username: 'nobody', password: 'wrong' }), 1);
    assert.equal(await hashesFor({ username: 'nopass', password: 'wrong' }), 1);
    assert.equal(await hashesFor({ username: 'retired', password: 'correct horse' }), 1);
    const before = passwordHashes.started;
    const ok = await anon.post('/api/users/tokens/provision/', { username: 'alice', password: 'correct horse' });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(passwordHashes.started - before, 1);

    // 40 concurrent attempts against a real user: other requests are answered while hashes are still running
    // (a hash on the event loop would finish before any other request could be read).
    let pending = 40;
    const attempts = Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const r = await anon.post('/api/users/tokens/provision/', { username: 'alice', password: `p${i}` });
        assert.equal(r.status, 403);
        pending--;
      }),
    );
    await until(async () => passwordHashes.running > 0, 'a hash running');
    let answeredWhileHashing = 0;
    while (pending > 0) {
      const r = await anon.get('/health');
      assert.equal(r.status, 200);
      if (passwordHashes.running > 0) answeredWhileHashing++;
    }
    await attempts;
    assert.ok(answeredWhileHashing >= 1, 'no request was answered while the hashes ran');
  });
});
