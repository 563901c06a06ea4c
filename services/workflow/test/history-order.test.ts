import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { dropPgSchema, migrate, openStorage, type Storage } from '@svc/storage';
import { forEachStorage, TEST_DATABASE_URL } from '@svc/testkit';
import { workflowMigrations } from '../src/db/index.ts';
import { listHistory } from '../src/domain/prompts.ts';

/**
 * History is in completion order, as the reference's (a dict filled as
 * prompts end). End times are milliseconds, and on a fast machine two short
 * prompts end in the same one: they are then in the order they ran, their
 * queue numbers' (front-queued prompts have smaller ones), not in their
 * random ids' order.
 */
forEachStorage('workflow history: prompts that ended in the same millisecond', (kind) => {
  let storage: Storage;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wf-history-order-'));
  const schema = `wf_history_order_${process.pid}`;

  before(async () => {
    storage = await openStorage({ databaseUrl: kind === 'postgres' ? TEST_DATABASE_URL : undefined, dataDir: dir, sqliteFile: 'wf.sqlite', pgSchema: schema });
    await migrate(storage.db, storage.dialect, workflowMigrations);
  });
  after(async () => {
    await storage.close();
    if (kind === 'postgres') await dropPgSchema(TEST_DATABASE_URL, schema);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const row = (id: string, number: number, endTime: number) => ({
    id,
    owner: '',
    number,
    status: 'completed',
    prompt: '{}',
    extra_data: '{}',
    outputs_to_execute: '[]',
    create_time: 1_000,
    start_time: 1_000,
    end_time: endTime,
    outputs: '{}',
    meta: '{}',
    status_messages: '[]',
  });

  test('are listed in queue order, newest page and offset page alike', async () => {
    // Ids sort against the queue order: an id tie-break would reverse each pair.
    await storage.db
      .insertInto('prompts')
      .values([row('zz-first', 1, 5_000), row('aa-second', 2, 5_000), row('mm-front', -1, 6_000), row('bb-after-front', 3, 6_000), row('00-last', 4, 7_000)])
      .execute();
    const ids = (rs: { id: string }[]) => rs.map((r) => r.id);
    assert.deepEqual(ids(await listHistory(storage.db, { limit: 10 })), ['zz-first', 'aa-second', 'mm-front', 'bb-after-front', '00-last']);
    assert.deepEqual(ids(await listHistory(storage.db, { limit: 1 })), ['00-last']);
    assert.deepEqual(ids(await listHistory(storage.db, { limit: 3 })), ['mm-front', 'bb-after-front', '00-last']);
    assert.deepEqual(ids(await listHistory(storage.db, { limit: 2, offset: 1 })), ['aa-second', 'mm-front']);
  });
});
