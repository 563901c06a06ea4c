import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Honcho, NotFoundError, Scope } from '@honcho-ai/sdk';
import { forEachStorage } from '@svc/testkit';
import { uniq, useServer } from '../helpers.ts';

/**
 * Scopes (SDK 2.5's `honcho.scope()`; the reference's scopes router): the
 * seven routes with their error bodies, the hidden scope peer, recall
 * confined to a scope's sessions (chat, representation, context, search),
 * backfill of a session that already had messages, and removal.
 */
const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');

async function waitFor(cond: () => Promise<boolean>, what: string, timeoutMs = 15000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`not in time: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

forEachStorage('memory v3 scopes', (storage) => {
  const s = useServer(storage);

  it('routes and error bodies; the scope peer stays hidden from the generic routes', async () => {
    const w = wsName('sc');
    const W = `/v3/workspaces/${w}`;
    let r = await s.http.post(`${W}/scopes`, { id: 'therapy', metadata: { a: 1 } });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(Object.keys(r.body), ['id', 'metadata', 'created_at']);
    assert.deepEqual([r.body.id, r.body.metadata], ['therapy', { a: 1 }]);
    r = await s.http.post(`${W}/scopes`, { id: 'therapy', metadata: { a: 2 } });
    assert.deepEqual([r.status, r.body.metadata], [200, { a: 2 }]);
    for (const [bad, msg] of [
      ['', 'Scope name must be between 1 and 506 characters'],
      ['scope.x', "Scope name must not start with the reserved prefix 'scope.' (scope names are unprefixed)"],
      ['a b', 'Scope name must match pattern ^[a-zA-Z0-9_-]+$'],
    ]) {
      r = await s.http.post(`${W}/scopes`, { id: bad });
      assert.equal(r.status, 422, r.text);
      assert.deepEqual([r.body.detail[0].type, r.body.detail[0].loc, r.body.detail[0].msg], ['value_error', ['body', 'id'], `Value error, ${msg}`]);
    }
    r = await s.http.get(`${W}/scopes/nope`);
    assert.deepEqual([r.status, r.body], [404, { detail: `Scope nope not found in workspace ${w}` }]);
    r = await s.http.post(`${W}/scopes/nope/sessions/list`);
    assert.deepEqual([r.status, r.body], [404, { detail: `Scope nope not found in workspace ${w}` }]);
    await s.http.post(`${W}/sessions`, { id: 's1', peers: { alice: {} } });
    await s.http.post(`${W}/sessions`, { id: 's2' });
    r = await s.http.post(`${W}/scopes/therapy/sessions`, { session_ids: ['s1', 'zz', 'aa'] });
    assert.deepEqual([r.status, r.body], [404, { detail: `Session(s) ['aa', 'zz'] not found in workspace ${w}` }]);
    r = await s.http.post(`${W}/scopes/therapy/sessions`, { session_ids: [] });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'session_ids']);
    r = await s.http.post(`${W}/scopes/therapy/sessions`, { session_ids: ['s2', 's1'] });
    assert.equal(r.status, 204, r.text);
    r = await s.http.post(`${W}/scopes/therapy/sessions`, { session_ids: ['s1'] });
    assert.equal(r.status, 204, 'adding a member again is a no-op');
    r = await s.http.post(`${W}/scopes/therapy/sessions/list`);
    assert.deepEqual(r.body.items.map((x: any) => x.id).sort(), ['s1', 's2']);
    assert.deepEqual(Object.keys(r.body), ['items', 'total', 'page', 'size', 'pages']);
    // Hidden: peer lists (unless asked), session peer lists, and the generic peer routes.
    r = await s.http.post(`${W}/peers/list`, {});
    assert.deepEqual(r.body.items.map((p: any) => p.id), ['alice']);
    r = await s.http.post(`${W}/peers/list`, { kind: 'scope' });
    assert.deepEqual(r.body.items.map((p: any) => [p.id, p.configuration]), [['scope.therapy', { observe_me: false }]]);
    r = await s.http.post(`${W}/peers/list`, { kind: 'all' });
    assert.equal(r.body.total, 2);
    r = await s.http.get(`${W}/sessions/s1/peers`);
    assert.deepEqual(r.body.items.map((p: any) => p.id), ['alice']);
    const refused = "Peer name(s) ['scope.therapy'] are scopes.";
    for (const [method, url, body] of [
      ['PUT', `${W}/sessions/s1/peers`, { alice: {}, 'scope.therapy': {} }],
      ['POST', `${W}/sessions/s1/peers`, { 'scope.therapy': {} }],
      ['DELETE', `${W}/sessions/s1/peers`, ['scope.therapy']],
      ['PUT', `${W}/sessions/s1/peers/scope.therapy/config`, { observe_others: false }],
      ['POST', `${W}/sessions/s1/messages`, { messages: [{ peer_id: 'scope.therapy', content: 'hi' }] }],
      ['POST', `${W}/peers/alice/chat`, { query: 'x', target: 'scope.therapy' }],
      ['POST', `${W}/peers/scope.therapy/representation`, {}],
    ] as const) {
      r = await s.http.request(method, url, body);
      assert.equal(r.status, 422, `${method} ${url}: ${r.text}`);
      assert.ok(r.body.detail.startsWith(refused), r.text);
    }
    r = await s.http.put(`${W}/peers/scope.therapy`, { metadata: { x: 1 } });
    assert.deepEqual([r.status, r.body], [422, { detail: "Peer 'scope.therapy' is a scope. Use the scopes routes to manage scopes." }]);
    // PUT …/peers leaves the scope's membership alone.
    await s.http.put(`${W}/sessions/s1/peers`, { bob: {} });
    r = await s.http.post(`${W}/scopes/therapy/sessions/list`);
    assert.equal(r.body.total, 2);
    // Read options: exclusivity, a bad or missing scope.
    for (const [url, body, detail] of [
      [`${W}/peers/alice/chat`, { query: 'x', scope: 'therapy', session_id: 's1' }, '`scope` and `session_id` are mutually exclusive'],
      [`${W}/peers/alice/chat`, { query: 'x', scope: 'therapy', filters: { session_id: 's1' } }, '`scope` and `filters` are mutually exclusive'],
      [`${W}/peers/alice/representation`, { scope: ['therapy'], session_id: 's1' }, '`scope` and `session_id` are mutually exclusive'],
      [`${W}/search`, { query: 'x', scope: 'therapy', filters: { session_id: 's1' } }, "`scope` and a 'session_id' filter are mutually exclusive"],
    ] as const) {
      r = await s.http.post(url, body);
      assert.deepEqual([r.status, r.body], [422, { detail }], url);
    }
    r = await s.http.post(`${W}/peers/alice/chat`, { query: 'x', scope: [] });
    assert.deepEqual([r.status, r.body.detail[0].type, r.body.detail[0].loc], [422, 'too_short', ['body', 'scope']]);
    r = await s.http.post(`${W}/peers/alice/chat`, { query: 'x', scope: ['therapy', 'gone'] });
    assert.deepEqual([r.status, r.body], [404, { detail: `Scope gone not found in workspace ${w}` }]);
    r = await s.http.get(`${W}/sessions/s1/context?scope=therapy`);
    assert.deepEqual([r.status, r.body], [422, { detail: 'peer_target must be provided if scope is provided' }]);
    r = await s.http.get(`${W}/sessions/s1/context?scope=therapy&peer_target=alice&peer_perspective=bob`);
    assert.deepEqual([r.status, r.body], [422, { detail: '`scope` and `peer_perspective` are mutually exclusive' }]);
    // Removal; a session that is gone; a scope listed with sessions=[] after all members left.
    r = await s.http.delete(`${W}/scopes/therapy/sessions/s2`);
    assert.equal(r.status, 204);
    r = await s.http.delete(`${W}/scopes/therapy/sessions/nope`);
    assert.deepEqual([r.status, r.body], [404, { detail: `Session nope not found in workspace ${w}` }]);
    r = await s.http.post(`${W}/scopes/therapy/sessions/list`);
    assert.deepEqual(r.body.items.map((x: any) => x.id), ['s1']);
    r = await s.http.post(`${W}/scopes/list?reverse=true`);
    assert.deepEqual(r.body.items.map((x: any) => x.id), ['therapy']);
    r = await s.http.get(`${W}/scopes/therapy/status`);
    assert.deepEqual([r.status, r.body], [200, { backfill_status: {} }], 'no session had messages when added');
  });

  it('through the SDK: recall confined to the scope, backfill of an earlier session, removal', async () => {
    const h = new Honcho({ baseURL: s.url, apiKey: 'k', workspaceId: wsName('sdk'), maxRetries: 0 } as any);
    const alice = await h.peer('alice');
    const work = await h.session('work');
    const home = await h.session('home');
    await work.addPeers([alice]);
    await home.addPeers([alice]);
    // `home` had messages before it joins a scope: its conclusions are backfilled.
    await home.addMessages([alice.message('I live in Lyon.')]);
    const idle = async () => {
      const st: any = await h.queueStatus();
      return st.pendingWorkUnits + st.inProgressWorkUnits === 0;
    };
    await waitFor(idle, 'home derived');
    const therapy = await h.scope('therapy', { metadata: { kind: 'care' } } as any);
    assert.ok(therapy instanceof Scope);
    // `work` joins through session creation (SessionCreate.scopes) before it has messages: new messages fan out to the scope.
    await h.session('work', { scopes: ['therapy'] } as any);
    await work.addMessages([alice.message('I am a nurse.')]);
    await therapy.addSessions([home]);
    await waitFor(async () => (await therapy.status()).backfillStatus.home?.state === 'completed', 'backfill');
    const st = await therapy.status();
    assert.equal(st.backfillStatus.home!.docsCopied, 1);
    await waitFor(idle, 'work derived');
    assert.deepEqual((await (await therapy.sessions()).toArray()).map((x) => x.id).sort(), ['home', 'work']);
    assert.deepEqual((await (await h.scopes()).toArray()).map((x) => x.id), ['therapy']);
    assert.equal((await h.getScope('therapy')).metadata?.kind, 'care');
    await assert.rejects(h.getScope('nope'), NotFoundError);
    assert.deepEqual((await (await h.peers()).toArray()).map((p) => p.id), ['alice'], 'the scope peer is not a peer to the SDK');

    // A third session outside the scope.
    const gym = await h.session('gym');
    await gym.addMessages([alice.message('I play tennis.')]);
    await waitFor(idle, 'gym derived');
    const rep = await alice.representation({ scope: 'therapy' } as any);
    assert.match(rep, /alice is a nurse/);
    assert.match(rep, /alice lives in Lyon/);
    assert.doesNotMatch(rep, /tennis/);
    assert.match(await alice.representation(), /tennis/, 'unscoped, the peer keeps one representation');
    const answer = await alice.chat('Does she play tennis?', { scope: 'therapy' } as any);
    assert.doesNotMatch(String(answer), /tennis/);
    assert.match(String(await alice.chat('Does she play tennis?')), /tennis/);
    const both = await alice.chat('What is her job?', { scope: ['therapy'], includeEvidence: true } as any);
    assert.ok((both as any).evidence.messages.every((m: any) => m.session_id !== 'gym'));
    const hits = await h.search('tennis nurse Lyon', { scope: 'therapy' } as any);
    assert.deepEqual(hits.map((m) => m.sessionId).sort(), ['home', 'work']);
    const ctx = await work.context({ peerTarget: alice, scope: 'therapy' } as any);
    assert.match(String(ctx.peerRepresentation), /nurse/);
    assert.doesNotMatch(String(ctx.peerRepresentation), /tennis/);

    // Removal: the scope forgets what it concluded from the session.
    await therapy.removeSession(home);
    await waitFor(async () => !/Lyon/.test(await alice.representation({ scope: 'therapy' } as any)), 'removal');
    assert.match(await alice.representation({ scope: 'therapy' } as any), /nurse/);
    assert.deepEqual((await therapy.status()).backfillStatus, {});
    assert.ok((await h.search('Lyon', { scope: 'therapy' } as any)).every((m) => m.sessionId === 'work'), 'a removed session is out of the scope');
  });
});
