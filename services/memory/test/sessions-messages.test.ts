import { it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { fixture, ISO, MISSING, ok, useServer } from './helpers.ts';

const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));

forEachStorage('memory sessions, messages and metamessages', (storage) => {
  const s = useServer(storage);

  it('creates, lists, filters, updates and soft-deletes sessions', async () => {
    const { S } = await fixture(s.http);
    const s1 = await ok(s.http.get(`${S}?size=1`)); // fixture session
    const first = s1.items[0];
    assert.deepEqual(Object.keys(first), ['id', 'is_active', 'user_id', 'location_id', 'h_metadata', 'metadata', 'created_at']);
    assert.deepEqual([first.is_active, first.location_id, first.metadata], [true, 'default', {}]);
    const a = await ok(s.http.post(S, { location_id: 'paris', metadata: { foo: 'bar' } }));
    const b = await ok(s.http.post(S, { location_id: 'paris', metadata: { foo: 'bar', n: 1 } }));
    const all = await ok(s.http.get(S));
    assert.deepEqual(all.items.map((x: any) => x.id), [first.id, a.id, b.id], 'creation order');
    assert.equal((await ok(s.http.get(`${S}?filter=${q({ foo: 'bar' })}`))).total, 2);
    assert.equal((await ok(s.http.get(`${S}?filter=${q({})}`))).total, 3);
    assert.equal((await ok(s.http.get(`${S}?filter=null`))).total, 3);
    assert.equal((await ok(s.http.get(`${S}?filter=${q([])}`))).total, 0, 'a non-object filter matches no object rows');
    assert.equal((await ok(s.http.get(`${S}?filter=${q({ n: 1.0 })}`))).total, 1);
    assert.deepEqual((await ok(s.http.get(`${S}?location_id=paris&reverse=true`))).items.map((x: any) => x.id), [b.id, a.id]);

    const upd = await ok(s.http.put(`${S}/${a.id}`, { metadata: { x: [1] } }));
    assert.deepEqual([upd.metadata, upd.h_metadata, upd.id], [{ x: [1] }, { x: [1] }, a.id]);
    assert.deepEqual((await ok(s.http.put(`${S}/${a.id}`, { metadata: {} }))).metadata, {});
    let r = await s.http.put(`${S}/${a.id}`, { metadata: null });
    assert.deepEqual([r.status, r.body], [400, { detail: 'Session metadata cannot be empty' }]);
    r = await s.http.put(`${S}/${a.id}`, {});
    assert.deepEqual([r.status, r.body], [400, { detail: 'Session metadata cannot be empty' }]);

    assert.deepEqual(await ok(s.http.delete(`${S}/${a.id}`)), { message: 'Session deleted successfully' });
    assert.deepEqual(await ok(s.http.delete(`${S}/${a.id}`)), { message: 'Session deleted successfully' }, 'a second delete is fine');
    const gone = await ok(s.http.get(`${S}/${a.id}`));
    assert.equal(gone.is_active, false, 'soft delete keeps the session readable');
    assert.equal((await ok(s.http.get(S))).total, 3, 'is_active absent returns all');
    assert.equal((await ok(s.http.get(`${S}?is_active=false`))).total, 3, 'is_active=false returns all');
    assert.deepEqual((await ok(s.http.get(`${S}?is_active=true`))).items.map((x: any) => x.id), [first.id, b.id]);
    assert.deepEqual((await ok(s.http.get(`${S}?is_active=on&location_id=paris`))).items.map((x: any) => x.id), [b.id]);
  });

  it('pages past the end and bounds page/size', async () => {
    const { S } = await fixture(s.http);
    for (let i = 0; i < 9; i++) await ok(s.http.post(S, { location_id: `l${i}` }));
    const p = await ok(s.http.get(`${S}?size=2&page=5`));
    assert.deepEqual([p.items.length, p.total, p.page, p.size, p.pages], [2, 10, 5, 2, 5]);
    const out = await ok(s.http.get(`${S}?page=2&size=50`));
    assert.deepEqual(out, { items: [], total: 10, page: 2, size: 50, pages: 1 });
    const huge = await ok(s.http.get(`${S}?page=99999999999999999999&size=100`));
    assert.deepEqual(huge.items, []);
    let r = await s.http.get(`${S}?page=0`);
    assert.deepEqual(r.body.detail, [
      { type: 'greater_than_equal', loc: ['query', 'page'], msg: 'Input should be greater than or equal to 1', input: '0', ctx: { ge: 1 } },
    ]);
    r = await s.http.get(`${S}?is_active=maybe&size=101&page=x`);
    assert.deepEqual(r.body.detail.map((d: any) => d.loc[1]), ['page', 'size', 'is_active'], 'paging (a dependency in FastAPI) is validated first');
    r = await s.http.get(`${S}?size=101&page=x`);
    assert.deepEqual(r.body.detail, [
      { type: 'int_parsing', loc: ['query', 'page'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'x' },
      { type: 'less_than_equal', loc: ['query', 'size'], msg: 'Input should be less than or equal to 100', input: '101', ctx: { le: 100 } },
    ]);
    for (const bad of ['1e3', '0x10', '1e309', '1.5']) {
      r = await s.http.get(`${S}?page=${bad}`);
      assert.deepEqual(r.body.detail, [
        { type: 'int_parsing', loc: ['query', 'page'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: bad },
      ]);
    }
    r = await s.http.get(`${S}?size=0`);
    assert.equal(r.body.detail[0].type, 'greater_than_equal');
  });

  it('scopes sessions through app and user', async () => {
    const one = await fixture(s.http);
    const two = await fixture(s.http);
    const cross = `/apps/${two.app.id}/users/${one.user.id}/sessions/${one.session.id}`;
    let r = await s.http.get(cross);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.get(`${two.S}/${one.session.id}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.delete(`${two.S}/${one.session.id}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.put(`${two.S}/${one.session.id}`, { metadata: {} });
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    assert.equal((await ok(s.http.get(`/apps/${two.app.id}/users/${one.user.id}/sessions`))).total, 0);
    r = await s.http.post(`/apps/${two.app.id}/users/${one.user.id}/sessions`, { location_id: 'x' });
    assert.deepEqual([r.status, r.body], [404, { detail: 'User not found' }]);
    r = await s.http.post(`/apps/${one.app.id}/users/${one.user.id}/sessions`, {});
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['body', 'location_id'], msg: 'Field required', input: {} }]);
  });

  it('creates, lists, gets and updates messages on both path forms', async () => {
    const { S, session, U } = await fixture(s.http);
    const M = `${S}/${session.id}/messages`;
    const msgs = [];
    for (let i = 0; i < 20; i++) msgs.push(await ok(s.http.post(M, { content: `m${i}`, is_user: i % 2 === 0 ? 'yes' : 0, metadata: { i, even: i % 2 === 0 } })));
    assert.deepEqual(Object.keys(msgs[0]), ['content', 'is_user', 'session_id', 'id', 'h_metadata', 'metadata', 'created_at']);
    assert.deepEqual([msgs[0].is_user, msgs[1].is_user, msgs[0].session_id], [true, false, session.id]);
    assert.match(msgs[0].created_at, ISO);
    const p3 = await ok(s.http.get(`${M}?size=7&page=3`));
    assert.deepEqual(p3.items.map((m: any) => m.content), ['m14', 'm15', 'm16', 'm17', 'm18', 'm19']);
    assert.deepEqual([p3.total, p3.pages], [20, 3]);
    // A listed message is the created one, field for field (created_at text included: the PostgreSQL list formats it in SQL).
    assert.deepEqual(p3.items, msgs.slice(14));
    assert.deepEqual((await ok(s.http.get(`${M}?size=2&page=2&reverse=true`))).items, [msgs[17], msgs[16]]);
    assert.deepEqual((await ok(s.http.get(`${M}?filter=${q({ i: 5 })}`))).items, [msgs[5]]);
    const rev = await ok(s.http.get(`${M}?reverse=true&size=3`));
    assert.deepEqual(rev.items.map((m: any) => m.content), ['m19', 'm18', 'm17']);
    const even = await ok(s.http.get(`${M}?filter=${q({ even: true })}&size=3&page=2&reverse=1`));
    assert.deepEqual(even.items.map((m: any) => m.content), ['m12', 'm10', 'm8']);
    assert.equal(even.total, 10);

    const noSlash = `${U}sessions/${session.id}/messages/${msgs[3].id}`;
    assert.deepEqual(await ok(s.http.get(noSlash)), msgs[3]);
    assert.deepEqual(await ok(s.http.get(`${M}/${msgs[3].id}`)), msgs[3]);
    const upd = await ok(s.http.put(noSlash, { metadata: { edited: 1 } }));
    assert.deepEqual([upd.metadata, upd.content], [{ edited: 1 }, 'm3']);
    const upd2 = await ok(s.http.put(`${M}/${msgs[3].id}`, { metadata: { edited: 2 } }));
    assert.deepEqual(upd2.h_metadata, { edited: 2 });
    let r = await s.http.put(`${M}/${msgs[3].id}`, { metadata: null });
    assert.deepEqual([r.status, r.body], [400, { detail: 'Message metadata cannot be empty' }]);
    r = await s.http.get(`${M}/${MISSING}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }], 'a missing message says Session not found, as the reference');
    r = await s.http.put(`${U}sessions/${session.id}/messages/${MISSING}`, { metadata: {} });
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);

    const batch = await ok(s.http.post(`${M}/batch`, { messages: [{ content: 'b1', is_user: 'yes' }, { content: 'b2', is_user: 0, metadata: { b: 2 } }] }));
    assert.deepEqual(batch.map((m: any) => [m.content, m.is_user, m.metadata]), [['b1', true, {}], ['b2', false, { b: 2 }]]);
    assert.deepEqual((await ok(s.http.get(`${M}?reverse=true&size=2`))).items.map((m: any) => m.id), [batch[1].id, batch[0].id]);
    r = await s.http.post(`${M}/batch`, { messages: [] });
    assert.equal(r.body.detail[0].type, 'too_short');
    r = await s.http.post(`${M}/batch`, { messages: [{ content: 'x', is_user: 'maybe' }] });
    assert.deepEqual(r.body.detail[0].loc, ['body', 'messages', 0, 'is_user']);

    // Messages in a soft-deleted session still work (the server never blocked them).
    await ok(s.http.delete(`${S}/${session.id}`));
    await ok(s.http.post(M, { content: 'after', is_user: false }));
  });

  it('keeps every concurrent message (user messages enqueue derivation in their transaction)', async () => {
    const { S, session } = await fixture(s.http);
    const M = `${S}/${session.id}/messages`;
    const sent = await Promise.all(
      Array.from({ length: 120 }, (_, i) => ok(s.http.post(M, { content: `I like item ${i}`, is_user: i % 3 === 0, metadata: { i } }))),
    );
    const page1 = await ok(s.http.get(`${M}?size=100`));
    const page2 = await ok(s.http.get(`${M}?size=100&page=2`));
    const listed = [...page1.items, ...page2.items];
    assert.equal(page1.total, 120);
    assert.deepEqual(new Set(listed.map((m: any) => m.id)), new Set(sent.map((m) => m.id)));
    // Compare instants, not text: a whole-second time is written without a fraction, as pydantic does.
    const keys = listed.map((m: any) => Date.parse(m.created_at));
    assert.deepEqual(keys, [...keys].sort((a, b) => a - b), 'listed in created_at order');
  });

  it('answers the reference errors for messages and keeps sessions apart', async () => {
    const one = await fixture(s.http);
    const two = await fixture(s.http);
    const m = await ok(s.http.post(`${one.S}/${one.session.id}/messages`, { content: 'secret', is_user: true }));
    let r = await s.http.post(`${two.S}/${one.session.id}/messages`, { content: 'x', is_user: true });
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.get(`${two.S}/${one.session.id}/messages`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.get(`${two.S}/${one.session.id}/messages/${m.id}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.get(`${two.S}/${two.session.id}/messages/${m.id}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }], 'a message of another session is not found');
    r = await s.http.get(`${one.S}/${one.session.id}/messages?filter=%7Bbad`);
    assert.equal(r.status, 422);
    assert.equal(r.body.detail[0].type, 'json_invalid');
    assert.deepEqual(r.body.detail[0].loc, ['query', 'filter']);
    assert.equal(r.body.detail[0].input, '{bad');
    r = await s.http.post(`${one.S}/${one.session.id}/messages`, { content: 5, is_user: 'maybe', metadata: 'x' });
    assert.deepEqual(r.body.detail, [
      { type: 'string_type', loc: ['body', 'content'], msg: 'Input should be a valid string', input: 5 },
      { type: 'bool_parsing', loc: ['body', 'is_user'], msg: 'Input should be a valid boolean, unable to interpret input', input: 'maybe' },
      { type: 'dict_type', loc: ['body', 'metadata'], msg: 'Input should be a valid dictionary', input: 'x' },
    ]);
    r = await s.http.post(`${one.S}/${one.session.id}/messages`, { content: 'x'.repeat(65536), is_user: true });
    assert.equal(r.status, 422);
    assert.equal(r.body.detail[0].type, 'string_too_long');
    r = await s.http.post(`${one.S}/${one.session.id}/messages`, { content: 'nul\u0000', is_user: true });
    assert.equal(r.status, 422);
    assert.deepEqual(r.body.detail[0].loc, ['body', 'content']);
  });

  it('creates, lists, gets and updates metamessages', async () => {
    const { S, session, U } = await fixture(s.http);
    const M = `${S}/${session.id}/messages`;
    const MM = `${S}/${session.id}/metamessages`;
    const m1 = await ok(s.http.post(M, { content: 'a', is_user: true }));
    const m2 = await ok(s.http.post(M, { content: 'b', is_user: false }));
    const mms = [];
    for (let i = 0; i < 20; i++) {
      mms.push(await ok(s.http.post(MM, { message_id: i < 12 ? m1.id : m2.id, metamessage_type: i % 3 === 0 ? 'thought' : 'note', content: `mm${i}`, metadata: { i } })));
    }
    assert.deepEqual(Object.keys(mms[0]), ['metamessage_type', 'content', 'id', 'message_id', 'h_metadata', 'metadata', 'created_at']);
    const p3 = await ok(s.http.get(`${MM}?size=7&page=3`));
    assert.deepEqual([p3.items.length, p3.total, p3.pages], [6, 20, 3]);
    const byMsg = await ok(s.http.get(`${MM}?message_id=${m2.id}`));
    assert.equal(byMsg.total, 8);
    const byType = await ok(s.http.get(`${MM}?metamessage_type=thought&message_id=${m1.id}&reverse=true`));
    assert.deepEqual(byType.items.map((x: any) => x.content), ['mm9', 'mm6', 'mm3', 'mm0']);
    assert.equal((await ok(s.http.get(`${MM}?filter=${q({ i: 5 })}`))).items[0].content, 'mm5');

    assert.deepEqual(await ok(s.http.get(`${MM}/${mms[0].id}?message_id=${m1.id}`)), mms[0]);
    let r = await s.http.get(`${MM}/${mms[0].id}?message_id=${m2.id}`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.get(`${MM}/${mms[0].id}`);
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['query', 'message_id'], msg: 'Field required', input: null }]);

    const upd = await ok(s.http.put(`${U}sessions/${session.id}/metamessages/${mms[0].id}`, { message_id: m1.id, metamessage_type: 'renamed', metadata: { u: 1 } }));
    assert.deepEqual([upd.metamessage_type, upd.metadata, upd.content], ['renamed', { u: 1 }, 'mm0']);
    const upd2 = await ok(s.http.put(`${MM}/${mms[0].id}`, { message_id: m1.id, metadata: {} }));
    assert.deepEqual([upd2.metamessage_type, upd2.metadata], ['renamed', {}]);
    r = await s.http.put(`${MM}/${mms[0].id}`, { message_id: m1.id, metamessage_type: 'x' });
    assert.deepEqual([r.status, r.body], [400, { detail: 'Metamessage metadata cannot be empty' }]);
    r = await s.http.put(`${MM}/${mms[0].id}`, { message_id: m2.id, metadata: {} });
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.put(`${MM}/${mms[0].id}`, { metadata: {} });
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['body', 'message_id'], msg: 'Field required', input: { metadata: {} } }]);

    // The message must belong to the session.
    const other = await fixture(s.http);
    const foreign = await ok(s.http.post(`${other.S}/${other.session.id}/messages`, { content: 'z', is_user: false }));
    r = await s.http.post(MM, { message_id: foreign.id, metamessage_type: 't', content: 'c' });
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
    r = await s.http.post(MM, { message_id: 'nope', metamessage_type: 't', content: 'c' });
    assert.equal(r.body.detail[0].type, 'uuid_parsing');
    r = await s.http.get(`${other.S}/${session.id}/metamessages`);
    assert.deepEqual([r.status, r.body], [404, { detail: 'Session not found' }]);
  });
});
