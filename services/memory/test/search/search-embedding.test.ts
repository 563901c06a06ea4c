import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage, type TestServer } from '@svc/testkit';
import {
  createEmbeddingProvider,
  dot,
  EmbeddingError,
  INDEX_DIMS,
  localEmbedding,
  LocalEmbeddingProvider,
  OpenAiEmbeddingProvider,
  openAiEndpoint,
} from '../../src/search/embedding.ts';
import { reciprocalRankFusion } from '../../src/search/rrf.ts';
import { simhash } from '../../src/search/simhash.ts';
import { indexBody, queryTerms, stem } from '../../src/search/text.ts';
import { extractFacts } from '../../src/chat/extract-facts.ts';
import { factKey } from '../../src/domain/facts.ts';
import { extractiveAnswer, relevance, RELEVANCE_THRESHOLD } from '../../src/domain/dialectic.ts';
import { parseNumberedList } from '../../src/chat/prompts.ts';
import { ftsQuery } from '../../src/search/sqlite-index.ts';
import { tsQuery } from '../../src/search/pg-index.ts';
import { addDocument, newCollection, newUser, q, startMemory, type Http } from './helpers.ts';
import { startFakeOpenAi, type FakeOpenAi } from './fake-openai.ts';

const norm = (v: Float32Array) => Math.sqrt(dot(v, v));

describe('local embedding', () => {
  it('is deterministic, 384-dimensional and unit length', () => {
    const a = localEmbedding('The quick brown fox jumps over the lazy dog');
    const b = localEmbedding('The quick brown fox jumps over the lazy dog');
    assert.equal(a.length, INDEX_DIMS);
    assert.deepEqual(a, b);
    assert.ok(Math.abs(norm(a) - 1) < 1e-5);
    const empty = localEmbedding('');
    assert.equal(norm(empty), 0);
    assert.ok(!empty.some(Number.isNaN));
    assert.ok(Math.abs(norm(localEmbedding('the of and')) - 1) < 1e-5, 'stopword-only text still embeds');
  });

  it('puts similar wording closer than unrelated text', () => {
    const q = localEmbedding('my dog runs in the park');
    const near = localEmbedding('Dogs love running in the park every morning');
    const far = localEmbedding('The quarterly budget report is due on Friday');
    assert.ok(dot(q, near) > 0.4, String(dot(q, near)));
    assert.ok(dot(q, far) < 0.15, String(dot(q, far)));
    assert.ok(dot(localEmbedding('Café crème'), localEmbedding('cafe CREME')) > 0.99, 'case and accents do not matter');
  });

  it('bounds the work on huge input', () => {
    const t0 = performance.now();
    const v = localEmbedding('lorem ipsum dolor '.repeat(100_000));
    assert.ok(performance.now() - t0 < 2000);
    assert.equal(v.length, INDEX_DIMS);
  });

  it('the default provider is local', async () => {
    const p = createEmbeddingProvider({});
    assert.ok(p instanceof LocalEmbeddingProvider);
    assert.deepEqual(await p.embed(['a b', 'c']), [localEmbedding('a b'), localEmbedding('c')]);
  });
});

describe('text analysis and query building', () => {
  it('stems word forms together', () => {
    for (const group of [['live', 'lives', 'lived', 'living'], ['like', 'likes', 'liked', 'liking'], ['run', 'running', 'runs'], ['city', 'cities']]) {
      assert.equal(new Set(group.map(stem)).size, 1, group.join(','));
    }
    assert.deepEqual(queryTerms('Where does the user LIVE? Lives!'), ['user', 'liv']);
    assert.equal(indexBody('I am not a nurse'), 'not nurs');
  });

  it('quotes every term so FTS5 and tsquery syntax in input is inert', () => {
    assert.equal(ftsQuery('0a1b2c3d-0000-4000-8000-000000000000', ['cat', 'dog']), '"k0a1b2c3d00004000cat" OR "k0a1b2c3d00004000dog"');
    assert.equal(tsQuery(['cat', 'dog']), "'cat' | 'dog'");
    // Terms come from queryTerms: letters and digits only.
    assert.deepEqual(queryTerms('"a" OR b* NEAR(c) \'; drop'), ['b', 'near', 'c', 'drop']);
  });
});

describe('SimHash codes', () => {
  const hamming = (a: Buffer, b: Buffer) => {
    let d = 0;
    for (let i = 0; i < a.length; i++) for (let x = a[i]! ^ b[i]!; x; x &= x - 1) d++;
    return d;
  };
  it('are 384 bits, deterministic, and closer for closer vectors', () => {
    const q = localEmbedding('lighthouse keeper');
    const near = localEmbedding('The lighthouse keeper painted the staircase');
    const far = localEmbedding('quarterly budget report for finance');
    assert.equal(simhash(q).length, 48);
    assert.deepEqual(simhash(q), simhash(localEmbedding('lighthouse keeper')));
    assert.ok(hamming(simhash(q), simhash(near)) < hamming(simhash(q), simhash(far)) - 30);
    // Bits track the angle: ~ (1 - cos θ-ish) · 384 / 2 for unrelated vectors.
    assert.ok(Math.abs(hamming(simhash(q), simhash(far)) - 192) < 50);
  });
});

