import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage, type TestServer } from '@svc/testkit';
import { addDocument, newCollection, newUser, q, startMemory, type Http } from './helpers.ts';

const TOPICS = [
  'My dog loves running in the park every morning',
  'The quarterly budget report is due on Friday',
  'Paris is the capital of France and famous for croissants',
  'Quantum computers use qubits instead of classical bits',
  'She plays the violin in the city orchestra',
  'Heavy rain caused flooding along the river banks',
  'The new smartphone has an excellent camera',
  'Vegetable soup with carrots, leeks and potatoes',
];

forEachStorage('memory /query hybrid search', (kind) => {
  let server: TestServer;
  let http: Http;
  let user: Awaited<ReturnType<typeof newUser>>;
  let coll: { id: string; path: string };
  const docs: Array<{ id: string; content: string }> = [];

  before(async () => {
    ({ server, http } = await startMemory(kind));
    user = await newUser(http);
    coll = await newCollection(http, user.C);
    for (const [i, t] of TOPICS.entries()) docs.push(await addDocument(http, coll.path, t, { i, group: i % 2 === 0 ? 'even' : 'odd' }));
  });
  after(() => server.close());

  it('returns a plain array of Documents, most relevant first', async () => {
    const r = await http.get(`${coll.path}/query?query=${q('where does my dog run?')}`);
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.body));
    assert.equal(r.body.length, 5, 'top_k defaults to 5');
    const top = r.body[0];
    assert.equal(top.content, TOPICS[0]);
    assert.deepEqual(Object.keys(top).sort(), ['collection_id', 'content', 'created_at', 'h_metadata', 'id', 'metadata']);
    assert.equal(top.collection_id, coll.id);
    assert.deepEqual(top.metadata, { i: 0, group: 'even' });
    assert.deepEqual(top.h_metadata, top.metadata);
    assert.match(top.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$/);
  });

  it('ranks by words and by word forms (stems and character n-grams)', async () => {
    const cases: Array<[string, number]> = [
      ['qubit computing', 3],
      ['FLOODS by the rivers', 5],
      ['croissant', 2],
      ['violinist orchestras', 4],
      ['camera phone', 6],
      ['potato soup recipe', 7],
    ];
    for (const [query, want] of cases) {
      const r = await http.get(`${coll.path}/query?query=${q(query)}&top_k=1`);
      assert.equal(r.status, 200);
      assert.deepEqual(
        r.body.map((d: any) => d.content),
        [TOPICS[want]],
        query,
      );
    }
  });

  it('top_k: default 5, clamped to 50, ≤ 0 gives []', async () => {
    const big = await newCollection(http, user.C, 'big');
    for (let i = 0; i < 55; i++) await addDocument(http, big.path, `note number ${i} about gardening and tomatoes`);
    assert.equal((await http.get(`${big.path}/query?query=tomatoes`)).body.length, 5);
    assert.equal((await http.get(`${big.path}/query?query=tomatoes&top_k=2`)).body.length, 2);
    assert.equal((await http.get(`${big.path}/query?query=tomatoes&top_k=500`)).body.length, 50);
    assert.deepEqual((await http.get(`${big.path}/query?query=tomatoes&top_k=0`)).body, []);
    assert.deepEqual((await http.get(`${big.path}/query?query=tomatoes&top_k=-3`)).body, []);
    const all = (await http.get(`${coll.path}/query?query=anything&top_k=50`)).body;
    assert.equal(all.length, TOPICS.length, 'never more than the collection holds');
  });

  it('applies the metadata filter before ranking', async () => {
    const f = q(JSON.stringify({ group: 'odd' }));
    const r = await http.get(`${coll.path}/query?query=${q('dog running in the park')}&top_k=10&filter=${f}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 4);
    assert.ok(r.body.every((d: any) => d.metadata.group === 'odd'));
    const one = await http.get(`${coll.path}/query?query=${q('qubits')}&top_k=1&filter=${f}`);
    assert.equal(one.body[0].content, TOPICS[3]);
    const exact = await http.get(`${coll.path}/query?query=x&filter=${q('{"i": 6}')}`);
    assert.deepEqual(
      exact.body.map((d: any) => d.content),
      [TOPICS[6]],
    );
    assert.equal((await http.get(`${coll.path}/query?query=x&filter=${q('{}')}&top_k=50`)).body.length, TOPICS.length);
    assert.equal((await http.get(`${coll.path}/query?query=x&filter=null&top_k=50`)).body.length, TOPICS.length);
    assert.deepEqual((await http.get(`${coll.path}/query?query=x&filter=${q('[]')}`)).body, []);
    assert.deepEqual((await http.get(`${coll.path}/query?query=x&filter=${q('{"group":"none"}')}`)).body, []);
  });

  it('filters with PostgreSQL containment semantics (types, numbers, nesting)', async () => {
    const c = await newCollection(http, user.C, 'typed');
    const docs = [
      ['one', { flag: true, n: 1, s: '1' }],
      ['two', { flag: 1, n: 1.0, tags: ['a', 'b'], nested: { x: 1, y: 2 } }],
      ['three', { flag: 'true', n: 2, tags: 'a', nested: { x: 1 } }],
      ['four', { flag: null, 'odd key"': 'v' }],
    ] as const;
    for (const [content, metadata] of docs) await addDocument(http, c.path, content, metadata);
    const match = async (f: unknown) =>
      ((await http.get(`${c.path}/query?query=${q('one two three four')}&top_k=10&filter=${q(JSON.stringify(f))}`)).body as any[]).map((d) => d.content).sort();
    assert.deepEqual(await match({ flag: true }), ['one']);
    assert.deepEqual(await match({ flag: 1 }), ['two']);
    assert.deepEqual(await match({ flag: 'true' }), ['three']);
    assert.deepEqual(await match({ flag: null }), ['four']);
    assert.deepEqual(await match({ n: 1 }), ['one', 'two']);
    assert.deepEqual(await match({ s: 1 }), []);
    assert.deepEqual(await match({ tags: ['b'] }), ['two']);
    assert.deepEqual(await match({ tags: 'a' }), ['three']);
    assert.deepEqual(await match({ nested: { x: 1 } }), ['three', 'two']);
    assert.deepEqual(await match({ 'odd key"': 'v' }), ['four']);
    assert.deepEqual(await match({ n: 1, flag: true }), ['one']);
  });

  it('is scoped to the collection of the user in the path', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    assert.deepEqual((await http.get(`${user.C}/${missing}/query?query=dog`)).body, []);
    const other = await newUser(http);
    const otherColl = await newCollection(http, other.C);
    await addDocument(http, otherColl.path, 'My dog loves running in the park every morning');
    // The other user's collection through this user's path, and this user's through the other's.
    assert.deepEqual((await http.get(`${user.C}/${otherColl.id}/query?query=dog`)).body, []);
    assert.deepEqual((await http.get(`${other.C}/${coll.id}/query?query=dog`)).body, []);
    const wrongApp = `/apps/${other.appId}/users/${user.userId}/collections/${coll.id}/query?query=dog`;
    assert.deepEqual((await http.get(wrongApp)).body, []);
    // Results never include another collection's documents.
    const mine = (await http.get(`${coll.path}/query?query=dog&top_k=50`)).body;
    assert.ok(mine.every((d: any) => d.collection_id === coll.id));
  });

  it('follows document updates and deletes', async () => {
    const c = await newCollection(http, user.C, 'changing');
    const a = await addDocument(http, c.path, 'notes about astronomy and telescopes');
    await addDocument(http, c.path, 'notes about cooking pasta');
    let r = await http.put(`${c.path}/documents/${a.id}`, { content: 'notes about sailing boats' });
    assert.equal(r.status, 200);
    r = await http.get(`${c.path}/query?query=telescope&top_k=1`);
    assert.notEqual(r.body[0]?.content, 'notes about astronomy and telescopes');
    r = await http.get(`${c.path}/query?query=sailing%20boat&top_k=1`);
    assert.equal(r.body[0].id, a.id);
    assert.equal(r.body[0].content, 'notes about sailing boats');
    r = await http.put(`${c.path}/documents/${a.id}`, { metadata: { tag: 'sea' } });
    r = await http.get(`${c.path}/query?query=boats&filter=${q('{"tag":"sea"}')}`);
    assert.deepEqual(
      r.body.map((d: any) => d.id),
      [a.id],
    );
    assert.equal((await http.delete(`${c.path}/documents/${a.id}`)).status, 200);
    r = await http.get(`${c.path}/query?query=sailing%20boats&top_k=10`);
    assert.deepEqual(
      r.body.map((d: any) => d.content),
      ['notes about cooking pasta'],
    );
    assert.equal((await http.delete(c.path)).status, 200);
    assert.deepEqual((await http.get(`${c.path}/query?query=pasta`)).body, []);
  });

  it('validates input in the FastAPI shape', async () => {
    let r = await http.get(`${coll.path}/query`);
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['query', 'query'], msg: 'Field required', input: null }]);
    r = await http.get(`${coll.path}/query?query=x&top_k=abc`);
    assert.equal(r.status, 422);
    assert.equal(r.body.detail[0].type, 'int_parsing');
    assert.deepEqual(r.body.detail[0].loc, ['query', 'top_k']);
    r = await http.get(`${coll.path}/query?query=x&filter=${q('{bad')}`);
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['query', 'filter']);
    r = await http.get(`${user.C}/not-a-uuid/query?query=x`);
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['path', 'collection_id']);
    // Hostile query text is just text: FTS syntax, SQL and huge inputs are harmless.
    for (const text of ['"unbalanced', 'a OR b NOT c*', "'; drop table documents; --", 'NEAR(a b)', 'word '.repeat(2_000), '🙂 ünïcödé 東京']) {
      r = await http.get(`${coll.path}/query?query=${q(text)}`);
      assert.equal(r.status, 200, text.slice(0, 20));
      assert.ok(Array.isArray(r.body));
    }
  });

  it('keeps ranking right in a collection large enough for the vector index', { timeout: 120_000 }, async () => {
    const c = await newCollection(http, user.C, 'large');
    const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
    const filler = Array.from({ length: 1100 }, (_, i) => `${words[i % 12]} ${words[(i * 7) % 12]} ${words[(i * 5) % 12]} record ${i}`);
    // Batches in parallel keep the setup fast; order does not matter here.
    for (let i = 0; i < filler.length; i += 50) await Promise.all(filler.slice(i, i + 50).map((t) => addDocument(http, c.path, t)));
    const needle = await addDocument(http, c.path, 'The lighthouse keeper painted the spiral staircase');
    let r = await http.get(`${c.path}/query?query=${q('lighthouse keeper staircase')}&top_k=3`);
    assert.equal(r.body[0].id, needle.id);
    r = await http.get(`${c.path}/query?query=${q('painting a spiral stair')}&top_k=1`);
    assert.equal(r.body[0].id, needle.id);
    r = await http.get(`${c.path}/query?query=${q('record 777')}&top_k=50`);
    assert.equal(r.body.length, 50);
    assert.ok(r.body.some((d: any) => d.content.endsWith('record 777')));
    assert.equal((await http.delete(`${c.path}/documents/${needle.id}`)).status, 200);
    r = await http.get(`${c.path}/query?query=${q('lighthouse keeper staircase')}&top_k=3`);
    assert.ok(r.body.every((d: any) => d.id !== needle.id));
  });
});
