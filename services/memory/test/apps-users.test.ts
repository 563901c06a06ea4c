import { it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { ISO, MISSING, ok, uniq, useServer, UUID } from './helpers.ts';

forEachStorage('memory apps and users', (storage) => {
  const s = useServer(storage);

  it('creates, gets, renames and gets-or-creates apps', async () => {
    const name = uniq('app');
    const a = await ok(s.http.post('/apps', { name, metadata: { a: 1 } }));
    assert.deepEqual(Object.keys(a), ['id', 'name', 'h_metadata', 'metadata', 'created_at']);
    assert.match(a.id, UUID);
    assert.match(a.created_at, ISO);
    assert.deepEqual(a.h_metadata, { a: 1 });
    assert.deepEqual(a.metadata, { a: 1 });
    assert.deepEqual(await ok(s.http.get(`/apps/${a.id}`)), a);
    assert.deepEqual(await ok(s.http.get(`/apps/name/${encodeURIComponent(name)}`)), a);
    assert.deepEqual(await ok(s.http.get(`/apps/get_or_create/${encodeURIComponent(name)}`)), a);
    // Upper-case and urn forms of the id are the same app.
    assert.deepEqual(await ok(s.http.get(`/apps/urn:uuid:${a.id.toUpperCase()}`)), a);
    assert.deepEqual(await ok(s.http.get(`/apps/${a.id.replace(/-/g, '')}`)), a);

    const renamed = uniq('renamed');
    const u = await ok(s.http.put(`/apps/${a.id}`, { name: renamed }));
    assert.equal(u.name, renamed, 'rename is applied (the reference dropped it)');
    assert.deepEqual(u.metadata, { a: 1 }, 'metadata untouched when null/absent');
    const u2 = await ok(s.http.put(`/apps/${a.id}`, { metadata: { b: 2 } }));
    assert.deepEqual(u2.metadata, { b: 2 }, 'metadata is replaced, not merged');
    assert.equal(u2.created_at, a.created_at);

    const fresh = uniq('goc');
    const g = await ok(s.http.get(`/apps/get_or_create/${fresh}`));
    assert.equal(g.name, fresh);
    assert.deepEqual(g.metadata, {});
    assert.equal((await ok(s.http.get(`/apps/get_or_create/${fresh}`))).id, g.id);
  });

  it('answers the reference errors for apps', async () => {
    const name = uniq('dup');
    await ok(s.http.post('/apps', { name }));
    let r = await s.http.post('/apps', { name });
    assert.equal(r.status, 406);
    assert.deepEqual(r.body, { detail: 'App with name may already exist' });
    assert.match(r.headers.get('content-type')!, /^application\/json/);
    r = await s.http.get(`/apps/${MISSING}`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { detail: 'App not found' });
    r = await s.http.get(`/apps/name/${uniq('nope')}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'App not found' }]);
    r = await s.http.put(`/apps/${MISSING}`, { name: 'x' });
    assert.deepEqual([r.status, r.body], [404, { detail: 'App not found' }]);
    const other = await ok(s.http.post('/apps', { name: uniq('other') }));
    r = await s.http.put(`/apps/${other.id}`, { name });
    assert.deepEqual([r.status, r.body], [406, { detail: 'App with name may already exist' }]);
    r = await s.http.post('/apps', { name: 'x'.repeat(513) });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail, [
      { type: 'string_too_long', loc: ['body', 'name'], msg: 'String should have at most 512 characters', input: 'x'.repeat(513), ctx: { max_length: 512 } },
    ]);
  });

  it('creates, lists, gets by name, updates and gets-or-creates users', async () => {
    const a = await ok(s.http.post('/apps', { name: uniq('app') }));
    const names = ['u1', 'u2', 'u3'];
    const users = [];
    for (const n of names) users.push(await ok(s.http.post(`/apps/${a.id}/users`, { name: n, metadata: { n } })));
    assert.deepEqual(Object.keys(users[0]), ['id', 'app_id', 'created_at', 'h_metadata', 'metadata', 'name']);
    assert.equal(users[0].app_id, a.id);
    const page = await ok(s.http.get(`/apps/${a.id}/users`));
    assert.deepEqual(Object.keys(page), ['items', 'total', 'page', 'size', 'pages']);
    assert.deepEqual(page.items.map((u: any) => u.id), users.map((u) => u.id));
    assert.deepEqual([page.total, page.page, page.size, page.pages], [3, 1, 50, 1]);
    const rev = await ok(s.http.get(`/apps/${a.id}/users?reverse=true`));
    assert.deepEqual(rev.items.map((u: any) => u.name), ['u3', 'u2', 'u1']);
    const f = await ok(s.http.get(`/apps/${a.id}/users?filter=${encodeURIComponent('{"n":"u2"}')}`));
    assert.deepEqual(f.items.map((u: any) => u.name), ['u2']);
    assert.equal(f.total, 1);

    assert.deepEqual(await ok(s.http.get(`/apps/${a.id}/users/u2`)), users[1]);
    assert.deepEqual(await ok(s.http.get(`/apps/${a.id}/users/${users[1].id}`)), users[1], 'a UUID-shaped name falls back to the id');
    const upd = await ok(s.http.put(`/apps/${a.id}/users/${users[1].id}`, { name: 'u2b', metadata: { z: true } }));
    assert.deepEqual([upd.name, upd.metadata, upd.h_metadata], ['u2b', { z: true }, { z: true }]);
    assert.equal((await ok(s.http.get(`/apps/${a.id}/users/u2b`))).id, users[1].id);

    const g = await ok(s.http.get(`/apps/${a.id}/users/get_or_create/sessions`));
    assert.equal(g.name, 'sessions', 'literal get_or_create wins over the sessions route');
    assert.equal((await ok(s.http.get(`/apps/${a.id}/users/get_or_create/sessions`))).id, g.id);
    // A user literally named get_or_create is still reachable by name.
    await ok(s.http.post(`/apps/${a.id}/users`, { name: 'get_or_create' }));
    assert.equal((await ok(s.http.get(`/apps/${a.id}/users/get_or_create`))).name, 'get_or_create');
  });

  it('answers the reference errors for users and keeps apps apart', async () => {
    const a = await ok(s.http.post('/apps', { name: uniq('app') }));
    const b = await ok(s.http.post('/apps', { name: uniq('app') }));
    const u = await ok(s.http.post(`/apps/${a.id}/users`, { name: 'alice' }));
    let r = await s.http.post(`/apps/${a.id}/users`, { name: 'alice' });
    assert.deepEqual([r.status, r.body], [406, { detail: 'User with name may already exist' }]);
    await ok(s.http.post(`/apps/${b.id}/users`, { name: 'alice' }));
    r = await s.http.post(`/apps/${MISSING}/users`, { name: 'x' });
    assert.deepEqual([r.status, r.body], [404, { detail: 'App not found' }]);
    r = await s.http.get(`/apps/${a.id}/users/nobody`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'User not found' }]);
    r = await s.http.put(`/apps/${b.id}/users/${u.id}`, { metadata: {} });
    assert.deepEqual([r.status, r.body], [404, { detail: 'User not found' }], 'a user of another app is not found');
    r = await s.http.get(`/apps/${MISSING}/users/get_or_create/x`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'App not found' }]);
    const empty = await ok(s.http.get(`/apps/${MISSING}/users`));
    assert.deepEqual(empty, { items: [], total: 0, page: 1, size: 50, pages: 0 });
    r = await s.http.get(`/apps/${a.id}/users?reverse=maybe`);
    assert.deepEqual(r.body.detail, [
      { type: 'bool_parsing', loc: ['query', 'reverse'], msg: 'Input should be a valid boolean, unable to interpret input', input: 'maybe' },
    ]);
  });
});