describe('reciprocal rank fusion', () => {
  it('rewards documents ranked well by both lists and breaks ties by insertion order', () => {
    const h = (key: number) => ({ key, order: key });
    const fused = reciprocalRankFusion(
      [
        [h(1), h(2), h(3)],
        [h(3), h(4), h(1)],
      ],
      10,
    );
    assert.deepEqual(
      fused.map((x) => x.key),
      [1, 3, 2, 4],
    );
    assert.deepEqual(
      reciprocalRankFusion([[h(9)], [h(5)]], 10).map((x) => x.key),
      [5, 9],
      'equal scores: earlier insertion first',
    );
    assert.equal(reciprocalRankFusion([[h(1), h(2), h(3)]], 2).length, 2);
  });
});

describe('deterministic fact extraction', () => {
  it('turns first-person statements into facts about the user', () => {
    assert.deepEqual(extractFacts("Hi! I'm a nurse and I live in Lyon. My favorite color is blue."), [
      'The user is a nurse.',
      'The user lives in Lyon.',
      "The user's favorite color is blue.",
    ]);
    assert.deepEqual(extractFacts("I really love my dog, but I don't like cats"), ['The user really loves their dog.', "The user doesn't like cats."]);
    assert.deepEqual(extractFacts("I work as an engineer; I've been coding for 10 years. I was born in Madrid"), [
      'The user works as an engineer.',
      'The user has been coding for 10 years.',
      'The user was born in Madrid.',
    ]);
    assert.deepEqual(extractFacts('i study physics and i play the guitar'), ['The user studies physics.', 'The user plays the guitar.']);
    assert.deepEqual(extractFacts("Im vegetarian. I'd love to visit Japan"), ['The user is vegetarian.', 'The user would love to visit Japan.']);
  });

  it('ignores questions, hedges and chit-chat', () => {
    for (const t of ["I'm not sure.", 'Do I like pizza?', 'I think so', "I'm sorry", 'What is my name?', 'Thanks!', '', 'I']) {
      assert.deepEqual(extractFacts(t), [], t);
    }
  });

  it('is bounded on hostile input', () => {
    const t0 = performance.now();
    const f = extractFacts('I like ' + 'x '.repeat(50_000) + '. ' + "I'm a ".repeat(10_000));
    assert.ok(performance.now() - t0 < 1000);
    assert.ok(f.length <= 10);
    assert.ok(f.every((x) => x.length < 400));
  });

  it('fact identity ignores fillers and word forms but not negation', () => {
    assert.equal(factKey('The user loves their dog.'), factKey('The user really loves their dog!'));
    assert.notEqual(factKey('The user is a nurse.'), factKey('The user is not a nurse.'));
    assert.notEqual(factKey('The user lives in Lyon.'), factKey('The user lives in Paris.'));
  });

  it('parses a model\'s numbered list', () => {
    assert.deepEqual(parseNumberedList('Here you go:\n1. The user likes tea.\n2) The user is tall\n\nnotes'), ['The user likes tea.', 'The user is tall']);
    assert.deepEqual(parseNumberedList('None'), []);
    assert.deepEqual(parseNumberedList('1. None'), []);
  });
});

describe('extractive chat relevance', () => {
  const facts = ['The user lives in Lyon.', 'The user is a nurse.', "The user's favorite color is blue.", 'The user plays the guitar.', 'The user was born in Madrid.'];
  it('a fact is relevant when it shares a content stem and scores over the threshold', () => {
    assert.ok(relevance('Where does the user live?', facts[0]!) >= RELEVANCE_THRESHOLD);
    assert.ok(relevance('What is my favorite color?', facts[2]!) >= RELEVANCE_THRESHOLD);
    assert.ok(relevance('What do I play?', facts[3]!) >= RELEVANCE_THRESHOLD);
    for (const q of ['What is the weather tomorrow?', 'Tell me about quantum physics', 'Who am I?', 'Does the user have pets?']) {
      for (const f of facts) assert.ok(relevance(q, f) < RELEVANCE_THRESHOLD, `${q} / ${f}`);
    }
    // "user" alone is not a shared content word: every fact has it.
    assert.equal(relevance('Tell me about the user', facts[1]!), 0);
  });

  it('answers with the relevant facts, best first, or "None"', () => {
    const ctx = { facts, recent: [] };
    assert.equal(extractiveAnswer('Where was I born?', ctx), 'The user was born in Madrid.');
    assert.equal(extractiveAnswer('What is the capital of Peru?', ctx), 'None');
    assert.equal(extractiveAnswer('anything', { facts: [], recent: [] }), 'None');
    const withRecent = { facts: [], recent: [{ is_user: true, content: 'I live in Oslo' }, { is_user: false, content: 'I live in Rome' }] };
    assert.equal(extractiveAnswer('Where do I live?', withRecent), 'The user lives in Oslo.');
  });
});

