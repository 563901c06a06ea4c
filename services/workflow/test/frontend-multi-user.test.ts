/**
 * The web frontend in --multi-user mode: it names its user in a Comfy-User
 * header on its API calls, but the browser loads output images (<img> on
 * /view) with no header. Found with the real frontend (1.45): every output
 * and preview image of a run answered 404, since a request without the
 * header was the default user, who may not see the job's files. The user of
 * such a request is now the one the last API call named, kept in a
 * same-site cookie; other users' outputs stay hidden.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { getBytes } from './files-helpers.ts';
import { startWorkflow, waitJob } from './helpers.ts';

function imagePrompt(prefix: string, node: 'SaveImage' | 'PreviewImage'): Record<string, unknown> {
  return {
    1: { class_type: 'EmptyImage', inputs: { width: 8, height: 8, batch_size: 1, color: 0x102030 } },
    2: { class_type: node, inputs: node === 'SaveImage' ? { images: ['1', 0], filename_prefix: prefix } : { images: ['1', 0] } },
  };
}

function cookieOf(setCookie: string | null): string | undefined {
  return setCookie?.split(';')[0];
}

forEachStorage('workflow multi-user: the frontend\'s image requests', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let alice: string;
  let bob: string;
  const views: Record<string, string> = {};
  before(async () => {
    srv = await startWorkflow(storage, { multiUser: true });
    alice = (await srv.http.post('/users', { username: 'alice' })).body;
    bob = (await srv.http.post('/users', { username: 'bob' })).body;
    for (const node of ['SaveImage', 'PreviewImage'] as const) {
      const r = await srv.http.post('/prompt', { prompt: imagePrompt('mu-frontend', node) }, { 'comfy-user': alice });
      assert.equal(r.status, 200, r.text);
      const job = await waitJob({ get: (p: string) => srv.http.get(p, { 'comfy-user': alice }) } as any, r.body.prompt_id);
      assert.equal(job.status, 'completed', JSON.stringify(job));
      const img = job.outputs['2'].images[0];
      views[node] = `${srv.url}/api/view?filename=${encodeURIComponent(img.filename)}&subfolder=${encodeURIComponent(img.subfolder)}&type=${img.type}`;
    }
  });
  after(async () => {
    await srv.close();
  });

  test('an API call with Comfy-User sets a same-site HttpOnly cookie naming that user, once', async () => {
    const r = await getBytes(`${srv.url}/api/settings`, { 'comfy-user': alice });
    assert.equal(r.status, 200);
    const set = r.headers.get('set-cookie');
    assert.ok(set, 'no Set-Cookie');
    assert.equal(cookieOf(set), `comfy-user=${alice}`);
    assert.match(set, /;\s*Path=\/(;|$)/);
    assert.match(set, /;\s*SameSite=Strict/);
    assert.match(set, /;\s*HttpOnly/);
    // the cookie already names the user: not set again; another user in the header replaces it
    assert.equal((await getBytes(`${srv.url}/api/settings`, { 'comfy-user': alice, cookie: `comfy-user=${alice}` })).headers.get('set-cookie'), null);
    assert.equal(cookieOf((await getBytes(`${srv.url}/api/settings`, { 'comfy-user': bob, cookie: `comfy-user=${alice}` })).headers.get('set-cookie')), `comfy-user=${bob}`);
    // no header, or one that is no user id: no cookie
    assert.equal((await getBytes(`${srv.url}/api/system_stats`)).headers.get('set-cookie'), null);
    assert.equal((await getBytes(`${srv.url}/api/system_stats`, { 'comfy-user': '../x' })).headers.get('set-cookie'), null);
  });

  test('/view without the header serves the cookie user\'s outputs and previews, and hides them from others', async () => {
    for (const [node, url] of Object.entries(views)) {
      const own = await getBytes(url, { cookie: `comfy-user=${alice}` });
      assert.equal(own.status, 200, node);
      assert.equal(own.headers.get('content-type'), 'image/png');
      assert.equal((await getBytes(url, { cookie: `other=1; comfy-user=${alice}; x=y` })).status, 200, node);
      assert.equal((await getBytes(url, { cookie: `comfy-user=${bob}` })).status, 404, node);
      assert.equal((await getBytes(url)).status, 404, node);
      // the header, when there is one, names the user whatever the cookie says
      assert.equal((await getBytes(url, { 'comfy-user': bob, cookie: `comfy-user=${alice}` })).status, 404, node);
      assert.equal((await getBytes(url, { 'comfy-user': alice, cookie: `comfy-user=${bob}` })).status, 200, node);
      // a cookie that is no user id is the default user
      assert.equal((await getBytes(url, { cookie: 'comfy-user=..%2Falice' })).status, 404, node);
    }
  });

  test('jobs and history read with the cookie alone are the cookie user\'s', async () => {
    const mine = await getBytes(`${srv.url}/api/jobs?status=completed`, { cookie: `comfy-user=${alice}` });
    assert.equal(JSON.parse(mine.body.toString()).jobs.length, 2);
    const theirs = await getBytes(`${srv.url}/api/jobs?status=completed`, { cookie: `comfy-user=${bob}` });
    assert.equal(JSON.parse(theirs.body.toString()).jobs.length, 0);
  });
});

forEachStorage('workflow single user: no user cookie', (storage) => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('without --multi-user the Comfy-User header sets no cookie', async () => {
    const r = await getBytes(`${srv.url}/api/settings`, { 'comfy-user': 'someone' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('set-cookie'), null);
  });
});
