import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Honcho, NotFoundError, ConflictError, UnprocessableEntityError } from '@honcho-ai/sdk';
import { forEachStorage } from '@svc/testkit';
import { uniq, useServer } from '../helpers.ts';

/**
 * Today's Honcho TypeScript SDK (@honcho-ai/sdk, pinned in the root
 * package.json) driven against the service over real HTTP.
 */
const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');

forEachStorage('memory v3 through @honcho-ai/sdk', (storage) => {
  const s = useServer(storage);
  const honcho = (workspaceId = wsName('ws')) => new Honcho({ baseURL: s.url, apiKey: 'test-key', workspaceId, maxRetries: 0 } as any);

  it('workspaces: get-or-create, metadata, configuration, list, delete', async () => {
    const id = wsName('ws');
    const h = honcho(id);
    assert.deepEqual(await h.getMetadata(), {});
    await h.setMetadata({ team: 'a', n: 1 });
    assert.deepEqual(await h.getMetadata(), { team: 'a', n: 1 });
    await h.setConfiguration({ reasoning: { enabled: false } } as any);
    const conf: any = await h.getConfiguration();
    assert.equal(conf.reasoning?.enabled, false);
    const ids = await (await h.workspaces({ filters: { id } })).toArray();
    assert.deepEqual(ids, [id]);
    const byMeta = await (await h.workspaces({ filters: { metadata: { team: 'a' }, id: { in: [id, 'nope'] } } })).toArray();
    assert.deepEqual(byMeta, [id]);
    await h.deleteWorkspace(id);
    await waitFor(async () => (await (await h.workspaces({ filters: { id } })).toArray()).length === 0);
  });

  it('peers: get-or-create with metadata and configuration, list with filters, sessions of a peer', async () => {
    const h = honcho();
    const alice = await h.peer('alice', { metadata: { role: 'user', age: 30 } });
    assert.equal(alice.id, 'alice');
    assert.deepEqual(alice.metadata, { role: 'user', age: 30 });
    const bob = await h.peer('bob', { metadata: { role: 'assistant', age: 2 } });
    await bob.setMetadata({ role: 'assistant', age: 3 });
    assert.deepEqual(await bob.getMetadata(), { role: 'assistant', age: 3 });
    await alice.setConfiguration({ observeMe: false } as any);
    const pc: any = await alice.getConfiguration();
    assert.equal(pc.observeMe ?? pc.observe_me, false);
    const all = await (await h.peers()).toArray();
    assert.deepEqual(all.map((p) => p.id).sort(), ['alice', 'bob']);
    const older = await (await h.peers({ filters: { metadata: { age: { gte: 10 } } } })).toArray();
    assert.deepEqual(older.map((p) => p.id), ['alice']);
    const session = await h.session('chat1');
    await session.addPeers([alice, bob]);
    const sessions = await (await alice.sessions()).toArray();
    assert.deepEqual(sessions.map((x) => x.id), ['chat1']);
  });

  it('sessions: peers with config, messages, filters, get/update message, clone, delete', async () => {
    const h = honcho();
    const alice = await h.peer('alice');
    const bob = await h.peer('bob');
    const session = await h.session('s1', { metadata: { topic: 'cats' } });
    await session.addPeers([alice, [bob, { observeOthers: true }]] as any);
    const members = await session.peers();
    assert.deepEqual(members.map((p) => p.id).sort(), ['alice', 'bob']);
    const cfg: any = await session.getPeerConfiguration(bob);
    assert.equal(cfg.observeOthers ?? cfg.observe_others, true);
    await session.setPeerConfiguration(alice, { observeMe: false } as any);
    const cfgA: any = await session.getPeerConfiguration('alice');
    assert.equal(cfgA.observeMe ?? cfgA.observe_me, false);

    const created = await session.addMessages([
      alice.message('I adopted a cat named Miso', { metadata: { mood: 'happy', n: 1 } }),
      bob.message('What colour is Miso?', { metadata: { n: 2 } }),
      alice.message('Orange, like a pumpkin', { metadata: { n: 3 } }),
    ]);
    assert.equal(created.length, 3);
    assert.deepEqual(created.map((m) => m.peerId), ['alice', 'bob', 'alice']);
    assert.ok(created.every((m) => m.tokenCount > 0 && m.sessionId === 's1' && typeof m.id === 'string'));

    const listed = await (await session.messages()).toArray();
    assert.deepEqual(listed.map((m) => m.id), created.map((m) => m.id));
    const fromAlice = await (await session.messages({ filters: { peer_id: 'alice' } })).toArray();
    assert.equal(fromAlice.length, 2);
    const big = await (await session.messages({ filters: { metadata: { n: { gt: 1 } } } })).toArray();
    assert.deepEqual(big.map((m) => m.metadata.n), [2, 3]);
    const rev = await (await session.messages({ reverse: true } as any)).toArray();
    assert.deepEqual(rev.map((m) => m.id), created.map((m) => m.id).reverse());

    const one = await session.getMessage(created[1]!.id);
    assert.equal(one.content, 'What colour is Miso?');
    const upd = await session.updateMessage(created[1]!, { edited: true });
    assert.deepEqual(upd.metadata, { edited: true });

    const clone = await session.clone(created[1]!.id);
    assert.notEqual(clone.id, 's1');
    const cloned = await (await clone.messages()).toArray();
    assert.deepEqual(cloned.map((m) => m.content), created.slice(0, 2).map((m) => m.content));

    await session.removePeers([bob]);
    assert.deepEqual((await session.peers()).map((p) => p.id), ['alice']);
    await session.setPeers([bob]);
    assert.deepEqual((await session.peers()).map((p) => p.id), ['bob']);

    await session.setMetadata({ topic: 'dogs' });
    assert.deepEqual(await session.getMetadata(), { topic: 'dogs' });
    const listedSessions = await (await h.sessions({ filters: { metadata: { topic: 'dogs' } } })).toArray();
    assert.deepEqual(listedSessions.map((x) => x.id), ['s1']);

    await session.delete();
    // The rest goes in the background deletion job.
    await waitFor(() => session.getMessage(created[0]!.id).then(() => false, (e) => e instanceof NotFoundError));
    assert.deepEqual((await (await h.sessions()).toArray()).map((x) => x.id), [clone.id]);
  });

  it('background reasoning: queue status, conclusions, representation, card, context, summaries, search, chat', async () => {
    const h = honcho();
    const alice = await h.peer('alice');
    const bob = await h.peer('bob');
    const session = await h.session('s1');
    await session.addPeers([alice, bob]);
    const msgs = [alice.message('I am a nurse and I live in Lyon.'), bob.message('Nice! Do you have pets?'), alice.message('I love my dog Rex.')];
    for (let i = 3; i < 20; i++) msgs.push((i % 2 ? bob : alice).message(`We talked about the weather, part ${i}.`));
    await session.addMessages(msgs);
    // Work is done in the background; the queue status says when.
    await waitFor(async () => {
      const st: any = await session.queueStatus();
      return st.pendingWorkUnits + st.inProgressWorkUnits === 0 && st.totalWorkUnits > 0;
    });
    const ws: any = await h.queueStatus();
    assert.ok(ws.completedWorkUnits >= 20, JSON.stringify(ws));

    const concl = await alice.conclusions.list();
    const texts = (await concl.toArray()).map((c: any) => c.content);
    assert.ok(texts.includes('alice is a nurse.') && texts.includes('alice lives in Lyon.'), texts.join(' | '));
    const found = await alice.conclusions.query('where does she live', 3);
    assert.equal(found[0]!.content, 'alice lives in Lyon.');
    const made = await bob.conclusionsOf(alice).create({ content: 'alice is friendly' } as any);
    assert.equal(made[0]!.observerId, 'bob');
    assert.equal(made[0]!.observedId, 'alice');
    assert.equal((await bob.conclusionsOf(alice).get(made[0]!.id)).content, 'alice is friendly');
    await bob.conclusionsOf(alice).delete(made[0]!.id);
    await assert.rejects(bob.conclusionsOf(alice).get(made[0]!.id), NotFoundError);

    const rep = await alice.representation();
    assert.match(rep, /^## Explicit Observations\n\n\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] alice is a nurse\./);
    assert.equal(await alice.getCard(), null);
    assert.deepEqual(await alice.setCard(['Nurse', 'Lives in Lyon']), ['Nurse', 'Lives in Lyon']);
    assert.deepEqual(await alice.getCard(), ['Nurse', 'Lives in Lyon']);
    const pctx: any = await alice.context();
    assert.deepEqual(pctx.peerCard, ['Nurse', 'Lives in Lyon']);
    assert.match(pctx.representation, /alice lives in Lyon/);

    // 20 messages: one short summary (every 20), no long one (every 60).
    await waitFor(async () => (await session.summaries()).shortSummary !== null);
    const sums = await session.summaries();
    assert.equal(sums.longSummary, null);
    assert.match(sums.shortSummary!.content, /alice: I am a nurse/);
    // The summary covers the first 20 messages; context gives it and the messages after it.
    const later = await session.addMessages([bob.message('And what is the dog called?'), alice.message('Rex, he is a beagle.')]);
    const ctx = await session.context({ tokens: 2000, peerTarget: alice } as any);
    assert.deepEqual(ctx.messages.map((m) => m.id), later.map((m) => m.id));
    assert.equal(ctx.summary!.content, sums.shortSummary!.content);
    assert.match(String(ctx.peerRepresentation), /alice is a nurse/);
    const openai = ctx.toOpenAI(alice);
    assert.ok(openai.length >= ctx.messages.length);
    assert.ok(openai.some((m) => m.role === 'assistant') && openai.some((m) => m.role === 'user'));
    const anthropic = ctx.toAnthropic(alice);
    assert.ok(anthropic.every((m) => m.role === 'assistant' || m.role === 'user'));
    const tight = await session.context({ tokens: 20, summary: false } as any);
    assert.ok(tight.messages.length > 0 && tight.messages.reduce((n, m) => n + m.tokenCount, 0) <= 20);
    assert.equal(tight.summary, null);

    const hits = await session.search('love my dog', { limit: 2 } as any);
    assert.equal(hits[0]!.content, 'I love my dog Rex.');
    const peerHits = await alice.search('nurse');
    assert.ok(peerHits.every((m) => m.peerId === 'alice'));
    const wsHits = await h.search('Lyon', { limit: 1 });
    assert.equal(wsHits[0]!.content, 'I am a nurse and I live in Lyon.');

    const answer = await alice.chat('Where does alice live?');
    assert.match(String(answer), /Lyon/);
    const stream = await alice.chatStream('What is alice job?' as any);
    let streamed = '';
    for await (const piece of stream as any) streamed += piece;
    assert.match(streamed, /nurse/);
    const structured: any = await alice.chat('Where does alice live?', { responseFormat: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } } as any);
    assert.match(JSON.parse(structured).answer, /Lyon/);
    // SDK 2.5: evidence, and the workspace-wide dialectic.
    const withEvidence: any = await alice.chat('Where does alice live?', { includeEvidence: true } as any);
    assert.match(withEvidence.content, /Lyon/);
    assert.ok(withEvidence.evidence.conclusions.some((c: any) => c.content === 'alice lives in Lyon.'), JSON.stringify(withEvidence.evidence));
    assert.ok(withEvidence.evidence.messages.length > 0 && withEvidence.evidence.messages.every((m: any) => m.peer_id && m.session_id && m.id));
    assert.deepEqual(withEvidence.evidence.tool_calls, []);
    const wsAnswer = await h.chat('Who lives in Lyon?');
    assert.match(String(wsAnswer), /alice lives in Lyon/);
    const wsStream: any = await h.chatStream('Who is a nurse?', { includeEvidence: true } as any);
    let wsStreamed = '';
    for await (const piece of wsStream) wsStreamed += piece;
    assert.match(wsStreamed, /nurse/);
    assert.ok(wsStream.evidence && wsStream.evidence.conclusions.length > 0, 'evidence arrives on the last frame');
    const inSession: any = await h.chat('What is the dog called?', { session: session, includeEvidence: true } as any);
    assert.ok(inSession.evidence.messages.every((m: any) => m.session_id === 's1'));
    await assert.rejects(h.chat('x', { scope: 'team' } as any), NotFoundError);
    await h.scheduleDream({ observer: alice } as any);
    await waitFor(async () => {
      const st: any = await h.queueStatus();
      return st.pendingWorkUnits + st.inProgressWorkUnits === 0;
    });
  });

  it('the remaining public methods: refresh, session configuration, workspace conclusions, getMany/derived, card and representation targets, pages', async () => {
    const id = wsName('ws');
    const h = honcho(id);
    await h.setMetadata({ v: 1 });
    await h.refresh();
    assert.deepEqual(h.metadata, { v: 1 });
    assert.equal(h.baseURL, s.url);
    const alice = await h.peer('alice', { metadata: { a: 1 } });
    const bob = await h.peer('bob');
    // Another client changes them; refresh() reads them back.
    const other = honcho(id);
    await (await other.peer('alice')).setMetadata({ a: 2 });
    await alice.refresh();
    assert.deepEqual(alice.metadata, { a: 2 });
    assert.match(String(alice.createdAt), /^\d{4}-/);
    const session = await h.session('s1', { metadata: { t: 1 } });
    await session.setConfiguration({ summary: { enabled: false } } as any);
    const sc: any = await session.getConfiguration();
    assert.equal(sc.summary?.enabled, false);
    await (await other.session('s1')).setMetadata({ t: 2 });
    await session.refresh();
    assert.deepEqual(session.metadata, { t: 2 });
    assert.equal(session.isActive, true);
    assert.match(String(session.createdAt), /^\d{4}-/);
    await session.addPeers([alice, bob]);

    // Conclusions written by the client (reasoning never ran here): pair views, the workspace view, newest first.
    const self = await alice.conclusions.create([{ content: 'alice likes tea', sessionId: session }, { content: 'alice reads novels' }]);
    const about = await bob.conclusionsOf(alice).create({ content: 'alice is kind', sessionId: 's1' });
    const own = await (await alice.conclusions.list()).toArray();
    assert.deepEqual(own.map((c) => c.content).sort(), ['alice likes tea', 'alice reads novels']);
    const inSession = await (await alice.conclusions.list({ session })).toArray();
    assert.deepEqual(inSession.map((c) => c.content), ['alice likes tea']);
    const many = await alice.conclusions.getMany([self[0]!.id, self[1]!.id, about[0]!.id, 'missing']);
    assert.deepEqual(many.map((c) => c.id).sort(), [self[0]!.id, self[1]!.id].sort());
    const wsAll = await h.conclusions.list();
    assert.equal(wsAll.total, 3);
    assert.deepEqual(wsAll.items.map((c) => c.id), [about[0]!.id, self[1]!.id, self[0]!.id]);
    const oldest = await h.conclusions.list({ reverse: true, size: 1 });
    assert.equal(oldest.items[0]!.id, self[0]!.id);
    assert.deepEqual((await (await h.conclusions.list({ filters: { observer_id: 'bob' } })).toArray()).map((c) => c.content), ['alice is kind']);
    assert.equal((await h.conclusions.get(about[0]!.id)).observerId, 'bob');
    assert.deepEqual((await h.conclusions.getMany([about[0]!.id, self[0]!.id])).map((c) => c.id).sort(), [about[0]!.id, self[0]!.id].sort());
    // No dream wrote a conclusion from these: nothing derived.
    const derived = await alice.conclusions.derived(self[0]!.id);
    assert.deepEqual([derived.total, derived.items.length], [0, 0]);
    assert.match(await alice.conclusions.representation(), /alice likes tea/);
    assert.match(await bob.conclusionsOf(alice).representation(), /alice is kind/);
    assert.match(await bob.representation({ target: alice } as any), /alice is kind/);
    assert.match(await session.representation(alice), /alice likes tea/);
    assert.match(await session.representation(bob, { target: alice }), /alice is kind/);

    // Cards: self and about another peer; card() is getCard().
    assert.deepEqual(await bob.setCard(['Kind'], alice), ['Kind']);
    assert.deepEqual(await bob.getCard(alice), ['Kind']);
    assert.deepEqual(await bob.card('alice'), ['Kind']);
    assert.equal(await bob.card(), null);
    const pctx = await bob.context({ target: alice, searchQuery: 'kind', searchTopK: 5 });
    assert.deepEqual([pctx.peerId, pctx.targetId, pctx.peerCard], ['bob', 'alice', ['Kind']]);
    assert.match(String(pctx.representation), /alice is kind/);

    // Pages: size, count, next page, indexing, async iteration; queue status scoped to a sender and a session.
    await session.addMessages(Array.from({ length: 5 }, (_, i) => alice.message(`m${i}`)));
    const p1 = await session.messages({ size: 2 } as any);
    assert.deepEqual([p1.total, p1.page, p1.size, p1.pages, p1.length, p1.hasNextPage], [5, 1, 2, 3, 2, true]);
    assert.equal(p1.get(1).content, 'm1');
    const p3 = await (await p1.getNextPage())!.getNextPage();
    assert.deepEqual([p3!.page, p3!.items.map((m) => m.content), p3!.hasNextPage], [3, ['m4'], false]);
    assert.equal(await p3!.getNextPage(), null);
    const seen: string[] = [];
    for await (const m of p1) seen.push(m.content);
    assert.deepEqual(seen, ['m0', 'm1', 'm2', 'm3', 'm4']);
    const qs: any = await h.queueStatus({ sender: alice, session });
    assert.ok(qs.totalWorkUnits >= 0 && typeof qs.pendingWorkUnits === 'number', JSON.stringify(qs));
    assert.ok(String(h).includes(id) && String(alice).includes('alice') && String(session).includes('s1'));
  });

  it('errors arrive as the SDK error classes', async () => {
    const h = honcho();
    const session = await h.session('s1');
    await assert.rejects(session.getMessage('nope'), NotFoundError);
    await assert.rejects((async () => (await h.sessions({ filters: { bogus: 1 } })).toArray())(), UnprocessableEntityError);
    await assert.rejects(h.deleteWorkspace(h.workspaceId), ConflictError);
  });
});

async function waitFor(cond: () => Promise<boolean>, timeoutMs = 15000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
