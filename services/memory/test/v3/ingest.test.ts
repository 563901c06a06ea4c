import { it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createQueue } from '@svc/queue';
import { client, forEachStorage } from '@svc/testkit';
import { buildApp, openMemoryStorage } from '../../src/app.ts';
import { bufferToVector, LocalEmbeddingProvider } from '../../src/search/embedding.ts';
import { quantize } from '../../src/domain/v3/message-index.ts';
import { ingest, INGEST_TASK } from '../../src/domain/v3/reasoning.ts';
import { uniq, useServer } from '../helpers.ts';
import { embedQueued } from './embed.ts';

/**
 * A message batch writes its messages, one queued work row per kind of unit
 * and one ingest job; `queue/status` counts every unit from the start. The
 * ingest job (embeddings, then a row and a job per unit) run twice — as after
 * a process died between its commit and the job's completion — writes each
 * vector, unit and job once.
 */
const wsName = (p: string) => uniq(p).replace(/[^a-zA-Z0-9_-]/g, '_');

forEachStorage('memory v3 batch ingest', (storage) => {
  const s = useServer(storage, { runWorkers: false });

  it('queue/status counts the queued units; the ingest job is idempotent; the queue drains', { timeout: 120_000 }, async () => {
    const w = wsName('ing');
    const W = `/v3/workspaces/${w}`;
    const messages = Array.from({ length: 100 }, (_, i) => ({ peer_id: i % 2 ? 'alice' : 'bob', content: `note ${i}: I live in Lyon` }));
    const r = await s.http.post(`${W}/sessions/s1/messages`, { messages });
    assert.equal(r.status, 201, r.text);
    const ids: string[] = r.body.map((m: any) => m.id);
    // 100 representation units (each sender observes itself), short summaries at 20, 40 … 100, a long one at 60.
    const want = { total_work_units: 106, completed_work_units: 0, in_progress_work_units: 0, pending_work_units: 106 };
    let st = await s.http.get(`${W}/queue/status`);
    assert.deepEqual(st.body, { ...want, sessions: { s1: { session_id: 's1', ...want } } });
    st = await s.http.get(`${W}/queue/status?observer_id=alice&sender_id=alice`);
    assert.equal(st.body.pending_work_units, 50);

    const st2 = await openMemoryStorage(s.server.cfg);
    try {
      const db = st2.db;
      const pg = st2.dialect.kind === 'postgres';
      const jobsOf = async (task: string) => {
        const q = pg
          ? sql<{ payload: any }>`select j.payload from ${sql.raw(`"${s.server.cfg.pgSchema}_worker"`)}._private_jobs j join ${sql.raw(`"${s.server.cfg.pgSchema}_worker"`)}._private_tasks t on t.id = j.task_id where t.identifier = ${task} order by j.id`
          : sql<{ payload: any }>`select payload from jobs where task = ${task} order by id`;
        return (await q.execute(db)).rows.map((x) => (typeof x.payload === 'string' ? JSON.parse(x.payload) : x.payload));
      };
      const [payload] = (await jobsOf(INGEST_TASK)).filter((p) => p.workspace === w);
      assert.ok(payload, 'one ingest job');
      assert.deepEqual(payload.ids, ids);
      const vectors = () => db.selectFrom('v3_vectors').select('id').where('workspace', '=', w).execute();
      assert.equal((await vectors()).length, 0);

      const queue = await createQueue(st2, { tasks: {} });
      const ctx = { storage: st2, queue, search: { embedder: new LocalEmbeddingProvider() } } as any;
      await ingest(payload, ctx);
      await ingest(payload, ctx);
      assert.equal((await vectors()).length, 100);
      const work = await db.selectFrom('v3_work').select(['task', 'status', 'units', 'observer', 'sender']).where('workspace', '=', w).execute();
      assert.equal(work.length, 106);
      assert.ok(work.every((u: any) => u.status === 'pending' && Number(u.units) === 1));
      const derive = (await jobsOf('memory_v3_derive')).filter((p) => p.workspace === w);
      assert.deepEqual(derive.filter((p) => p.observer === 'alice').map((p) => p.message_id), ids.filter((_, i) => i % 2 === 1), 'alice\'s units in message order, once');
      assert.equal(derive.length, 100);
      assert.equal((await jobsOf('memory_v3_summary')).filter((p) => p.workspace === w).length, 6);
      st = await s.http.get(`${W}/queue/status`);
      assert.equal(st.body.pending_work_units, 106);
    } finally {
      await st2.close();
    }

    // A worker runs everything: the ingest job a third time (nothing left to do), then every unit.
    await embedQueued(s.server.cfg, 90_000);
    st = await s.http.get(`${W}/queue/status`);
    assert.deepEqual([st.body.total_work_units, st.body.completed_work_units, st.body.pending_work_units], [106, 106, 0]);
    const hit = await s.http.post(`${W}/search`, { query: 'note 42 Lyon', limit: 1 });
    assert.equal(hit.body[0]?.id, ids[42]);

    // Vectors stored before the int8 copies existed (q8 null): a fresh index quantizes the float vectors the same way.
    const queries = ['note 42 Lyon', 'live', 'note 7'];
    const answers = [];
    for (const query of queries) answers.push((await s.http.post(`${W}/search`, { query, limit: 10 })).body.map((m: any) => m.id));
    const st3 = await openMemoryStorage(s.server.cfg);
    // The stored int8 copy is the index's own quantization of the stored float vector.
    const stored = await st3.db.selectFrom('v3_vectors').select(['vector', 'q8']).where('workspace', '=', w).execute();
    assert.equal(stored.length, 100);
    for (const v of stored as any[]) assert.deepEqual(Buffer.from(v.q8), Buffer.from(quantize(bufferToVector(v.vector))));
    await st3.db.updateTable('v3_vectors').set({ q8: null }).where('workspace', '=', w).execute();
    await st3.close();
    const fresh: any = await buildApp({ ...s.server.cfg, runWorkers: false } as any);
    try {
      const url = await fresh.listen({ port: 0, host: '127.0.0.1' });
      for (let i = 0; i < queries.length; i++) {
        const r2 = await client(url).post(`${W}/search`, { query: queries[i], limit: 10 });
        assert.deepEqual(r2.body.map((m: any) => m.id), answers[i], queries[i]);
      }
    } finally {
      await fresh.close();
    }
  });
});
