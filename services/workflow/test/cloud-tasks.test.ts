import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, forEachStorage } from '@svc/testkit';
import { signupUser, TEST_LIMITS, type TestUser } from './cloud-helpers.ts';
import { pollPause, startWorkflow } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5e7d0d20000000049454e44ae426082', 'hex');

async function waitTask(user: TestUser, id: string): Promise<any> {
  for (let attempt = 0; ; attempt++) {
    const r = await user.http.get(`/api/tasks/${id}`);
    if (r.body.status === 'completed' || r.body.status === 'failed') return r.body;
    await pollPause(attempt);
  }
}

forEachStorage('hosted runtime: /api/tasks', (storage) => {
  let srv: Srv;
  let a: TestUser;
  let b: TestUser;
  const ids: string[] = [];
  let assetId = '';

  before(async () => {
    srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS });
    a = await signupUser(srv.url, 'tasks-a');
    b = await signupUser(srv.url, 'tasks-b');
    const form = new FormData();
    form.append('file', new Blob([PNG], { type: 'image/png' }), 'task-src.png');
    const up = await fetch(`${srv.url}/api/assets`, { method: 'POST', body: form, headers: { authorization: `Bearer ${a.token}` } });
    assetId = ((await up.json()) as any).id;
    // Three downloads and one export, in order; the export of an asset that is deleted before it runs fails.
    for (let i = 0; i < 3; i++) ids.push((await a.http.post('/api/assets/download', { assets: [{ asset_id: assetId, target_path: `tasks-${storage}/${i}.png` }] })).body.task_id);
    for (const id of ids) await waitTask(a, id);
  });
  after(async () => srv.close());

  test('TaskResponse: every required field, its payload and result', async () => {
    const r = await a.http.get(`/api/tasks/${ids[0]}`);
    assert.equal(r.status, 200);
    const t = r.body;
    for (const k of ['id', 'idempotency_key', 'task_name', 'payload', 'status', 'create_time', 'update_time']) assert.ok(k in t, k);
    assert.equal(t.task_name, 'asset_download');
    assert.equal(t.status, 'completed');
    assert.equal(t.payload.assets[0].asset_id, assetId);
    assert.equal(t.result.files[0].filename, '0.png');
    assert.ok(Date.parse(t.started_at) >= Date.parse(t.create_time));
    assert.ok(Date.parse(t.completed_at) >= Date.parse(t.started_at));
    assert.equal(t.error, undefined);
    const missing = await a.http.get('/api/tasks/00000000-0000-4000-8000-000000000000');
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { error: 'Task not found', code: 'not_found', details: {} });
    assert.equal((await a.http.get('/api/tasks/not-a-uuid')).status, 404);
    assert.equal((await b.http.get(`/api/tasks/${ids[0]}`)).status, 404);
    assert.equal((await client(srv.url).get(`/api/tasks/${ids[0]}`)).status, 401);
  });

  test('a failing operation ends failed with its error', async () => {
    const ex = await a.http.post('/api/assets/export', { asset_ids: [assetId], export_name: `gone-${storage}` });
    // Deleting the asset right away races the export: either it already ran, or it fails cleanly.
    await a.http.delete(`/api/assets/${assetId}`);
    const t = await waitTask(a, ex.body.task_id);
    assert.ok(t.status === 'completed' || (t.status === 'failed' && typeof t.error === 'string' && t.error.length > 0), JSON.stringify(t));
  });

  test('list: filters, sort order, pagination; TaskEntry shape', async () => {
    const all = await a.http.get('/api/tasks');
    assert.equal(all.status, 200);
    assert.ok(all.body.pagination.total >= 4);
    assert.deepEqual(Object.keys(all.body.pagination).sort(), ['has_more', 'limit', 'offset', 'total']);
    const e = all.body.tasks.find((x: any) => x.id === ids[0]);
    assert.deepEqual(Object.keys(e).sort(), ['completed_at', 'create_time', 'id', 'started_at', 'status', 'task_name']);
    const asc = await a.http.get('/api/tasks?sort_order=asc&task_name=asset_download');
    assert.deepEqual(asc.body.tasks.map((x: any) => x.id), ids);
    const desc = await a.http.get('/api/tasks?task_name=asset_download');
    assert.deepEqual(desc.body.tasks.map((x: any) => x.id), [...ids].reverse());
    const page = await a.http.get('/api/tasks?task_name=asset_download&sort_order=asc&limit=2&offset=1');
    assert.deepEqual(page.body.tasks.map((x: any) => x.id), ids.slice(1, 3));
    assert.deepEqual(page.body.pagination, { offset: 1, limit: 2, total: 3, has_more: false });
    const first = await a.http.get('/api/tasks?task_name=asset_download&sort_order=asc&limit=2');
    assert.equal(first.body.pagination.has_more, true);
    assert.equal((await a.http.get('/api/tasks?status=completed,failed&task_name=asset_download')).body.tasks.length, 3);
    assert.equal((await a.http.get('/api/tasks?status=running')).body.tasks.length, 0);
    const created0 = (await a.http.get(`/api/tasks/${ids[0]}`)).body.create_time;
    const after0 = await a.http.get(`/api/tasks?task_name=asset_download&created_after=${encodeURIComponent(created0)}`);
    assert.ok(!after0.body.tasks.some((x: any) => x.id === ids[0]));
    assert.equal((await a.http.get(`/api/tasks?created_before=${encodeURIComponent(created0)}`)).body.tasks.length, 0);
    const key = (await a.http.get(`/api/tasks/${ids[1]}`)).body.idempotency_key;
    assert.deepEqual((await a.http.get(`/api/tasks?idempotency_key=${encodeURIComponent(key)}`)).body.tasks.map((x: any) => x.id), [ids[1]]);
    assert.equal((await b.http.get('/api/tasks')).body.pagination.total, 0);
  });

  test('Idempotency-Key: a retried request gets the task the first one created', async () => {
    const key = `retry-${storage}-${Math.random()}`;
    const form = new FormData();
    form.append('file', new Blob([PNG, Buffer.from(key)], { type: 'image/png' }), 'idem-src.png');
    const fresh = (await (await fetch(`${srv.url}/api/assets`, { method: 'POST', body: form, headers: { authorization: `Bearer ${a.token}` } })).json()) as any;
    const body = { assets: [{ asset_id: fresh.id, target_path: `tasks-${storage}/idem.png` }] };
    const first = await a.http.post('/api/assets/download', body, { 'idempotency-key': key });
    const again = await a.http.post('/api/assets/download', body, { 'idempotency-key': key });
    assert.equal(first.status, 202);
    assert.equal(again.status, 202);
    assert.equal(again.body.task_id, first.body.task_id);
    const listed = await a.http.get(`/api/tasks?idempotency_key=${encodeURIComponent(key)}`);
    assert.deepEqual(listed.body.tasks.map((t: any) => t.id), [first.body.task_id]);
    assert.equal((await a.http.get(`/api/tasks/${first.body.task_id}`)).body.idempotency_key, key);
    // Another workspace's key space is its own.
    const other = await b.http.post('/api/assets/download', body, { 'idempotency-key': key });
    assert.equal(other.status, 400, 'B cannot read A’s asset');
    assert.equal((await a.http.post('/api/assets/download', body, { 'idempotency-key': 'x'.repeat(201) })).status, 400);
    await waitTask(a, first.body.task_id);
  });

  test('invalid filters are 422 CloudErrors', async () => {
    for (const q of ['status=done', 'sort_order=up', 'limit=0', 'limit=101', 'limit=x', 'offset=-1', 'created_after=yesterday', 'created_before=2026-13-45T00:00:00Z', 'task_name=%00', 'status=completed&status=failed']) {
      const r = await a.http.get(`/api/tasks?${q}`);
      assert.equal(r.status, 422, q);
      assert.equal(r.body.code, 'validation_error', q);
      assert.equal(typeof r.body.error, 'string');
      assert.equal(typeof r.body.details.field, 'string');
    }
    const r = await a.http.get('/api/tasks?status=done');
    assert.deepEqual(r.body, { error: 'Invalid status value(s): done. Valid values: created, running, completed, failed', code: 'validation_error', details: { field: 'status' } });
  });
});
