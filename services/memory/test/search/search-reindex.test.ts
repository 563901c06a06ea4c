import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from '@svc/kernel';
import { cleanupConfig, client, forEachStorage, startTestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { addDocument, newCollection, newUser, q, waitFor } from './helpers.ts';
import { startFakeOpenAi } from './fake-openai.ts';

const build = buildApp as (cfg: ServiceConfig) => Promise<FastifyInstance>;

forEachStorage('memory reindex after an embedding provider change', (kind) => {
  it('re-embeds existing documents with the new provider', { timeout: 60_000 }, async () => {
    const fake = await startFakeOpenAi();
    const first = await startTestServer('memory', kind, build);
    let cfg = first.cfg;
    try {
      const h1 = client(first.url);
      const u = await newUser(h1);
      const c = await newCollection(h1, u.C);
      await addDocument(h1, c.path, 'The lighthouse keeper painted the staircase');
      await addDocument(h1, c.path, 'Quarterly budget report');
      assert.equal((await h1.get('/health')).body.queue_depth, 0, 'no reindex on a first start');
      await first.app.close();
      const second = await startTestServer('memory', kind, build, { dataDir: cfg.dataDir, pgSchema: cfg.pgSchema, embedding: { url: fake.url, model: 'new-model' } } as Partial<ServiceConfig>);
      cfg = second.cfg;
      try {
        const h2 = client(second.url);
        const embedded = await waitFor(async () => {
          const inputs = fake.requests.filter((r) => r.path === '/v1/embeddings').flatMap((r) => r.body.input as string[]);
          return inputs.length >= 2 && inputs;
        });
        assert.deepEqual([...embedded].sort(), ['Quarterly budget report', 'The lighthouse keeper painted the staircase']);
        await waitFor(async () => (await h2.get('/health')).body.queue_depth === 0);
        const r = await h2.get(`${c.path}/query?query=${q('budget')}&top_k=1`);
        assert.equal(r.body[0].content, 'Quarterly budget report');
        await second.app.close();
        // Same provider again: nothing to do.
        const third = await startTestServer('memory', kind, build, { dataDir: cfg.dataDir, pgSchema: cfg.pgSchema, embedding: { url: fake.url, model: 'new-model' } } as Partial<ServiceConfig>);
        assert.equal((await client(third.url).get('/health')).body.queue_depth, 0);
        await third.app.close();
      } catch (err) {
        await second.app.close().catch(() => {});
        throw err;
      }
    } finally {
      await cleanupConfig(cfg);
      await fake.close();
    }
  });
});
