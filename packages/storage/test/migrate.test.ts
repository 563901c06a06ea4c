import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { dropPgSchema, migrate, openStorage, type Migration, type Storage } from '@svc/storage';
import { forEachStorage, TEST_DATABASE_URL, type StorageKind } from '@svc/testkit';

async function open(storage: StorageKind): Promise<{ s: Storage; done(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrate-'));
  const schema = `migrate_${randomBytes(5).toString('hex')}`;
  const s = await openStorage({ databaseUrl: storage === 'postgres' ? TEST_DATABASE_URL : undefined, dataDir: dir, sqliteFile: 'm.sqlite', pgSchema: schema });
  return {
    s,
    async done() {
      await s.close();
      fs.rmSync(dir, { recursive: true, force: true });
      if (storage === 'postgres') await dropPgSchema(TEST_DATABASE_URL, schema);
    },
  };
}

const names = async (s: Storage) => (await sql<{ name: string }>`select name from schema_migrations order by name`.execute(s.db)).rows.map((r) => r.name);

// PostgreSQL sends a migration's schema statements together (one round trip); what a migration reads and which
// migrations are applied when one fails must not change.
forEachStorage('migrate', (storage) => {
  it('runs schema statements in order, answers reads in between with what they created, and records each migration', async () => {
    const { s, done } = await open(storage);
    try {
      const seen: unknown[] = [];
      const ms: Migration[] = [
        { name: '001_a', up: async (db) => void (await sql`create table a (id integer primary key, v text not null)`.execute(db)) },
        {
          name: '002_b',
          async up(db) {
            await sql`create table b (id integer primary key)`.execute(db);
            await sql`alter table a add column w integer`.execute(db);
            await db.insertInto('a').values({ id: 1, v: 'x', w: 7 }).execute();
            seen.push(...(await db.selectFrom('a').select(['v', 'w']).execute()));
            await sql`create index a_w on a (w)`.execute(db);
          },
        },
      ];
      assert.deepEqual(await migrate(s.db, s.dialect, ms), ['001_a', '002_b']);
      assert.deepEqual(seen, [{ v: 'x', w: 7 }]);
      assert.deepEqual(await names(s), ['001_a', '002_b']);
      assert.deepEqual(await migrate(s.db, s.dialect, ms), [], 'nothing pending the second time');
      await s.db.insertInto('b').values({ id: 1 }).execute();
    } finally {
      await done();
    }
  });

  it('a failing schema statement fails its migration only: earlier ones stay applied, later ones apply on the next start', async () => {
    const { s, done } = await open(storage);
    try {
      const ms: Migration[] = [
        { name: '001_ok', up: async (db) => void (await sql`create table ok1 (id integer primary key)`.execute(db)) },
        {
          name: '002_bad',
          async up(db) {
            await sql`create table half (id integer primary key)`.execute(db);
            await sql`create index bad on no_such_table (id)`.execute(db);
          },
        },
        { name: '003_later', up: async (db) => void (await sql`create table later (id integer primary key)`.execute(db)) },
      ];
      await assert.rejects(migrate(s.db, s.dialect, ms), /no_such_table/);
      assert.deepEqual(await names(s), ['001_ok']);
      const tables = async () =>
        storage === 'postgres'
          ? (await sql<{ t: string }>`select table_name as t from information_schema.tables where table_schema = current_schema() order by 1`.execute(s.db)).rows.map((r) => r.t)
          : (await sql<{ t: string }>`select name as t from sqlite_master where type = 'table' order by 1`.execute(s.db)).rows.map((r) => r.t);
      assert.deepEqual((await tables()).filter((t) => t !== 'schema_migrations'), ['ok1'], 'the failed migration left nothing');
      // The connection is usable and unlocked: the fixed list applies the rest.
      ms[1] = { name: '002_bad', up: async (db) => void (await sql`create table half (id integer primary key)`.execute(db)) };
      assert.deepEqual(await migrate(s.db, s.dialect, ms), ['002_bad', '003_later']);
      assert.deepEqual((await tables()).filter((t) => t !== 'schema_migrations'), ['half', 'later', 'ok1']);
    } finally {
      await done();
    }
  });

  it('a migration that throws is rolled back; one that catches a failed statement inside a savepoint goes on', async () => {
    const { s, done } = await open(storage);
    try {
      const throwing: Migration[] = [
        { name: '001_ok', up: async (db) => void (await sql`create table ok1 (id integer primary key)`.execute(db)) },
        {
          name: '002_throws',
          async up(db) {
            await sql`create table gone (id integer primary key)`.execute(db);
            throw new Error('migration code failed');
          },
        },
      ];
      await assert.rejects(migrate(s.db, s.dialect, throwing), /migration code failed/);
      assert.deepEqual(await names(s), ['001_ok']);
      const caught: Migration[] = [
        {
          name: '002_savepoint',
          async up(db) {
            await sql`create table kept (id integer primary key)`.execute(db);
            await sql`savepoint sp`.execute(db);
            try {
              await sql`alter table no_such_table add column x integer`.execute(db);
              await sql`release savepoint sp`.execute(db);
            } catch {
              await sql`rollback to savepoint sp`.execute(db);
            }
            await sql`create table after_sp (id integer primary key)`.execute(db);
          },
        },
      ];
      assert.deepEqual(await migrate(s.db, s.dialect, caught), ['002_savepoint']);
      await s.db.insertInto('kept').values({ id: 1 }).execute();
      await s.db.insertInto('after_sp').values({ id: 1 }).execute();
    } finally {
      await done();
    }
  });
});
