import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage, type TestServer } from '@svc/testkit';
import { newUser, q, startMemory, waitFor, type Http } from './helpers.ts';
import { parseSse, startFakeOpenAi, type FakeOpenAi } from './fake-openai.ts';

async function facts(http: Http, C: string): Promise<string[]> {
  const c = await http.get(`${C}/honcho`);
  if (c.status !== 200) return [];
  return (await http.get(`${C}/${c.body.id}/documents?size=100`)).body.items.map((d: any) => d.content);
}

forEachStorage('memory chat and deriver with an OpenAI-compatible LLM', (kind) => {
  let server: TestServer;
  let http: Http;
  let fake: FakeOpenAi;
  let deriveAnswer = '';

  before(async () => {
    fake = await startFakeOpenAi();
    fake.answer = (prompt) => {
      if (prompt.includes('deriving discrete facts')) return deriveAnswer;
      if (prompt.includes('comparing new facts')) {
        const m = /new facts:\n([\s\S]*?)\n---/.exec(prompt)!;
        const kept = m[1]!.split('\n').filter((l) => !/lyon/i.test(l));
        return kept.length ? kept.map((l, i) => l.replace(/^\d+\./, `${i + 1}.`)).join('\n') : 'None';
      }
      if (prompt.includes('You are tasked with responding to the query')) {
        return /lives in Lyon/.test(prompt) ? 'They live in Lyon, France — a lovely city.' : 'None';
      }
      return 'None';
    };
    ({ server, http } = await startMemory(kind, { llm: { url: fake.url, model: 'test-model', key: 'sk-test' } }));
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  it('the deriver asks the model for facts, then to drop ones already known', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'x' })).body;
    deriveAnswer = '1. The user lives in Lyon.\n2. The user is a nurse.';
    await http.post(`${u.S}/${s.id}/messages`, { content: 'hello there', is_user: false });
    await http.post(`${u.S}/${s.id}/messages`, { content: 'I am a nurse from Lyon', is_user: true });
    await waitFor(async () => (await facts(http, u.C)).length === 2);
    const derive = fake.requests.find((r) => r.body.messages?.[0]?.content.includes('I am a nurse from Lyon'))!;
    assert.equal(derive.path, '/v1/chat/completions');
    assert.equal(derive.auth, 'Bearer sk-test');
    assert.equal(derive.body.model, 'test-model');
    assert.match(derive.body.messages[0].content, /ai: hello there\nuser: I am a nurse from Lyon/);
    // Second message: one fact is new, one is a rewording the model recognises as known.
    deriveAnswer = '1. The user resides in Lyon.\n2. The user has a cat named Tom.';
    await http.post(`${u.S}/${s.id}/messages`, { content: 'my cat Tom and I love Lyon', is_user: true });
    await waitFor(async () => (await facts(http, u.C)).length === 3);
    await waitFor(async () => (await http.get('/health')).body.queue_depth === 0);
    assert.deepEqual((await facts(http, u.C)).sort(), ['The user has a cat named Tom.', 'The user is a nurse.', 'The user lives in Lyon.']);
    const check = fake.requests.find((r) => r.body.messages?.[0]?.content.includes('comparing new facts'))!;
    assert.match(check.body.messages[0].content, /existing facts:\n(.*\n)*\d\. The user lives in Lyon\./);
  });

  it('chat returns the model\'s answer to the dialectic prompt', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'x' })).body;
    deriveAnswer = '1. The user lives in Lyon.';
    await http.post(`${u.S}/${s.id}/messages`, { content: 'I live in Lyon', is_user: true });
    await waitFor(async () => (await facts(http, u.C)).length === 1);
    const r = await http.get(`${u.S}/${s.id}/chat?query=${q('Where do I live?')}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { content: 'They live in Lyon, France — a lovely city.' });
    const prompt = fake.requests.at(-1)!.body.messages[0].content as string;
    assert.match(prompt, /^You are tasked with responding to the query based on the context provided\.\n---\nquery: Where do I live\?\ncontext: /);
    assert.match(prompt, /- The user lives in Lyon\./);
    assert.match(prompt, /recent conversation:\nuser: I live in Lyon/);
    assert.match(prompt, /If the context provided doesn't aid in addressing the query, return None\.$/);
    const none = await http.get(`${u.S}/${(await http.post(u.S, { location_id: 'y' })).body.id}/chat?query=${q('anything?')}`);
    assert.equal(none.status, 200);
  });

  it('chat/stream relays the model\'s stream as server-sent events', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'x', metadata: { deriver_disabled: true } })).body;
    await http.post(`${u.S}/${s.id}/messages`, { content: 'I live in Lyon', is_user: true });
    // Recent messages reach the model even without derived facts; the fake answers from "lives in Lyon" only.
    fake.answer = (prompt) => (prompt.includes('user: I live in Lyon') ? 'You told me you live in Lyon, near the Rhône.' : 'None');
    const r = await fetch(`${server.url}${u.S}/${s.id}/chat/stream?query=${q('Where do I live?')}`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = parseSse(await r.text());
    assert.ok(events.length > 3);
    const done = events.at(-1)!;
    assert.equal(done.event, 'done');
    assert.equal(done.data.content, 'You told me you live in Lyon, near the Rhône.');
    assert.equal(
      events
        .slice(0, -1)
        .map((e) => e.data.content)
        .join(''),
      done.data.content,
    );
    assert.equal(fake.requests.at(-1)!.body.stream, true);
  });

  it('a failing model is a 502 (plain) or an error event (stream), never a 500', async () => {
    const u = await newUser(http);
    const s = (await http.post(u.S, { location_id: 'x' })).body;
    fake.failWith = 500;
    try {
      const r = await http.get(`${u.S}/${s.id}/chat?query=x`);
      assert.equal(r.status, 502);
      assert.deepEqual(r.body, { detail: 'LLM request failed' });
      const st = await fetch(`${server.url}${u.S}/${s.id}/chat/stream?query=x`);
      assert.equal(st.status, 200);
      assert.deepEqual(parseSse(await st.text()), [{ event: 'error', data: { detail: 'LLM request failed' } }]);
    } finally {
      fake.failWith = undefined;
    }
  });
});
