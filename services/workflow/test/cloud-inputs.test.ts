import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { signupUser, startCloud, type TestUser } from './cloud-helpers.ts';
import { getBytes, png, upload } from './files-helpers.ts';
import { waitJob } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startCloud>>;

function loadImagePrompt(image: string): Record<string, unknown> {
  return {
    '1': { class_type: 'LoadImage', inputs: { image } },
    '2': { class_type: 'PreviewImage', inputs: { images: ['1', 0] } },
  };
}

function savePrompt(prefix: string): Record<string, unknown> {
  return {
    '1': { class_type: 'EmptyImage', inputs: { width: 4, height: 4, batch_size: 1, color: 0xff0000 } },
    '2': { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: prefix } },
  };
}

function loadImageChoices(body: any): string[] {
  return body.LoadImage.input.required.image[0];
}

forEachStorage('workflow hosted runtime: each workspace has its own input folder', (storage) => {
  let srv: Srv;
  let a: TestUser;
  let b: TestUser;
  const auth = (u: TestUser) => ({ authorization: `Bearer ${u.token}` });

  before(async () => {
    srv = await startCloud(storage);
    a = await signupUser(srv.url, 'inputs-a');
    b = await signupUser(srv.url, 'inputs-b');
  });
  after(async () => srv?.close());

  test('an upload lands in the workspace folder: listed, viewed and loaded by its workspace only', async () => {
    const img = await png(3, 2, [10, 20, 30, 255]);
    const up = await upload(srv.url, '/api/upload/image', img, 'a-private.png', {}, auth(a));
    assert.equal(up.status, 200, up.text);
    assert.equal(up.body.name, 'a-private.png');
    assert.equal(fs.existsSync(path.join(srv.cfg.dataDir, 'input', 'a-private.png')), false, 'not in the shared input folder');
    assert.equal(fs.existsSync(path.join(srv.cfg.dataDir, 'workspaces', a.workspaceId, 'input', 'a-private.png')), true);
    // The upload's asset is A's: listed for A, not for B.
    assert.equal(typeof up.body.asset?.id, 'string', up.text);
    const listA = await a.http.get('/api/assets?limit=500');
    assert.ok(listA.body.assets.some((x: any) => x.id === up.body.asset.id));
    const listB = await b.http.get('/api/assets?limit=500');
    assert.equal(listB.body.assets.some((x: any) => x.id === up.body.asset.id), false);
    assert.equal((await b.http.get(`/api/assets/${up.body.asset.id}`)).status, 404);

    const infoA = await a.http.get('/api/object_info/LoadImage');
    assert.ok(loadImageChoices(infoA.body).includes('a-private.png'));
    const infoB = await b.http.get('/api/object_info');
    assert.equal(loadImageChoices(infoB.body).includes('a-private.png'), false, 'B’s LoadImage list does not show A’s upload');
    assert.match(String(infoA.headers.get('etag')), /^"/);

    const viewA = await getBytes(`${srv.url}/api/view?filename=a-private.png&type=input`, auth(a));
    assert.equal(viewA.status, 200);
    assert.deepEqual(viewA.body, img);
    const viewB = await getBytes(`${srv.url}/api/view?filename=a-private.png&type=input`, auth(b));
    assert.equal(viewB.status, 404);

    const runB = await b.http.post('/api/prompt', { prompt: loadImagePrompt('a-private.png') });
    assert.equal(runB.status, 400, 'B cannot load A’s input');
    assert.equal(runB.body.error.type, 'prompt_outputs_failed_validation');
    assert.equal(runB.body.node_errors['1'].errors[0].type, 'custom_validation_failed');

    const runA = await a.http.post('/api/prompt', { prompt: loadImagePrompt('a-private.png') });
    assert.equal(runA.status, 200, runA.text);
    assert.equal((await waitJob(a.http, runA.body.prompt_id)).status, 'completed');
  });

  test('the same name in two workspaces holds two files, without renaming either', async () => {
    const ra = await upload(srv.url, '/api/upload/image', await png(2, 2, [1, 1, 1, 255]), 'same.png', {}, auth(a));
    const rb = await upload(srv.url, '/api/upload/image', await png(2, 2, [2, 2, 2, 255]), 'same.png', {}, auth(b));
    assert.equal(ra.body.name, 'same.png');
    assert.equal(rb.body.name, 'same.png', 'no "same (1).png": B learns nothing of A’s names');
    const va = await getBytes(`${srv.url}/api/view?filename=same.png&type=input`, auth(a));
    const vb = await getBytes(`${srv.url}/api/view?filename=same.png&type=input`, auth(b));
    assert.notDeepEqual(va.body, vb.body);
  });

  test('LoadImage of an output ("name [output]") opens only the workspace’s own job outputs', async () => {
    const saved = await b.http.post('/api/prompt', { prompt: savePrompt('b-output') });
    assert.equal(saved.status, 200, saved.text);
    const job = await waitJob(b.http, saved.body.prompt_id);
    assert.equal(job.status, 'completed');
    const file = job.outputs['2'].images[0].filename as string;

    const byA = await a.http.post('/api/prompt', { prompt: loadImagePrompt(`${file} [output]`) });
    assert.equal(byA.status, 400, 'A cannot load B’s output');
    const byB = await b.http.post('/api/prompt', { prompt: loadImagePrompt(`${file} [output]`) });
    assert.equal(byB.status, 200, byB.text);
    assert.equal((await waitJob(b.http, byB.body.prompt_id)).status, 'completed');
  });
});
