import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, forEachStorage } from '@svc/testkit';
import { signupUser, TEST_LIMITS, type TestUser } from './cloud-helpers.ts';
import { gateEntered, gatePrompt, releaseGate, startWorkflow, textPrompt, waitJob } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

const NOT_FOUND = { error: 'Job not found', code: 'not_found', details: {} };

forEachStorage('hosted runtime: cloud jobs', (storage) => {
  let srv: Srv;
  let a: TestUser;
  let b: TestUser;
  const tag = `${storage}-${process.pid}`;

  before(async () => {
    srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS }, { packs: ['gate-pack.mjs'] });
    a = await signupUser(srv.url, 'jobs-a');
    b = await signupUser(srv.url, 'jobs-b');
  });
  after(async () => {
    for (const g of ['one', 'two', 'three']) releaseGate(`cj-${g}-${tag}`);
    await srv.close();
  });

  test('cancel: a pending job never runs; a running one is interrupted; both end cancelled', async () => {
    const gate = `cj-one-${tag}`;
    const running = (await a.http.post('/api/prompt', { prompt: gatePrompt(gate) })).body.prompt_id;
    await gateEntered(gate);
    const pending = (await a.http.post('/api/prompt', { prompt: textPrompt('never-runs') })).body.prompt_id;

    // Another workspace cannot cancel it (nor learn it exists).
    const foreign = await b.http.post(`/api/jobs/${pending}/cancel`);
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, NOT_FOUND);

    const c1 = await a.http.post(`/api/jobs/${pending}/cancel`);
    assert.equal(c1.status, 200, c1.text);
    assert.equal(c1.body.id, pending);
    assert.equal(c1.body.status, 'cancelled');
    assert.equal(c1.body.progress, 0);
    assert.equal(c1.body.started_at, null);
    assert.ok(!Number.isNaN(Date.parse(c1.body.completed_at)));
    // Cancelling again answers the same final state.
    assert.equal((await a.http.post(`/api/jobs/${pending}/cancel`)).body.status, 'cancelled');

    const c2 = await a.http.post(`/api/jobs/${running}/cancel`);
    assert.equal(c2.status, 200);
    assert.equal(c2.body.status, 'running');
    assert.ok(c2.body.started_at);
    const done = await waitJob(a.http, running);
    assert.equal(done.status, 'cancelled');
    const st = await a.http.get(`/api/job/${running}/status`);
    assert.equal(st.status, 200);
    assert.equal(st.body.status, 'cancelled');
    assert.ok(st.body.completed_at);

    const never = await a.http.get(`/api/jobs/${pending}`);
    assert.equal(never.body.status, 'cancelled');
    assert.deepEqual(never.body.outputs, {});
    // The queue no longer lists either.
    const q = await a.http.get('/api/queue');
    assert.ok(!JSON.stringify(q.body).includes(pending));
  });

  test('cancel races the claim: every cancelled-before-start job never ran, nothing is left running', async () => {
    const gate = `cj-two-${tag}`;
    const blocker = (await a.http.post('/api/prompt', { prompt: gatePrompt(gate) })).body.prompt_id;
    await gateEntered(gate);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await a.http.post('/api/prompt', { prompt: textPrompt(`race-${i}`) })).body.prompt_id);
    // Release the queue while the cancels are in flight.
    const cancels = ids.map((id) => a.http.post(`/api/jobs/${id}/cancel`));
    releaseGate(gate);
    const answers = await Promise.all(cancels);
    await waitJob(a.http, blocker);
    for (let i = 0; i < ids.length; i++) {
      const r = answers[i]!;
      assert.equal(r.status, 200);
      assert.ok(['cancelled', 'running', 'completed'].includes(r.body.status), r.body.status);
      const job = await waitJob(a.http, ids[i]!);
      if (r.body.status === 'cancelled') {
        assert.equal(job.status, 'cancelled');
        assert.deepEqual(job.outputs, {}, 'a job cancelled while pending must not have run');
      } else assert.ok(['cancelled', 'completed'].includes(job.status));
    }
    const q = await a.http.get('/api/queue');
    assert.deepEqual(q.body.queue_pending, []);
    assert.deepEqual(q.body.queue_running, []);
  });

  test('GET /api/prompt/{id}, job status, history_v2 (deprecated) and their 404s', async () => {
    const id = (await a.http.post('/api/prompt', { prompt: textPrompt('v2-entry') })).body.prompt_id;
    await waitJob(a.http, id);
    const p = await a.http.get(`/api/prompt/${id}`);
    assert.equal(p.status, 200);
    assert.equal(p.body.id, id);
    assert.equal(p.body.status, 'completed');
    assert.equal(p.body.workflow.prompt['1'].inputs.value, 'v2-entry');
    assert.ok(p.body.outputs['2']);
    assert.ok(Date.parse(p.body.created_at) > 0);
    assert.ok(Date.parse(p.body.completed_at) >= Date.parse(p.body.created_at));
    const st = await a.http.get(`/api/job/${id}/status`);
    assert.deepEqual(Object.keys(st.body).sort(), ['completed_at', 'id', 'progress', 'started_at', 'status']);
    assert.equal(st.body.progress, 1);

    for (const url of [`/api/prompt/${id}`, `/api/job/${id}/status`, `/api/history_v2/${id}`, `/api/jobs/${id}/cancel`]) {
      const r = url.endsWith('cancel') ? await b.http.post(url) : await b.http.get(url);
      assert.equal(r.status, 404, url);
      assert.deepEqual(r.body, NOT_FOUND, url);
    }
    assert.deepEqual((await a.http.get('/api/prompt/nope')).body, NOT_FOUND);
    for (const bad of ['%00', 'a%ED%A0%80', '9'.repeat(300)]) {
      const r = await a.http.get(`/api/prompt/${bad}`);
      assert.ok(r.status === 400 || r.status === 404, `${bad}: ${r.status}`);
    }

    const h = await a.http.get('/api/history_v2?limit=2');
    assert.equal(h.status, 200);
    assert.equal(h.body.items.length, 2);
    assert.ok(h.body.total >= 3);
    assert.equal(h.body.has_more, true);
    assert.equal(h.body.items[0].id, id, 'newest first');
    const one = await a.http.get(`/api/history_v2/${id}`);
    assert.equal(one.body.id, id);
    assert.ok(one.body.started_at);
    const cancelled = await a.http.get('/api/history_v2?status=cancelled');
    assert.ok(cancelled.body.items.length >= 2);
    assert.ok(cancelled.body.items.every((e: any) => e.status === 'cancelled'));
    const both = await a.http.get('/api/history_v2?status=completed,running');
    assert.ok(both.body.items.every((e: any) => e.status === 'completed'));
    const badStatus = await a.http.get('/api/history_v2?status=done');
    assert.equal(badStatus.status, 400);
    assert.deepEqual(badStatus.body, { error: 'Invalid status value(s): done. Valid values: pending, running, completed, failed, cancelled', code: 'invalid_request', details: { field: 'status' } });
    assert.equal((await a.http.get('/api/history_v2?limit=0')).status, 400);
    assert.equal((await a.http.get('/api/history_v2?offset=-1')).status, 400);
    assert.equal((await b.http.get('/api/history_v2')).body.total, 0);

    const logs = await a.http.get('/api/logs?job_id=x');
    assert.deepEqual(logs.body, { entries: [], total: 0, has_more: false });
    assert.equal((await client(srv.url).get('/api/logs')).status, 401);
    assert.equal((await client(srv.url).post(`/api/jobs/${id}/cancel`)).status, 401);
  });

  test('GET /api/viewvideo is /api/view under another name, scoped to the workspace', async () => {
    const id = (
      await a.http.post('/api/prompt', {
        prompt: {
          1: { class_type: 'EmptyImage', inputs: { width: 4, height: 4, batch_size: 1, color: 0x336699 } },
          2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'vv' } },
        },
      })
    ).body.prompt_id;
    const job = await waitJob(a.http, id);
    const file = job.outputs['2'].images[0].filename;
    const view = await a.http.get(`/api/view?filename=${file}&type=output`);
    for (const url of [`/api/viewvideo?filename=${file}&type=output`, `/api/viewvideo?filename=${file}`]) {
      const r = await a.http.get(url);
      assert.equal(r.status, 200, url);
      assert.equal(r.headers.get('content-type')!, view.headers.get('content-type')!);
      assert.equal(r.text, view.text);
    }
    assert.equal((await b.http.get(`/api/viewvideo?filename=${file}&type=output`)).status, 404);
    assert.equal((await a.http.get('/api/viewvideo?filename=..%2F..%2Fetc%2Fpasswd')).status < 500, true);
    assert.equal((await client(srv.url).get(`/api/viewvideo?filename=${file}`)).status, 401);
  });

  test('the OpenAPI document marks the deprecated paths and names their successors', async () => {
    const doc = (await client(srv.url).get('/openapi.json')).body;
    const expect: Array<[string, string, string]> = [
      ['get', '/api/history_v2', 'GET /api/jobs'],
      ['get', '/api/history_v2/{prompt_id}', 'GET /api/jobs/{prompt_id}'],
      ['get', '/api/job/{job_id}/status', 'GET /api/jobs/{job_id}'],
      ['get', '/api/logs', 'GET /api/jobs/{job_id}'],
      ['get', '/api/viewvideo', 'GET /api/view'],
    ];
    for (const [m, p, successor] of expect) {
      const op = doc.paths[p]?.[m];
      assert.ok(op, p);
      assert.equal(op.deprecated, true, p);
      assert.deepEqual(op['x-runtime'], ['cloud']);
      assert.ok(op.description.startsWith('[cloud-only] Deprecated.'), op.description);
      assert.ok(op.description.includes(successor), `${p}: ${op.description}`);
    }
    for (const [m, p] of [['post', '/api/jobs/{job_id}/cancel'], ['get', '/api/prompt/{prompt_id}']]) {
      assert.ok(doc.paths[p][m].description.startsWith('[cloud-only] '));
      assert.notEqual(doc.paths[p][m].deprecated, true);
    }
  });
});

test('local runtime: the cloud job paths answer 404', async () => {
  const srv = await startWorkflow('sqlite');
  try {
    for (const [m, p] of [['POST', '/api/jobs/x/cancel'], ['GET', '/api/prompt/x'], ['GET', '/api/history_v2'], ['GET', '/api/history_v2/x'], ['GET', '/api/job/x/status'], ['GET', '/api/logs'], ['GET', '/api/viewvideo?filename=x']]) {
      assert.equal((await srv.http.request(m!, p!)).status, 404, `${m} ${p}`);
    }
  } finally {
    await srv.close();
  }
});
