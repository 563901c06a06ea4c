import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cleanupConfig, client, forEachStorage, testConfig } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { inventoryConfig } from '../../src/config.ts';
import { ADMIN_TOKEN, serviceArgs, startApi, type Api } from './helpers.ts';

const NOT_AUTH = { detail: 'Authentication credentials were not provided.' };
const DENIED = { detail: 'You do not have permission to perform this action.' };

forEachStorage('inventory API: authentication and permissions', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  async function userWithToken(username: string, canWrite: boolean, writeEnabled: boolean, extra: Record<string, unknown> = {}) {
    const u = await api.http.post('/api/users/users/', { username, password: 'pw', can_write: canWrite, ...extra });
    assert.equal(u.status, 201, JSON.stringify(u.body));
    const t = await api.http.post('/api/users/tokens/', { user: u.body.id, write_enabled: writeEnabled, description: username });
    assert.equal(t.status, 201, JSON.stringify(t.body));
    return { user: u.body, token: t.body };
  }

  it('refuses missing and bad credentials with 403 as NetBox', async () => {
    let r = await api.anon.get('/api/dcim/sites/');
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, NOT_AUTH);
    r = await api.anon.post('/api/dcim/sites/', { name: 'x', slug: 'x' });
    assert.deepEqual([r.status, r.body], [403, NOT_AUTH]);
    r = await api.as('not-a-real-token-value').get('/api/dcim/sites/');
    assert.deepEqual([r.status, r.body], [403, { detail: 'Invalid token' }]);
    r = await api.anon.get('/api/dcim/sites/', { authorization: `Bearer ${ADMIN_TOKEN}` });
    assert.equal(r.status, 200);
    r = await api.anon.get('/api/dcim/sites/', { authorization: 'Basic abc' });
    assert.deepEqual([r.status, r.body], [403, NOT_AUTH]);
  });

  it('lets read-only users and read-only tokens read but not write', async () => {
    const reader = await userWithToken('reader', false, true);
    const ro = await userWithToken('writer-ro', true, false);
    for (const token of [reader.token.key, ro.token.key]) {
      const h = api.as(token);
      assert.equal((await h.get('/api/dcim/sites/')).status, 200);
      const r = await h.post('/api/dcim/sites/', { name: 'nope', slug: 'nope' });
      assert.deepEqual([r.status, r.body], [403, DENIED]);
      assert.equal((await h.delete('/api/dcim/sites/1/')).status, 403);
      assert.equal((await h.get('/api/users/users/')).status, 403);
      assert.equal((await h.post('/api/users/tokens/', {})).status, 403);
    }
    assert.equal((await api.http.get('/api/dcim/sites/?name=nope')).body.count, 0);
  });

  it('lets writers write, recording them in the change log', async () => {
    const w = await userWithToken('writer', true, true);
    const h = api.as(w.token.key);
    const r = await h.post('/api/dcim/sites/', { name: 'W', slug: 'w' });
    assert.equal(r.status, 201);
    const log = await h.get(`/api/core/object-changes/?request_id=${r.headers.get('x-request-id')}`);
    assert.equal(log.body.results[0].user_name, 'writer');
    assert.equal(log.body.results[0].user.id, w.user.id);
    assert.deepEqual(api.events.at(-1)!.map((e) => e.username), ['writer']);
  });

  it('shows a token key only when it is created and stores only its hash', async () => {
    const t = await api.http.post('/api/users/tokens/', { write_enabled: false, description: 'mine', key: 'my-own-key-1234567890' });
    assert.equal(t.status, 201);
    assert.equal(t.body.key, 'my-own-key-1234567890');
    assert.equal(t.body.display, '**********7890');
    assert.equal(t.body.user.username, 'admin');
    const again = await api.http.get(`/api/users/tokens/${t.body.id}/`);
    assert.equal(again.body.key, undefined);
    assert.equal(again.body.write_enabled, false);
    const list = await api.http.get('/api/users/tokens/');
    assert.ok(list.body.results.every((x: any) => x.key === undefined));
    const dup = await api.http.post('/api/users/tokens/', { key: 'my-own-key-1234567890' });
    assert.deepEqual(dup.body, { key: ['token with this key already exists.'] });
    const stored = await api.server.app.inventoryDeps.storage.db.selectFrom('users_token').select('key_hash').where('id', '=', t.body.id).executeTakeFirstOrThrow();
    assert.match(stored.key_hash, /^[0-9a-f]{64}$/);
    assert.notEqual(stored.key_hash, 'my-own-key-1234567890');
    // Revoking it makes it invalid at once.
    assert.equal((await api.http.delete(`/api/users/tokens/${t.body.id}/`)).status, 204);
    assert.deepEqual((await api.as('my-own-key-1234567890').get('/api/dcim/sites/')).body, { detail: 'Invalid token' });
  });

  it('provisions a token from username and password, and records token use', async () => {
    await api.http.post('/api/users/users/', { username: 'prov', password: 's3cret', can_write: true });
    let r = await api.anon.post('/api/users/tokens/provision/', { username: 'prov', password: 'wrong' });
    assert.deepEqual([r.status, r.body], [403, { detail: 'Invalid username/password' }]);
    r = await api.anon.post('/api/users/tokens/provision/', { username: 'prov' });
    assert.deepEqual([r.status, r.body], [400, { password: ['This field is required.'] }]);
    r = await api.anon.post('/api/users/tokens/provision/', { username: 'prov', password: 's3cret', write_enabled: false });
    assert.equal(r.status, 201);
    assert.equal(r.body.user.username, 'prov');
    assert.equal(r.body.last_used, null);
    const h = api.as(r.body.key);
    assert.equal((await h.get('/api/dcim/sites/')).status, 200);
    assert.equal((await h.post('/api/dcim/sites/', { name: 'p', slug: 'p' })).status, 403);
    const t = await api.http.get(`/api/users/tokens/${r.body.id}/`);
    assert.match(t.body.last_used, /^\d{4}-/);
  });

  it('refuses expired tokens and inactive users', async () => {
    const u = (await api.http.post('/api/users/users/', { username: 'temp', can_write: true })).body;
    const t = (await api.http.post('/api/users/tokens/', { user: u.id, expires: '2001-01-01T00:00:00Z' })).body;
    assert.deepEqual((await api.as(t.key).get('/api/dcim/sites/')).body, { detail: 'Token expired' });
    const t2 = (await api.http.post('/api/users/tokens/', { user: u.id })).body;
    assert.equal((await api.as(t2.key).get('/api/dcim/sites/')).status, 200);
    await api.http.patch(`/api/users/users/${u.id}/`, { is_active: false });
    assert.deepEqual((await api.as(t2.key).get('/api/dcim/sites/')).body, { detail: 'User inactive' });
  });

  it('validates users', async () => {
    let r = await api.http.post('/api/users/users/', { username: 'bad name!' });
    assert.deepEqual(r.body, { username: ['Enter a valid username. This value may contain only letters, numbers, and @/./+/-/_ characters.'] });
    r = await api.http.post('/api/users/users/', { username: 'admin' });
    assert.deepEqual(r.body, { username: ['A user with that username already exists.'] });
    r = await api.http.post('/api/users/users/', {});
    assert.deepEqual(r.body, { username: ['This field is required.'] });
    r = await api.http.post('/api/users/users/', { username: 'ok', is_superuser: 'maybe' });
    assert.deepEqual(r.body, { is_superuser: ['Must be a valid boolean.'] });
    r = await api.http.post('/api/users/tokens/', { user: 424242 });
    assert.deepEqual(r.body, { user: ['Related object not found using the provided numeric ID: 424242'] });
    const me = (await api.http.get('/api/users/users/?username=admin')).body.results[0];
    assert.equal(me.is_superuser, true);
    r = await api.http.delete(`/api/users/users/${me.id}/`);
    assert.equal(r.status, 400);
  });

  it('creates the admin token on first start only', async () => {
    const cfg = testConfig('inventory', storage, { runWorkers: false });
    try {
      let app = await buildApp(cfg);
      const key = app.generatedAdminToken!;
      assert.match(key, /^[0-9a-f]{40}$/);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(app.server.address() as any).port}`;
      assert.equal((await client(url, { authorization: `Token ${key}` }).get('/api/users/users/')).status, 200);
      await app.close();
      app = await buildApp(cfg);
      assert.equal(app.generatedAdminToken, undefined);
      await app.close();
      // A given token is added even to an existing database.
      app = await buildApp({ ...cfg, flags: { adminToken: 'given-token-abcdefgh' } });
      assert.equal(app.generatedAdminToken, undefined);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const url2 = `http://127.0.0.1:${(app.server.address() as any).port}`;
      assert.equal((await client(url2, { authorization: 'Token given-token-abcdefgh' }).post('/api/dcim/sites/', { name: 'S', slug: 's' })).status, 201);
      await app.close();
      await assert.rejects(buildApp({ ...cfg, flags: { adminToken: 'short' } }), /admin token/);
    } finally {
      await cleanupConfig(cfg);
    }
  });
});

