import { it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { uniq, useServer } from '../helpers.ts';
import { embedQueued, NO_REASONING } from './embed.ts';

/**
 * v3 message search through the in-memory index (no filters) against the
 * filtered path with a filter that matches everything (the filter's matches
 * read from SQL, then ranked through the index under that mask): the same
 * answers at workspace, session and peer level; writes of another process
 * seen; deleted messages never returned. Exactness against the plain ranking
 * of every stored vector is search-filters.test.ts.
 */
const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');
const TOPICS = ['my dog Rex likes the park', 'I work as a nurse in Lyon', 'we cooked pasta with tomatoes', 'the train to Paris was late', 'I am learning to play the violin', 'our garden has roses and tulips'];
const ALL = { created_at: { gte: '2000-01-01' } };

forEachStorage('memory v3 search index', (storage) => {
  const s = useServer(storage, { runWorkers: false });

  it('answers as the plain ranking, scoped, across processes, without deleted messages', async () => {
    const w = wsName('si');
    const W = `/v3/workspaces/${w}`;
    for (const [session, n] of [['s1', 90], ['s2', 60]] as const) {
      const messages = Array.from({ length: n }, (_, i) => ({ peer_id: i % 3 ? 'alice' : 'bob', content: `${TOPICS[(i * 7 + n) % TOPICS.length]} (note ${i} of ${session})` }));
      for (let i = 0; i < messages.length; i += 50) assert.equal((await s.http.post(`${W}/sessions/${session}/messages`, { messages: messages.slice(i, i + 50) })).status, 201);
    }
    const ids = (r: any) => (r.body as any[]).map((m) => m.id);
    const queries = ['dog park', 'nurse Lyon', 'violin lessons', 'pasta', 'late train Paris', 'roses', 'nothing matches zzz'];
    for (const [path, label] of [[`${W}/search`, 'workspace'], [`${W}/sessions/s1/search`, 'session'], [`${W}/peers/bob/search`, 'peer']] as const) {
      for (const query of queries) {
        for (const limit of [1, 5, 20]) {
          const indexed = await s.http.post(path, { query, limit });
          const plain = await s.http.post(path, { query, limit, filters: ALL });
          assert.equal(indexed.status, 200, indexed.text);
          assert.deepEqual(ids(indexed), ids(plain), `${label} "${query}" limit ${limit}`);
          if (label === 'session') assert.ok((indexed.body as any[]).every((m) => m.session_id === 's1'));
          if (label === 'peer') assert.ok((indexed.body as any[]).every((m) => m.peer_id === 'bob'));
        }
      }
    }
    // Another process writes; this one's index sees it on the next search.
    const other = await buildApp({ ...s.server.cfg } as any);
    const otherUrl = await other.listen({ port: 0, host: '127.0.0.1' });
    try {
      const r = await client(otherUrl).post(`${W}/sessions/s3/messages`, { messages: [{ peer_id: 'carol', content: 'the saxophone quartet rehearsed on Tuesday' }] });
      assert.equal(r.status, 201, r.text);
      const hit = await s.http.post(`${W}/search`, { query: 'saxophone quartet', limit: 1 });
      assert.equal(hit.body[0]?.content, 'the saxophone quartet rehearsed on Tuesday');
    } finally {
      await other.close();
    }
    // A deleted session's messages leave the answers once removed (a deletion job; this server runs none, so run one).
    assert.equal((await s.http.post(`${W}/search`, { query: 'pasta', limit: 100 })).body.some((m: any) => m.session_id === 's2'), true);
    assert.equal((await s.http.delete(`${W}/sessions/s2`)).status, 202);
    const worker = await buildApp({ ...s.server.cfg, runWorkers: true } as any);
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const r = await s.http.post(`${W}/search`, { query: 'pasta', limit: 100 });
        if (!r.body.some((m: any) => m.session_id === 's2')) break;
        assert.ok(Date.now() < deadline, 'deleted messages still answered');
        await new Promise((res) => setTimeout(res, 100));
      }
    } finally {
      await worker.close();
    }
    const after = await s.http.post(`${W}/search`, { query: 'pasta', limit: 100 });
    const plain = await s.http.post(`${W}/search`, { query: 'pasta', limit: 100, filters: ALL });
    assert.deepEqual(ids(after), ids(plain));
  });

  it('past the exact re-rank (1,100 messages: int8 pre-rank in the SIMD kernel, index storage grown) answers as the plain ranking', async () => {
    const w = wsName('big');
    const W = `/v3/workspaces/${w}`;
    assert.equal((await s.http.post('/v3/workspaces', { id: w, configuration: NO_REASONING })).status, 201);
    const words = ['apple', 'river', 'mountain', 'guitar', 'winter', 'coffee', 'bicycle', 'library', 'ocean', 'garden', 'rocket', 'piano'];
    for (let b = 0; b < 11; b++) {
      const messages = Array.from({ length: 100 }, (_, i) => {
        const k = b * 100 + i;
        return { peer_id: k % 2 ? 'alice' : 'bob', content: `${words[k % 12]} ${words[(k * 5) % 12]} ${words[(k * 7 + 3) % 12]} item${k % 97}` };
      });
      assert.equal((await s.http.post(`${W}/sessions/s${b % 3}/messages`, { messages })).status, 201);
    }
    const ids = (r: any) => (r.body as any[]).map((m) => m.id);
    // Built before the embeddings are written (the batches' ingest jobs), caught up after.
    assert.equal((await s.http.post(`${W}/search`, { query: 'apple', limit: 1 })).status, 200);
    await embedQueued(s.server.cfg);
    for (const query of ['apple river', 'guitar winter coffee', 'item42', 'ocean rocket piano', 'library']) {
      for (const limit of [3, 10]) {
        const indexed = await s.http.post(`${W}/search`, { query, limit });
        const plain = await s.http.post(`${W}/search`, { query, limit, filters: ALL });
        assert.deepEqual(ids(indexed), ids(plain), `"${query}" limit ${limit}`);
      }
    }
  });
});
