import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage, startTestServer, cleanupConfig, type TestServer } from '@svc/testkit';
import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from '@svc/kernel';
import { buildApp } from '../../src/app.ts';
import { client } from '@svc/testkit';
import { newUser, q, startMemory, waitFor, type Http } from './helpers.ts';
import { parseSse } from './fake-openai.ts';

async function facts(http: Http, C: string): Promise<string[]> {
  const c = await http.get(`${C}/honcho`);
  if (c.status !== 200) return [];
  const r = await http.get(`${C}/${c.body.id}/documents?size=100`);
  return r.body.items.map((d: any) => d.content);
}

async function idle(http: Http) {
  await waitFor(async () => (await http.get('/health')).body.queue_depth === 0);
}

forEachStorage('memory deriver and extractive chat', (kind) => {
  let server: TestServer;
  let http: Http;

  before(async () => {
    ({ server, http } = await startMemory(kind));
  });
  after(() => server.close());

  it('derives facts from user messages into the "honcho" collection, deduplicated', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'web' })).body;
    const M = `${u.S}/${s.id}/messages`;
    await http.post(M, { content: "Hi! I'm a nurse and I live in Lyon. My favorite color is blue.", is_user: true });
    await http.post(M, { content: 'I live in Lyon, and I really love my dog.', is_user: true });
    await http.post(M, { content: 'I love my dog!', is_user: true });
    await http.post(M, { content: 'I live in Paris. Do I like cats?', is_user: false });
    await idle(http);
    const got = await waitFor(async () => {
      const f = await facts(http, u.C);
      return f.length >= 4 && f;
    });
    assert.deepEqual([...got].sort(), [
      'The user is a nurse.',
      'The user lives in Lyon.',
      'The user really loves their dog.',
      "The user's favorite color is blue.",
    ]);
    const honcho = (await http.get(`${u.C}/honcho`)).body;
    const docs = (await http.get(`${u.C}/${honcho.id}/documents`)).body.items;
    assert.equal(docs[0].metadata.source, 'deriver');
    assert.equal(docs[0].metadata.session_id, s.id);
    // Facts are indexed like any document.
    const r = await http.get(`${u.C}/${honcho.id}/query?query=${q('colour favorite')}&top_k=1`);
    assert.equal(r.body[0].content, "The user's favorite color is blue.");
  });

  it('skips sessions whose metadata has deriver_disabled: true', async () => {
    const u = await newUser(http);
    const off = (await http.post(u.S, { location_id: 'x', metadata: { deriver_disabled: true } })).body;
    const on = (await http.post(u.S, { location_id: 'x' })).body;
    await http.post(`${u.S}/${off.id}/messages`, { content: 'I work as a pilot', is_user: true });
    await http.post(`${u.S}/${on.id}/messages`, { content: 'I play the cello', is_user: true });
    await waitFor(async () => (await facts(http, u.C)).length > 0);
    await idle(http);
    assert.deepEqual(await facts(http, u.C), ['The user plays the cello.']);
  });

  it('chat: 404 for an unknown or foreign session, 422 without a query', async () => {
    const u = await newUser(http);
    const other = await newUser(http);
    const s = (await http.post(other.S, { location_id: 'x' })).body;
    for (const path of [`${u.S}/00000000-0000-4000-8000-000000000000/chat?query=x`, `${u.S}/${s.id}/chat?query=x`, `${u.S}/${s.id}/chat/stream?query=x`]) {
      const r = await http.get(path);
      assert.equal(r.status, 404, path);
      assert.deepEqual(r.body, { detail: 'Session not found' });
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    }
    const r = await http.get(`${other.S}/${s.id}/chat`);
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['query', 'query'], msg: 'Field required', input: null }]);
  });

  it('chat answers from relevant facts, "None" otherwise, and creates the honcho collection', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'x' })).body;
    const chat = (query: string) => http.get(`${u.S}/${s.id}/chat?query=${q(query)}`);
    let r = await chat('Where do I live?');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { content: 'None' });
    assert.equal((await http.get(`${u.C}/honcho`)).status, 200, 'created on first chat');
    await http.post(`${u.S}/${s.id}/messages`, { content: "I live in Lyon. I'm a nurse. I play the guitar and I was born in Madrid.", is_user: true });
    await waitFor(async () => (await facts(http, u.C)).length >= 4);
    r = await chat('Where does the user live?');
    assert.deepEqual(r.body, { content: 'The user lives in Lyon.' });
    r = await chat('What instrument do I play?');
    assert.deepEqual(r.body, { content: 'The user plays the guitar.' });
    r = await chat('Where was I born?');
    assert.deepEqual(r.body, { content: 'The user was born in Madrid.' });
    for (const unrelated of ['What is the weather tomorrow?', 'Tell me about quantum physics', 'Who won the match?']) {
      assert.deepEqual((await chat(unrelated)).body, { content: 'None' }, unrelated);
    }
  });

  it('chat uses the session\'s recent messages even before (or without) derivation', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'x', metadata: { deriver_disabled: true } })).body;
    await http.post(`${u.S}/${s.id}/messages`, { content: 'I drive a red tractor on my farm', is_user: true });
    await http.post(`${u.S}/${s.id}/messages`, { content: 'I drive a blue bus', is_user: false });
    const r = await http.get(`${u.S}/${s.id}/chat?query=${q('What do I drive?')}`);
    assert.deepEqual(r.body, { content: 'The user drives a red tractor on their farm.' });
    assert.deepEqual(await facts(http, u.C), []);
  });

  it('chat/stream sends the same answer as server-sent events', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'x' })).body;
    await http.post(`${u.S}/${s.id}/messages`, { content: 'I live in Oslo. I love skiing.', is_user: true });
    await waitFor(async () => (await facts(http, u.C)).length >= 2);
    const plain = (await http.get(`${u.S}/${s.id}/chat?query=${q('where do I live and do I love skiing')}`)).body.content;
    assert.match(plain, /Oslo/);
    assert.match(plain, /skiing/);
    const r = await fetch(`${server.url}${u.S}/${s.id}/chat/stream?query=${q('where do I live and do I love skiing')}`, { headers: { 'x-request-id': 'stream-1' } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(r.headers.get('x-request-id'), 'stream-1');
    const events = parseSse(await r.text());
    const done = events.at(-1)!;
    assert.equal(done.event, 'done');
    assert.equal(done.data.content, plain);
    const chunks = events.slice(0, -1);
    assert.ok(chunks.length >= 2);
    assert.ok(chunks.every((e) => e.event === 'message'));
    assert.equal(chunks.map((e) => e.data.content).join(''), plain);
  });
});

forEachStorage('memory deriver jobs survive a restart', (kind) => {
  it('a job enqueued before shutdown runs in the next process', { timeout: 60_000 }, async () => {
    const build = buildApp as (cfg: ServiceConfig) => Promise<FastifyInstance>;
    const first = await startTestServer('memory', kind, build, { runWorkers: false });
    let cfg = first.cfg;
    try {
      const h1 = client(first.url);
      const u = await newUser(h1);
      const s = (await h1.post(u.S, { location_id: 'x' })).body;
      await h1.post(`${u.S}/${s.id}/messages`, { content: 'I collect vintage stamps', is_user: true });
      assert.equal((await h1.get('/health')).body.queue_depth, 1);
      await first.app.close();
      const second = await startTestServer('memory', kind, build, { dataDir: cfg.dataDir, pgSchema: cfg.pgSchema });
      cfg = second.cfg;
      try {
        const h2 = client(second.url);
        const got = await waitFor(async () => {
          const f = await facts(h2, u.C);
          return f.length > 0 && f;
        });
        assert.deepEqual(got, ['The user collects vintage stamps.']);
      } finally {
        await second.app.close();
      }
    } finally {
      await cleanupConfig(cfg);
    }
  });
});
