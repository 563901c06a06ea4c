import { it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStorage, sql } from '@svc/storage';

it('sqliteStatementCache reuses statements and survives schema changes and eviction', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stmt-cache-'));
  const st = await openStorage({ dataDir: dir, sqliteFile: 'x.sqlite', pgSchema: 'x', sqliteStatementCache: 2 });
  try {
    await sql`create table t (id integer primary key, v text)`.execute(st.db);
    for (let i = 0; i < 5; i++) await st.db.insertInto('t').values({ v: `v${i}` }).execute();
    const q = () => st.db.selectFrom('t').selectAll().orderBy('id').execute();
    assert.equal((await q()).length, 5);
    await sql`alter table t add column w text`.execute(st.db);
    assert.deepEqual(Object.keys((await q())[0]!), ['id', 'v', 'w']);
    // More distinct statements than the cache holds.
    for (let i = 0; i < 5; i++) assert.equal((await st.db.selectFrom('t').select('v').where('id', '=', i + 1).where(sql.raw<boolean>(`${i} = ${i}`)).execute())[0]!.v, `v${i}`);
    assert.equal((await q()).length, 5);
    await st.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('t').where('id', '=', 1).execute();
    });
    assert.equal((await q()).length, 4);
  } finally {
    await st.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
