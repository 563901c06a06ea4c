import { it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { fixture, MISSING, ok, useServer } from './helpers.ts';

const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const COLL_NF = { detail: 'collection not found or does not belong to user' };
const DOC_NF = { detail: 'document not found or does not belong to user' };
const EXISTS = { detail: 'Error invalid collection configuration - name may already exist' };
const RESERVED = { detail: 'error invalid collection configuration - honcho is a reserved name' };

forEachStorage('memory collections and documents', (storage) => {
  const s = useServer(storage);

  it('creates, lists, gets by name, renames and deletes collections', async () => {
    const { C } = await fixture(s.http);
    const c1 = await ok(s.http.post(C, { name: 'one', metadata: { k: 1 } }));
    assert.deepEqual(Object.keys(c1), ['id', 'name', 'user_id', 'h_metadata', 'metadata', 'created_at']);
    let r = await s.http.post(C, { name: 'one' });
    assert.deepEqual([r.status, r.body], [406, EXISTS]);
    r = await s.http.post(C, { name: 'honcho' });
    assert.deepEqual([r.status, r.body], [406, RESERVED]);
    const renamed = await ok(s.http.put(`${C}/${c1.id}`, { name: 'uno' }));
    assert.deepEqual([renamed.name, renamed.metadata], ['uno', { k: 1 }]);
    const c2 = await ok(s.http.post(C, { name: 'one' }));
    const list = await ok(s.http.get(C));
    assert.deepEqual(list.items.map((c: any) => c.name), ['uno', 'one']);
    assert.deepEqual((await ok(s.http.get(`${C}?reverse=true&filter=${q({ k: 1 })}`))).items.map((c: any) => c.id), [c1.id]);
    assert.deepEqual(await ok(s.http.get(`${C}/uno`)), renamed);
    assert.deepEqual(await ok(s.http.get(`${C}/${c1.id}`)), renamed, 'a UUID-shaped name falls back to the id');
    r = await s.http.put(`${C}/${c2.id}`, { name: 'uno' });
    assert.deepEqual([r.status, r.body], [406, EXISTS]);
    r = await s.http.put(`${C}/${c2.id}`, { name: 'honcho' });
    assert.deepEqual([r.status, r.body], [406, RESERVED]);
    r = await s.http.put(`${C}/${MISSING}`, { name: 'x' });
    assert.deepEqual([r.status, r.body], [406, EXISTS], 'the reference answers a missing collection with the name-clash 406');
    r = await s.http.put(`${C}/${c2.id}`, { metadata: {} });
    assert.deepEqual(r.body.detail, [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: { metadata: {} } }]);
    const meta = await ok(s.http.put(`${C}/${c2.id}`, { name: 'one', metadata: { m: 2 } }));
    assert.deepEqual(meta.h_metadata, { m: 2 });

    const d = await ok(s.http.post(`${C}/${c1.id}/documents`, { content: 'doc' }));
    assert.deepEqual(await ok(s.http.delete(`${C}/${c1.id}`)), { message: 'Collection deleted successfully' });
    r = await s.http.get(`${C}/uno`);
    assert.deepEqual([r.status, r.body], [404, COLL_NF]);
    r = await s.http.get(`${C}/${c1.id}/documents/${d.id}`);
    assert.deepEqual([r.status, r.body], [404, DOC_NF], 'documents go with their collection');
    r = await s.http.delete(`${C}/${c1.id}`);
    assert.deepEqual([r.status, r.body], [404, COLL_NF]);
  });

  it('creates, lists, gets, updates and deletes documents', async () => {
    const { C } = await fixture(s.http);
    const c = await ok(s.http.post(C, { name: 'docs' }));
    const D = `${C}/${c.id}/documents`;
    const docs = [];
    for (let i = 0; i < 5; i++) docs.push(await ok(s.http.post(D, { content: `doc ${i}`, metadata: { i, tags: i % 2 ? ['odd', 'x'] : ['even'] } })));
    assert.deepEqual(Object.keys(docs[0]), ['content', 'id', 'h_metadata', 'metadata', 'created_at', 'collection_id']);
    assert.equal(docs[0].collection_id, c.id);
    const page = await ok(s.http.get(`${D}?size=2&page=2`));
    assert.deepEqual(page.items.map((d: any) => d.content), ['doc 2', 'doc 3']);
    assert.deepEqual([page.total, page.pages], [5, 3]);
    const odd = await ok(s.http.get(`${D}?filter=${q({ tags: ['x'] })}&reverse=true`));
    assert.deepEqual(odd.items.map((d: any) => d.content), ['doc 3', 'doc 1']);
    assert.deepEqual(await ok(s.http.get(`${D}/${docs[2].id}`)), docs[2]);

    const m = await ok(s.http.put(`${D}/${docs[2].id}`, { metadata: { new: true } }));
    assert.deepEqual([m.content, m.metadata, m.created_at], ['doc 2', { new: true }, docs[2].created_at]);
    await new Promise((res) => setTimeout(res, 5));
    const ct = await ok(s.http.put(`${D}/${docs[2].id}`, { content: 'changed' }));
    assert.deepEqual([ct.content, ct.metadata], ['changed', { new: true }]);
    assert.ok(ct.created_at > docs[2].created_at, 'new content resets created_at, as in the reference');
    let r = await s.http.put(`${D}/${docs[2].id}`, {});
    assert.deepEqual([r.status, r.body], [400, { detail: 'content and metadata cannot both be None' }]);
    r = await s.http.put(`${D}/${MISSING}`, { content: 'x' });
    assert.deepEqual([r.status, r.body], [404, DOC_NF]);
    assert.deepEqual(await ok(s.http.delete(`${D}/${docs[0].id}`)), { message: 'Document deleted successfully' });
    r = await s.http.delete(`${D}/${docs[0].id}`);
    assert.deepEqual([r.status, r.body], [404, DOC_NF]);
    r = await s.http.get(`${D}/${docs[0].id}`);
    assert.deepEqual([r.status, r.body], [404, DOC_NF]);
    assert.equal((await ok(s.http.get(D))).total, 4);
    r = await s.http.get(`${D}?filter=nope`);
    assert.equal(r.status, 422);
  });

  it('scopes collections and documents through app and user', async () => {
    const one = await fixture(s.http);
    const two = await fixture(s.http);
    const c = await ok(s.http.post(one.C, { name: 'private' }));
    const d = await ok(s.http.post(`${one.C}/${c.id}/documents`, { content: 'secret' }));
    const crossUser = `${two.C}/${c.id}`;
    const crossApp = `/apps/${two.app.id}/users/${one.user.id}/collections`;
    let r = await s.http.get(`${two.C}/private`);
    assert.deepEqual([r.status, r.body], [404, COLL_NF]);
    r = await s.http.get(`${crossApp}/private`);
    assert.deepEqual([r.status, r.body], [404, COLL_NF]);
    assert.equal((await ok(s.http.get(crossApp))).total, 0);
    assert.deepEqual(await ok(s.http.get(`${crossUser}/documents`)), { items: [], total: 0, page: 1, size: 50, pages: 0 });
    r = await s.http.post(`${crossUser}/documents`, { content: 'x' });
    assert.deepEqual([r.status, r.body], [404, COLL_NF]);
    for (const [m, body] of [['GET', undefined], ['PUT', { content: 'x' }], ['DELETE', undefined]] as const) {
      r = await s.http.request(m, `${crossUser}/documents/${d.id}`, body);
      assert.deepEqual([r.status, r.body], [404, DOC_NF], m);
    }
    r = await s.http.delete(crossUser);
    assert.deepEqual([r.status, r.body], [404, COLL_NF]);
    r = await s.http.post(`/apps/${two.app.id}/users/${one.user.id}/collections`, { name: 'x' });
    assert.deepEqual([r.status, r.body], [406, EXISTS], 'a missing user is the reference 406');
    assert.deepEqual(await ok(s.http.get(`${one.C}/${c.id}/documents/${d.id}`)), d);
  });
});
