import { it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { uniq, useServer } from '../helpers.ts';

/** The v3 API over raw HTTP: status codes, error bodies, the filter language and hostile input. */
const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;

forEachStorage('memory v3 API', (storage) => {
  const s = useServer(storage);

  it('get-or-create answers 201 then 200 with the reference fields, and 422 for bad ids', async () => {
    const id = wsName('w');
    let r = await s.http.post('/v3/workspaces', { id, metadata: { a: 1 } });
    assert.equal(r.status, 201);
    assert.deepEqual(Object.keys(r.body), ['id', 'metadata', 'configuration', 'created_at']);
    assert.match(r.body.created_at, ISO);
    r = await s.http.post('/v3/workspaces', { id, metadata: { a: 2 } });
    assert.deepEqual([r.status, r.body.metadata], [200, { a: 1 }], 'an existing workspace is returned unchanged');
    for (const bad of ['', 'a b', 'x'.repeat(513), 'é', '../x', null, 5]) {
      r = await s.http.post('/v3/workspaces', { id: bad });
      assert.equal(r.status, 422, `id ${JSON.stringify(bad)}: ${r.text}`);
      assert.ok(Array.isArray(r.body.detail) && r.body.detail[0].loc.join('.') === 'body.id', r.text);
    }
    r = await s.http.post(`/v3/workspaces/${id}/peers`, { id: 'alice', metadata: { k: 'v' } });
    assert.equal(r.status, 201);
    assert.deepEqual(Object.keys(r.body), ['id', 'workspace_id', 'created_at', 'metadata', 'configuration']);
    r = await s.http.post(`/v3/workspaces/${id}/peers`, { id: 'alice', metadata: { k: 'w' } });
    assert.deepEqual([r.status, r.body.metadata], [200, { k: 'w' }], "a peer's metadata given again replaces it");
    r = await s.http.post(`/v3/workspaces/${id}/sessions`, { id: 's1' });
    assert.equal(r.status, 201);
    assert.deepEqual(Object.keys(r.body), ['id', 'is_active', 'workspace_id', 'metadata', 'configuration', 'created_at']);
    // Implicit creation checks names as the create bodies do.
    r = await s.http.post(`/v3/workspaces/${id}/sessions/s1/messages`, { messages: [{ peer_id: 'no way', content: 'x' }] });
    assert.deepEqual([r.status, r.body], [422, { detail: "Peer name(s) ['no way'] must match pattern ^[a-zA-Z0-9_-]+$" }]);
    r = await s.http.put(`/v3/workspaces/bad%20name`, { metadata: {} });
    assert.deepEqual([r.status, r.body], [422, { detail: "Workspace name(s) ['bad name'] must match pattern ^[a-zA-Z0-9_-]+$" }]);
  });

  it('webhook URLs with internal IP literals are refused unless allowed by configuration', async () => {
    const w = wsName('w');
    for (const url of ['http://127.0.0.1:9/x', 'http://10.1.2.3/x', 'http://[::1]/x', 'http://169.254.169.254/latest', 'http://0.0.0.0/']) {
      const r = await s.http.post(`/v3/workspaces/${w}/webhooks`, { url });
      assert.deepEqual([r.status, r.body], [422, { detail: 'Private/internal IP addresses are not allowed' }], url);
    }
  });

  it('a scope option naming no scope is a 404 on every read route, never ignored', async () => {
    const w = wsName('sc');
    assert.equal((await s.http.post('/v3/workspaces', { id: w })).status, 201);
    const cases: Array<[string, unknown]> = [
      [`/v3/workspaces/${w}/search`, { query: 'x', scope: 'team' }],
      [`/v3/workspaces/${w}/peers/alice/chat`, { query: 'x', scope: ['a', 'b'] }],
      [`/v3/workspaces/${w}/chat`, { query: 'x', scope: 'team' }],
      [`/v3/workspaces/${w}/peers/alice/representation`, { scope: 'team' }],
    ];
    for (const [url, body] of cases) {
      const r = await s.http.post(url, body);
      assert.equal(r.status, 404, `${url}: ${r.text}`);
      assert.match(r.body.detail, /^Scope \w+ not found in workspace /);
    }
    assert.equal((await s.http.post(`/v3/workspaces/${w}/search`, { query: 'x', scope: null })).status, 200);
    const r = await s.http.post(`/v3/workspaces/${wsName('none')}/chat`, { query: 'x' });
    assert.equal(r.status, 404, r.text);
  });

  it('the seed API and v3 are separate spaces of one store', async () => {
    const name = wsName('both');
    const v3 = await s.http.post('/v3/workspaces', { id: name });
    assert.equal(v3.status, 201);
    assert.equal((await s.http.get(`/apps/name/${name}`)).status, 404, 'a v3 workspace is not a seed app');
    const app = await s.http.post('/apps', { name: wsName('app') });
    assert.equal(app.status, 200);
    const list = await s.http.post('/v3/workspaces/list', { filters: { id: app.body.name } });
    assert.equal(list.body.total, 0, 'a seed app is not a v3 workspace');
  });

  it('pages and orders lists, and validates page/size as fastapi-pagination', async () => {
    const w = wsName('w');
    for (let i = 0; i < 5; i++) await s.http.post(`/v3/workspaces/${w}/peers`, { id: `p${i}`, metadata: { i } });
    let r = await s.http.post(`/v3/workspaces/${w}/peers/list?page=2&size=2`);
    assert.deepEqual([r.status, r.body.total, r.body.page, r.body.size, r.body.pages], [200, 5, 2, 2, 3]);
    assert.deepEqual(r.body.items.map((p: any) => p.id), ['p2', 'p3']);
    r = await s.http.post(`/v3/workspaces/${w}/peers/list?reverse=true&size=1`, null);
    assert.deepEqual(r.body.items.map((p: any) => p.id), ['p4']);
    r = await s.http.post(`/v3/workspaces/${w}/peers/list?page=9`, {});
    assert.deepEqual([r.body.items, r.body.total, r.body.pages], [[], 5, 1]);
    r = await s.http.post(`/v3/workspaces/${w}/peers/list?size=101`, {});
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['query', 'size']);
    r = await s.http.post(`/v3/workspaces/${w}/peers/list?page=0`, {});
    assert.deepEqual(r.body.detail[0].loc, ['query', 'page']);
    r = await s.http.post(`/v3/workspaces/${w}/peers/list`, { filters: [] });
    assert.equal(r.status, 422, 'filters must be an object');
  });

  it('the filter language: AND/OR/NOT, operators, wildcards, dates and metadata', async () => {
    const w = wsName('w');
    const S = `/v3/workspaces/${w}/sessions/s/messages`;
    const msgs = [
      { peer_id: 'alice', content: 'Hello World', metadata: { n: 1, tag: 'Red', nested: { x: 1 } }, created_at: '2024-01-01T00:00:00Z' },
      { peer_id: 'bob', content: 'second', metadata: { n: 5, tag: 'blue' }, created_at: '2024-06-01T00:00:00Z' },
      { peer_id: 'carol', content: 'third message is longer than the others', metadata: { n: 10, tag: 'red-ish', flag: true }, created_at: '2025-01-01T00:00:00Z' },
      { peer_id: 'alice', content: 'fourth', metadata: { n: '7', other: null } },
    ];
    assert.equal((await s.http.post(S, { messages: msgs })).status, 201);
    const ids = async (filters: unknown) => {
      const r = await s.http.post(`${S}/list`, { filters });
      assert.equal(r.status, 200, `${JSON.stringify(filters)}: ${r.text}`);
      return r.body.items.map((m: any) => m.content);
    };
    assert.deepEqual(await ids({ peer_id: 'alice' }), ['Hello World', 'fourth']);
    assert.deepEqual(await ids({ peer_id: ['bob', 'carol'] }), ['second', 'third message is longer than the others']);
    assert.deepEqual(await ids({ peer_id: { in: ['bob'] } }), ['second']);
    assert.deepEqual(await ids({ peer_id: { ne: 'alice' } }), ['second', 'third message is longer than the others']);
    assert.deepEqual(await ids({ peer_id: '*' }), msgs.map((m) => m.content));
    assert.deepEqual(await ids({ OR: [{ peer_id: 'bob' }, { metadata: { n: 10 } }] }), ['second', 'third message is longer than the others']);
    assert.deepEqual(await ids({ AND: [{ peer_id: 'alice' }, { metadata: { n: 1 } }] }), ['Hello World']);
    assert.deepEqual(await ids({ NOT: [{ peer_id: 'alice' }] }), ['second', 'third message is longer than the others']);
    assert.deepEqual(await ids({ NOT: [{ peer_id: 'alice' }, { peer_id: 'bob' }] }), ['third message is longer than the others']);
    assert.deepEqual(await ids({ created_at: { gte: '2024-03-01', lt: '2025-01-01T00:00:00Z' } }), ['second']);
    assert.deepEqual(await ids({ created_at: { lte: '2024-01-01T00:00:00+00:00' } }), ['Hello World']);
    assert.deepEqual(await ids({ metadata: { n: { gte: 5 } } }), ['second', 'third message is longer than the others'], 'numeric comparison skips a string "7"');
    assert.deepEqual(await ids({ metadata: { n: { gt: 1, lte: 5 } } }), ['second']);
    assert.deepEqual(await ids({ metadata: { tag: { icontains: 'RED' } } }), ['Hello World', 'third message is longer than the others']);
    assert.deepEqual(await ids({ metadata: { tag: { contains: 'red' } } }), ['Hello World', 'third message is longer than the others'], 'metadata contains is case-insensitive, as the reference');
    assert.deepEqual(await ids({ metadata: { tag: { in: ['blue', 'Red'] } } }), ['Hello World', 'second']);
    assert.deepEqual(await ids({ metadata: { flag: true } }), ['third message is longer than the others']);
    assert.deepEqual(await ids({ metadata: { nested: { x: 1 } } }), ['Hello World']);
    assert.deepEqual(await ids({ metadata: { tag: '*' } }), msgs.map((m) => m.content));
    assert.deepEqual(await ids({ metadata: { contains: { tag: 'blue' } } }), ['second']);
    assert.deepEqual(await ids({ token_count: { gt: 3 } }), ['third message is longer than the others']);
    assert.deepEqual(await ids({ metadata: { tag: { contains: '%' } } }), [], 'no LIKE wildcards');
    assert.deepEqual(await ids({ peer_id: { in: [] } }), []);
    assert.deepEqual(await ids({}), msgs.map((m) => m.content));
    assert.deepEqual(await ids(null), msgs.map((m) => m.content));

    const bad = async (filters: unknown, detail: string | RegExp) => {
      const r = await s.http.post(`${S}/list`, { filters });
      assert.equal(r.status, 422, `${JSON.stringify(filters).slice(0, 100)}: ${r.text.slice(0, 300)}`);
      if (typeof detail === 'string') assert.equal(r.body.detail, detail);
      else assert.match(r.body.detail, detail);
    };
    await bad({ bogus: 1 }, "Column 'bogus' is not allowed to be filtered on or does not exist on Message");
    await bad({ AND: { peer_id: 'x' } }, 'AND operator must contain a list, got dict');
    await bad({ NOT: null }, 'NOT operator cannot be None');
    await bad({ peer_id: { like: 'x' } }, "Invalid filter for column 'peer_id': unsupported operator(s) ['like']. Expected one of ['contains', 'gt', 'gte', 'icontains', 'in', 'lt', 'lte', 'ne'] or a scalar value.");
    await bad({ peer_id: { in: 'x' } }, /Invalid value for 'in' operator/);
    await bad({ peer_id: 5 }, "Invalid value for column 'peer_id': expected a string, got int");
    await bad({ created_at: { gte: 'yesterday' } }, 'Invalid datetime value: yesterday');
    await bad({ created_at: { gte: '2024-02-31' } }, 'Invalid datetime value: 2024-02-31');
    await bad({ token_count: { gt: 'many' } }, /Invalid numeric value/);
    await bad({ token_count: { contains: 'x' } }, "Operator 'contains' requires a text column, but 'token_count' is int");
    await bad({ metadata: 5 }, "Invalid filter for column 'metadata': a JSONB column takes an object, optionally under 'contains'");
    await bad({ metadata: { n: { gt: { x: 1 } } } }, /Invalid value for numeric operator/);
    await bad({ peer_id: { gt: null } }, /does not accept null/);
    await bad({ AND: ['x'] }, 'Invalid filter configuration');

    // Nesting past the reference's depth and filters with thousands of terms are refused before any SQL runs.
    let deep: any = { peer_id: 'a' };
    for (let i = 0; i < 20; i++) deep = { AND: [deep] };
    const t0 = Date.now();
    await bad(deep, 'Filter nesting exceeds maximum depth of 5');
    for (let i = 0; i < 44; i++) deep = { AND: [deep] };
    // 64 levels of AND is JSON deeper than any body may be: the input guard's 422 (FastAPI's list form).
    const r64 = await s.http.post(`${S}/list`, { filters: deep });
    assert.equal(r64.status, 422);
    assert.match(r64.body.detail[0].msg, /JSON nested deeper than 64 levels/);
    const wide = { OR: Array.from({ length: 10_000 }, (_, i) => ({ peer_id: `p${i}` })) };
    await bad(wide, 'Filter has too many conditions (at most 1000)');
    const wideMeta = { metadata: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i])) };
    await bad(wideMeta, 'Filter has too many conditions (at most 1000)');
    await bad({ peer_id: { in: Array.from({ length: 5000 }, (_, i) => `p${i}`) } }, 'Filter has too many conditions (at most 1000)');
    assert.ok(Date.now() - t0 < 5000, 'refused quickly');
  });

  it('hostile values: odd names, NUL, surrogates, deep JSON, huge numbers, __proto__', async () => {
    const w = wsName('w');
    const M = `/v3/workspaces/${w}/sessions/s/messages`;
    let r = await s.http.post(M, { messages: [{ peer_id: 'p', content: 'a\u0000b' }] });
    assert.equal(r.status, 422, r.text);
    r = await s.http.post(M, { messages: [{ peer_id: 'p', content: 'x', metadata: { '\ud800': 1 } }] });
    assert.equal(r.status, 422, r.text);
    let deep: any = 1;
    for (let i = 0; i < 100; i++) deep = { d: deep };
    r = await s.http.post(M, { messages: [{ peer_id: 'p', content: 'x', metadata: deep }] });
    assert.equal(r.status, 422, r.text);
    r = await s.http.post(M, '{"messages":[{"peer_id":"p","content":"x","metadata":{"big":123456789012345678901234567890,"__proto__":{"polluted":1}}}]}');
    assert.equal(r.status, 201, r.text);
    r = await s.http.post(`${M}/list`, { filters: { metadata: { big: { gt: 12345678901234567890 } } } });
    assert.equal(r.status, 200, r.text);
    assert.equal(({} as any).polluted, undefined);
    for (const name of ['null', '__proto__', 'constructor', '-', '_']) {
      r = await s.http.post(`/v3/workspaces/${w}/peers`, { id: name });
      assert.equal(r.status, 201, `${name}: ${r.text}`);
      assert.equal(r.body.id, name);
    }
    r = await s.http.post(M, { messages: [] });
    assert.equal(r.status, 422);
    r = await s.http.post(M, { messages: Array.from({ length: 101 }, () => ({ peer_id: 'p', content: 'x' })) });
    assert.equal(r.status, 422);
    r = await s.http.post(M, { messages: [{ peer_id: 'p', content: 'x'.repeat(25_001) }] });
    assert.equal(r.status, 422);
    r = await s.http.post(M, { messages: [{ peer_id: 'p', content: 'x', created_at: 'not a date' }] });
    assert.equal(r.status, 422);
    r = await s.http.get(`/v3/workspaces/${w}/sessions/s/messages/nope`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Message with ID nope not found' }]);
    r = await s.http.put(`/v3/workspaces/${w}/sessions/s/messages/nope`, { metadata: {} });
    assert.deepEqual([r.status, r.body], [404, { detail: 'Message not found' }]);
  });

  it('sessions: observers limit, peer config, delete is 202 then gone, workspace delete 409 until then', async () => {
    const w = wsName('w');
    const peers = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`p${i}`, { observe_others: true }]));
    let r = await s.http.post(`/v3/workspaces/${w}/sessions`, { id: 's', peers });
    assert.equal(r.status, 400);
    assert.match(r.body.detail, /^Cannot create session s with 11 observers\. Maximum allowed is 10 observers per session\./);
    r = await s.http.post(`/v3/workspaces/${w}/sessions`, { id: 's', peers: { a: { observe_me: false }, b: {} } });
    assert.equal(r.status, 201);
    r = await s.http.get(`/v3/workspaces/${w}/sessions/s/peers/a/config`);
    assert.deepEqual(r.body, { observe_me: false, observe_others: null });
    r = await s.http.get(`/v3/workspaces/${w}/sessions/s/peers/zed/config`);
    assert.deepEqual([r.status, r.body], [404, { detail: `Peer zed not found in workspace ${w}` }]);
    r = await s.http.put(`/v3/workspaces/${w}/sessions/s/peers/b/config`, { observe_others: true });
    assert.equal(r.status, 204);
    r = await s.http.delete(`/v3/workspaces/${w}`);
    assert.deepEqual([r.status, r.body], [409, { detail: `Cannot delete workspace '${w}': active session(s) remain. Delete all sessions first.` }]);
    r = await s.http.delete(`/v3/workspaces/${w}/sessions/s`);
    assert.deepEqual([r.status, r.body], [202, { message: 'Session deleted successfully' }]);
    r = await s.http.delete(`/v3/workspaces/${w}/sessions/s`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.delete(`/v3/workspaces/${w}`);
    assert.deepEqual([r.status, r.body], [202, { message: 'Workspace deletion accepted' }]);
    // The background job leaves nothing behind.
    for (let i = 0; i < 300; i++) {
      if ((await s.http.post('/v3/workspaces/list', { filters: { id: w } })).body.total === 0) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal((await s.http.post('/v3/workspaces/list', { filters: { id: w } })).body.total, 0);
    r = await s.http.delete(`/v3/workspaces/${w}`);
    assert.deepEqual([r.status, r.body], [404, { detail: `Workspace ${w} not found` }]);
  });

  it('concurrent batches to one session keep every message once, numbered without gaps', async () => {
    const w = wsName('w');
    const M = `/v3/workspaces/${w}/sessions/s/messages`;
    const batches = Array.from({ length: 8 }, (_, b) => s.http.post(M, { messages: Array.from({ length: 25 }, (_, i) => ({ peer_id: `p${b % 3}`, content: `b${b} m${i}` })) }));
    const res = await Promise.all(batches);
    assert.ok(res.every((r) => r.status === 201), res.map((r) => r.text.slice(0, 200)).join('\n'));
    const all: any[] = [];
    for (let page = 1; ; page++) {
      const r = await s.http.post(`${M}/list?size=100&page=${page}`, {});
      all.push(...r.body.items);
      if (page >= r.body.pages) break;
    }
    assert.equal(all.length, 200);
    assert.equal(new Set(all.map((m) => m.content)).size, 200);
    // Each batch is contiguous: concurrent batches never interleave.
    for (let b = 0; b < 8; b++) {
      const at = all.map((m, i) => (m.content.startsWith(`b${b} `) ? i : -1)).filter((i) => i >= 0);
      assert.equal(at[at.length - 1]! - at[0]!, 24);
    }
    // Again on the existing session, whose senders are members (PostgreSQL's three-round-trip path), with
    // batches from a new sender among them (the general path, which joins it).
    const more = await Promise.all(
      Array.from({ length: 16 }, (_, b) => s.http.post(M, { messages: Array.from({ length: 25 }, (_, i) => ({ peer_id: b % 5 === 4 ? `q${b}` : `p${b % 3}`, content: `c${b} m${i}` })) })),
    );
    assert.ok(more.every((r) => r.status === 201), more.map((r) => r.text.slice(0, 200)).join('\n'));
    const again: any[] = [];
    for (let page = 1; ; page++) {
      const r = await s.http.post(`${M}/list?size=100&page=${page}`, {});
      again.push(...r.body.items);
      if (page >= r.body.pages) break;
    }
    assert.equal(again.length, 600);
    assert.equal(new Set(again.map((m) => m.id)).size, 600);
    assert.deepEqual(again.slice(0, 200).map((m) => m.id), all.map((m) => m.id));
    for (let b = 0; b < 16; b++) {
      const at = again.map((m, i) => (m.content.startsWith(`c${b} `) ? i : -1)).filter((i) => i >= 0);
      assert.deepEqual([at.length, at[at.length - 1]! - at[0]!], [25, 24]);
      assert.deepEqual(more[b]!.body.map((m: any) => m.id), at.map((i) => again[i].id));
    }
    const peers = (await s.http.get(`/v3/workspaces/${w}/sessions/s/peers`)).body.items.map((p: any) => p.id).sort();
    assert.deepEqual(peers, ['p0', 'p1', 'p2', 'q14', 'q4', 'q9']);
  });
});
