// The delivery cycle hands PostgreSQL its arrays as literals it writes itself (pgArray): every value must read back
// as the pg driver's own serialisation of the same JS array reads back, whatever its characters.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { postgresAvailable, TEST_DATABASE_URL } from '@svc/testkit';
import { pgArray } from '../../src/events/deliver.ts';

const available = await postgresAvailable();

describe('pgArray [postgres]', { skip: !available && 'PostgreSQL is not available' }, () => {
  let c: pg.Client;
  before(async () => {
    c = new pg.Client(TEST_DATABASE_URL);
    await c.connect();
  });
  after(() => c?.end());

  it('text values read back as given, quoted only when they must be', async () => {
    const texts = ['', 'NULL', 'null', 'Null', 'nulls', 'a"b\\c', 'a b', '{x}', 'a,b', 'café ☃ \u{1F600}', 'msg_0123abcdef', '-1.5',
      'x'.repeat(70_000), '\\', '"', ' lead', "it's", '\n\t', '[["webhook-id","msg_1"]]', null];
    const r = await c.query('select $1::text[] as mine, $2::text[] as driver', [pgArray(texts), texts]);
    assert.deepEqual(r.rows[0].mine, texts);
    assert.deepEqual(r.rows[0].mine, r.rows[0].driver);
    assert.equal(pgArray(['msg_ab', '', 'NULL', null]), '{msg_ab,"","NULL",NULL}');
  });

  it('numbers, booleans and the empty array', async () => {
    const floats = [0, 1, -1, 1.5, 0.001, 1e-7, 123456789012, null];
    const r = await c.query('select $1::float8[] as f, $2::bigint[] as b, $3::bool[] as t, $4::bigint[] as e',
      [pgArray(floats), pgArray([1, 2, 3_000_000_000_000, null]), pgArray([true, false, null]), pgArray([])]);
    assert.deepEqual(r.rows[0].f, floats);
    assert.deepEqual(r.rows[0].b, ['1', '2', '3000000000000', null]);
    assert.deepEqual(r.rows[0].t, [true, false, null]);
    assert.deepEqual(r.rows[0].e, []);
  });
});