describe('OpenAI-compatible embedding provider', () => {
  let fake: FakeOpenAi;
  before(async () => {
    fake = await startFakeOpenAi();
  });
  after(() => fake.close());

  it('builds endpoint URLs from base URLs', () => {
    assert.equal(openAiEndpoint('https://api.openai.com/v1', 'embeddings'), 'https://api.openai.com/v1/embeddings');
    assert.equal(openAiEndpoint('http://localhost:11434/', 'embeddings'), 'http://localhost:11434/v1/embeddings');
    assert.equal(openAiEndpoint('http://h/v1/embeddings', 'embeddings'), 'http://h/v1/embeddings');
    assert.equal(openAiEndpoint('http://h/v1', 'chat/completions'), 'http://h/v1/chat/completions');
  });

  it('speaks /v1/embeddings, keeps input order by index and folds to 384 dims', async () => {
    const p = new OpenAiEmbeddingProvider({ url: fake.url, model: 'text-embedding-3-small', key: 'sk-x', batchSize: 2 });
    fake.requests.length = 0;
    const texts = ['dogs in the park', 'quarterly budget', 'running dog', 'a budget report'];
    const vs = await p.embed(texts);
    assert.equal(fake.requests.length, 2, 'batched');
    assert.equal(fake.requests[0]!.path, '/v1/embeddings');
    assert.equal(fake.requests[0]!.auth, 'Bearer sk-x');
    assert.deepEqual(fake.requests[0]!.body, { model: 'text-embedding-3-small', input: texts.slice(0, 2), encoding_format: 'float' });
    assert.ok(vs.every((v) => v.length === INDEX_DIMS && Math.abs(norm(v) - 1) < 1e-5));
    assert.ok(dot(vs[0]!, vs[2]!) > dot(vs[0]!, vs[1]!), 'folding keeps similarity order');
    fake.dims = INDEX_DIMS;
    const exact = await new OpenAiEmbeddingProvider({ url: fake.url, model: 'm', dimensions: 384 }).embed(['dogs in the park']);
    assert.ok(dot(exact[0]!, localEmbedding('dogs in the park')) > 0.9999, 'a 384-dim answer is used as is');
    assert.equal(fake.requests.at(-1)!.body.dimensions, 384);
    assert.equal(fake.requests.at(-1)!.auth, undefined);
    fake.dims = 1536;
  });

  it('reports upstream failures as EmbeddingError', async () => {
    const p = new OpenAiEmbeddingProvider({ url: fake.url, model: 'm' });
    fake.failWith = 503;
    await assert.rejects(p.embed(['x']), EmbeddingError);
    fake.failWith = undefined;
    await assert.rejects(new OpenAiEmbeddingProvider({ url: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 2000 }).embed(['x']), EmbeddingError);
  });
});

forEachStorage('memory search with a remote embedding provider', (kind) => {
  let server: TestServer;
  let http: Http;
  let fake: FakeOpenAi;
  before(async () => {
    fake = await startFakeOpenAi();
    ({ server, http } = await startMemory(kind, { embedding: { url: fake.url, model: 'emb-model', key: 'sk-e' } }));
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  it('embeds documents and queries through the provider', async () => {
    const u = await newUser(http);
    const c = await newCollection(http, u.C);
    fake.requests.length = 0;
    await addDocument(http, c.path, 'Dogs love running in the park');
    await addDocument(http, c.path, 'The quarterly budget report is due');
    const r = await http.get(`${c.path}/query?query=${q('budget reports')}&top_k=1`);
    assert.equal(r.body[0].content, 'The quarterly budget report is due');
    const inputs = fake.requests.filter((x) => x.path === '/v1/embeddings').map((x) => x.body.input[0]);
    assert.deepEqual(inputs, ['Dogs love running in the park', 'The quarterly budget report is due', 'budget reports']);
    assert.ok(fake.requests.every((x) => x.auth === 'Bearer sk-e' && x.body.model === 'emb-model'));
  });

  it('a failing provider is a 502 and leaves no half-written document', async () => {
    const u = await newUser(http);
    const c = await newCollection(http, u.C);
    fake.failWith = 500;
    try {
      const w = await http.post(`${c.path}/documents`, { content: 'lost' });
      assert.equal(w.status, 502);
      assert.deepEqual(w.body, { detail: 'Embedding provider unavailable' });
      const r = await http.get(`${c.path}/query?query=lost`);
      assert.equal(r.status, 502);
      assert.deepEqual(r.body, { detail: 'Embedding provider unavailable' });
    } finally {
      fake.failWith = undefined;
    }
    assert.equal((await http.get(`${c.path}/documents`)).body.total, 0);
  });
});
