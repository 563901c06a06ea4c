import { it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { fixture, ok, useServer } from './helpers.ts';

// Rows and filters with their PostgreSQL `@>` answers; SQLite must give the same.
const ROWS: Array<Record<string, unknown>> = [
  {},
  { a: 1 },
  { a: 1.0, b: 'x' },
  { a: '1' },
  { tags: ['x', 'y'], n: { k: [1, 2], deep: { z: true } } },
  { tags: ['y'], n: { k: [2] } },
  { tags: [{ id: 1, v: 'a' }, { id: 2 }] },
  { nul: null, t: false },
];
const CASES: Array<[unknown, number[]]> = [
  [{}, [0, 1, 2, 3, 4, 5, 6, 7]],
  [{ a: 1 }, [1, 2]],
  [{ a: '1' }, [3]],
  [{ a: 1, b: 'x' }, [2]],
  [{ tags: ['y'] }, [4, 5]],
  [{ tags: ['y', 'x'] }, [4]],
  [{ tags: ['y', 'y'] }, [4, 5]],
  [{ tags: [] }, [4, 5, 6]],
  [{ tags: 'y' }, []],
  [{ n: { k: [2] } }, [4, 5]],
  [{ n: { deep: {} } }, [4]],
  [{ tags: [{ id: 1 }] }, [6]],
  [{ nul: null }, [7]],
  [{ t: false }, [7]],
  [{ t: 0 }, []],
  [[], []],
  ['x', []],
  [5, []],
];

forEachStorage('memory filter = PostgreSQL containment', (storage) => {
  const s = useServer(storage);

  it('gives the @> answers on messages (raw SQLite path) and documents (query builder)', async () => {
    const f = await fixture(s.http);
    const M = `${f.S}/${f.session.id}/messages`;
    const coll = await ok(s.http.post(f.C, { name: 'filters' }));
    const D = `${f.C}/${coll.id}/documents`;
    for (let i = 0; i < ROWS.length; i++) {
      await ok(s.http.post(M, { content: `m${i}`, is_user: false, metadata: ROWS[i] }));
      await ok(s.http.post(D, { content: `d${i}`, metadata: ROWS[i] }));
    }
    for (const [filter, want] of CASES) {
      const q = encodeURIComponent(JSON.stringify(filter));
      const msgs = await ok(s.http.get(`${M}?filter=${q}`));
      assert.deepEqual(msgs.items.map((m: any) => Number(m.content.slice(1))), want, `messages ${JSON.stringify(filter)}`);
      const docs = await ok(s.http.get(`${D}?filter=${q}&reverse=true`));
      assert.deepEqual(docs.items.map((d: any) => Number(d.content.slice(1))), [...want].reverse(), `documents ${JSON.stringify(filter)}`);
      assert.equal(docs.total, want.length);
    }
  });
});

forEachStorage('memory filter with text no storage can hold', (storage) => {
  const s = useServer(storage);

  it('answers 422 naming the filter for an escaped NUL or lone surrogate, on every list and /query', async () => {
    const f = await fixture(s.http);
    const m = await ok(s.http.post(`${f.S}/${f.session.id}/messages`, { content: 'hi', is_user: false }));
    await ok(s.http.post(`${f.S}/${f.session.id}/metamessages`, { message_id: m.id, metamessage_type: 't', content: 'c' }));
    const c = await ok(s.http.post(f.C, { name: 'c' }));
    await ok(s.http.post(`${f.C}/${c.id}/documents`, { content: 'tea', metadata: { a: 'x' } }));
    const lists = [
      `/apps/${f.app.id}/users`,
      f.S,
      `${f.S}/${f.session.id}/messages`,
      `${f.S}/${f.session.id}/metamessages`,
      f.C,
      `${f.C}/${c.id}/documents`,
      `${f.C}/${c.id}/query?query=tea`,
    ];
    const filters = ['{"a\\u0000":1}', '{"a":"x\\u0000"}', '{"\\ud800":1}', '{"a":"\\udc00"}', '{"a":{"b":["\\ud800"]}}', '["\\u0000"]'];
    for (const url of lists) {
      for (const filter of filters) {
        const sep = url.includes('?') ? '&' : '?';
        const r = await s.http.get(`${url}${sep}filter=${encodeURIComponent(filter)}`);
        assert.equal(r.status, 422, `${url} ${filter}: ${r.text}`);
        assert.deepEqual(r.body.detail[0].loc, ['query', 'filter']);
        assert.equal(r.body.detail[0].type, 'value_error');
        assert.equal(r.body.detail[0].input, filter);
      }
      // The same filter without the bad character is fine.
      const sep = url.includes('?') ? '&' : '?';
      assert.equal((await s.http.get(`${url}${sep}filter=${encodeURIComponent('{"a":"x"}')}`)).status, 200, url);
    }
  });
});