it('reads INVENTORY_ADMIN_TOKEN when --admin-token is absent', () => {
  const base = testConfig('inventory', 'sqlite');
  fs.rmSync(base.dataDir, { recursive: true, force: true });
  assert.equal(inventoryConfig(base, { INVENTORY_ADMIN_TOKEN: 'from-env-123' }).adminToken, 'from-env-123');
  assert.equal(inventoryConfig({ ...base, flags: { adminToken: 'flag-wins-1' } }, { INVENTORY_ADMIN_TOKEN: 'from-env-123' }).adminToken, 'flag-wins-1');
});

forEachStorage('inventory main.ts', (storage) => {
  it('prints a generated admin token once on first start', async () => {
    const cfg = testConfig('inventory', storage);
    const root = path.resolve(import.meta.dirname, '../..');
    const args = [...serviceArgs('inventory'), '--port', '0', '--data-dir', cfg.dataDir, '--no-workers'];
    if (cfg.databaseUrl) args.push('--database-url', cfg.databaseUrl, '--pg-schema', cfg.pgSchema);
    /** Runs main.ts until `ready` says the output (and the running server) show what the test needs, then stops it. */
    const run = (ready: (out: string) => Promise<boolean>) =>
      new Promise<string>((resolve, reject) => {
        const env = { ...process.env, LOG_LEVEL: 'silent', INVENTORY_ADMIN_TOKEN: '', DATABASE_URL: '' };
        const child = spawn(process.execPath, args, { cwd: root, env });
        let out = '';
        let checking = false;
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`main.ts did not start: ${out}`));
        }, 60_000);
        child.stdout.on('data', (b) => {
          out += b;
          if (checking || child.killed) return;
          checking = true;
          ready(out).then(
            (yes) => {
              checking = false;
              if (yes && !child.killed) child.kill('SIGTERM');
            },
            (err) => {
              child.kill('SIGKILL');
              reject(err);
            },
          );
        });
        child.on('exit', () => {
          clearTimeout(timer);
          resolve(out);
        });
      });
    const urlOf = (out: string) => /inventory listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
    try {
      // The token line follows the listening line: stop once it is there (no fixed wait).
      const first = await run(async (out) => /shown only now\): [0-9a-f]{40}\n/.test(out));
      assert.ok(urlOf(first), first);
      const token = /Created superuser "admin" with API token \(shown only now\): ([0-9a-f]{40})/.exec(first)?.[1];
      assert.ok(token, first);
      // Second start: the printed token still works and is still the only one (no new token was made, so none
      // could be printed), checked over HTTP while the process runs.
      let tokens: number | undefined;
      const second = await run(async (out) => {
        const url = urlOf(out);
        if (!url) return false;
        const r = await client(url, { authorization: `Token ${token}` }).get('/api/users/tokens/');
        assert.equal(r.status, 200, r.text);
        tokens = r.body.count;
        return true;
      });
      assert.equal(tokens, 1);
      assert.doesNotMatch(second, /API token/);
    } finally {
      await cleanupConfig(cfg);
    }
  });
});
