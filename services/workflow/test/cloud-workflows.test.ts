/**
 * Saved workflows of the hosted runtime: CRUD, search/sort/paging, content
 * and versions with base_version optimistic concurrency (409 stale, 403 not
 * allowed, one winner among concurrent writers), forks, publishing by share
 * id and of user data files (WorkflowPublishInfo), prompts linked to a
 * workflow version and jobs filtered by it; the local runtime has none of it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, forEachStorage } from '@svc/testkit';
import { signupUser, startCloud, type Http, type TestUser } from './cloud-helpers.ts';
import { buildApp } from '../src/app.ts';
import { startWorkflow, textPrompt, waitJob } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startCloud>>;
const GRAPH = { last_node_id: 2, nodes: [{ id: 1, type: 'PrimitiveString' }], links: [], version: 0.4 };

forEachStorage('hosted runtime: saved workflows and versions', (storage) => {
  let srv: Srv;
  before(async () => {
    srv = await startCloud(storage);
  });
  after(async () => srv.close());

  const inWs = (u: TestUser, wid: string): Http => client(srv.url, { authorization: `Bearer ${u.token}`, 'x-workspace-id': wid });

  test('create, get, PATCH, list with search, sort and paging, delete', async () => {
    const u = await signupUser(srv.url, 'wf');
    let r = await u.http.post('/api/workflows', { name: 'Portrait Upscale', description: 'two pass', content: GRAPH });
    assert.equal(r.status, 201, r.text);
    const a = r.body;
    assert.match(a.id, /^[0-9a-f-]{36}$/);
    assert.equal(a.name, 'Portrait Upscale');
    assert.equal(a.description, 'two pass');
    assert.equal(a.share_id, null);
    assert.equal(a.thumbnail_url, null);
    assert.match(a.latest_version_id, /^[0-9a-f-]{36}$/);
    assert.ok(Date.parse(a.created_at) > 0 && Date.parse(a.updated_at) > 0);
    r = await u.http.post('/api/workflows', { name: 'landscape 100%_done' });
    assert.equal(r.status, 201);
    assert.equal(r.body.latest_version_id, null);
    assert.equal(r.body.description, '');
    const b = r.body;
    r = await u.http.post('/api/workflows', { name: 'Zeta' });
    const c = r.body;
    r = await u.http.get('/api/workflows');
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.workflows.map((w: any) => w.id),
      [c.id, b.id, a.id],
      'newest change first by default',
    );
    assert.equal(r.body.total, 3);
    assert.equal(r.body.has_more, false);
    r = await u.http.get('/api/workflows?sort=name');
    assert.deepEqual(
      r.body.workflows.map((w: any) => w.name),
      ['landscape 100%_done', 'Portrait Upscale', 'Zeta'],
    );
    r = await u.http.get('/api/workflows?sort=name&order=desc&limit=1&offset=1');
    assert.deepEqual(
      r.body.workflows.map((w: any) => w.name),
      ['Portrait Upscale'],
    );
    assert.equal(r.body.total, 3);
    assert.equal(r.body.has_more, true);
    r = await u.http.get('/api/workflows?search=UPSCALE');
    assert.deepEqual(
      r.body.workflows.map((w: any) => w.id),
      [a.id],
    );
    r = await u.http.get(`/api/workflows?search=${encodeURIComponent('%_')}`);
    assert.deepEqual(
      r.body.workflows.map((w: any) => w.id),
      [b.id],
      'LIKE wildcards in the search are literal',
    );
    for (const [q, error] of [
      ['sort=likes', 'sort must be one of: created_at, updated_at, name'],
      ['order=up', 'order must be one of: asc, desc'],
      ['limit=0', 'limit must be at least 1'],
      ['limit=abc', 'limit must be an integer'],
      ['offset=-1', 'offset must be at least 0'],
      ['search=a%00b', 'search must be at most 200 characters of valid text'],
      ['limit=1&limit=2', 'limit must be given once'],
    ]) {
      r = await u.http.get(`/api/workflows?${q}`);
      assert.equal(r.status, 400, q);
      assert.deepEqual(r.body, { error, code: 'invalid_request', details: {} }, q);
    }
    r = await u.http.patch(`/api/workflows/${a.id}`, { name: 'Portrait 2', description: '' });
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'Portrait 2');
    assert.equal(r.body.description, '');
    assert.equal((await u.http.get(`/api/workflows/${a.id}`)).body.name, 'Portrait 2');
    for (const [body, error] of [
      [{}, 'name must be a string'],
      [{ name: '  ' }, 'name must not be empty'],
      [{ name: 'x'.repeat(256) }, 'name must be at most 255 characters'],
      [{ name: 'n', description: 5 }, 'description must be a string'],
      [{ name: 'n', content: [1] }, 'content must be a JSON object'],
      [{ name: 'a\u0000' }, 'name contains invalid characters'],
    ] as const) {
      r = await u.http.post('/api/workflows', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.body, { error, code: 'invalid_request', details: {} });
    }
    r = await u.http.delete(`/api/workflows/${c.id}`);
    assert.equal(r.status, 204);
    r = await u.http.get(`/api/workflows/${c.id}`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { error: 'Workflow not found', code: 'not_found', details: {} });
    assert.equal((await u.http.delete(`/api/workflows/${c.id}`)).status, 404);
    assert.equal((await u.http.get('/api/workflows/not-a-uuid')).status, 404);
    assert.equal((await u.http.get('/api/workflows')).body.total, 2);
  });

  test('content and versions: PUT appends, GET by version_id, POST versions with base_version (409 stale), concurrent writers: one wins', async () => {
    const u = await signupUser(srv.url, 'ver');
    const w = (await u.http.post('/api/workflows', { name: 'v', content: GRAPH })).body;
    let r = await u.http.get(`/api/workflows/${w.id}/content`);
    assert.deepEqual(r.body, GRAPH);
    r = await u.http.put(`/api/workflows/${w.id}/content`, { ...GRAPH, last_node_id: 3 });
    assert.equal(r.status, 200);
    assert.equal(r.body.workflow_id, w.id);
    assert.equal(r.body.version_number, 2);
    const v2 = r.body.id;
    r = await u.http.post(`/api/workflows/${w.id}/versions`, { base_version: 2, workflow_json: { ...GRAPH, last_node_id: 4 } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.version, 3);
    assert.equal(r.body.latest_version, 3);
    assert.equal(r.body.created_by, u.id);
    assert.ok(Date.parse(r.body.created_at) > 0);
    r = await u.http.post(`/api/workflows/${w.id}/versions`, { base_version: 2, workflow_json: { stale: true } });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { error: 'base_version 2 is not the latest version (3)', code: 'version_conflict', details: { latest_version: 3, base_version: 2 } });
    assert.equal((await u.http.get(`/api/workflows/${w.id}/content`)).body.last_node_id, 4);
    assert.equal((await u.http.get(`/api/workflows/${w.id}/content?version_id=${v2}`)).body.last_node_id, 3);
    assert.equal((await u.http.get(`/api/workflows/${w.id}/content?version_id=00000000-0000-0000-0000-000000000000`)).status, 404);
    const meta = (await u.http.get(`/api/workflows/${w.id}`)).body;
    assert.equal(meta.latest_version, 3);
    // Concurrent writers on the same base: exactly one version 4.
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => u.http.post(`/api/workflows/${w.id}/versions`, { base_version: 3, workflow_json: { writer: i } })));
    assert.deepEqual(results.map((x) => x.status).sort(), [201, 409, 409, 409, 409, 409]);
    r = await u.http.get(`/api/workflows/${w.id}/versions`);
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.versions.map((v: any) => v.version_number),
      [4, 3, 2, 1],
    );
    assert.equal(r.body.total, 4);
    assert.equal(r.body.has_more, false);
    r = await u.http.get(`/api/workflows/${w.id}/versions?limit=1&offset=1`);
    assert.deepEqual(
      r.body.versions.map((v: any) => v.version_number),
      [3],
    );
    assert.equal(r.body.has_more, true);
    for (const [body, error] of [
      [{ workflow_json: {} }, 'base_version must be a non-negative integer'],
      [{ base_version: '4', workflow_json: {} }, 'base_version must be a non-negative integer'],
      [{ base_version: 1.5, workflow_json: {} }, 'base_version must be a non-negative integer'],
      [{ base_version: 4 }, 'workflow_json must be a JSON object'],
      [{ base_version: 4, workflow_json: 'x' }, 'workflow_json must be a JSON object'],
    ] as const) {
      r = await u.http.post(`/api/workflows/${w.id}/versions`, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.body, { error, code: 'invalid_request', details: {} });
    }
    // Writers racing a delete: each gets its version, a 409 or a 404, never a 5xx.
    const doomed = (await u.http.post('/api/workflows', { name: 'doomed', content: GRAPH })).body;
    const racing = await Promise.all([u.http.delete(`/api/workflows/${doomed.id}`), ...Array.from({ length: 4 }, (_, i) => (i % 2 ? u.http.put(`/api/workflows/${doomed.id}/content`, { i }) : u.http.post(`/api/workflows/${doomed.id}/versions`, { base_version: 1, workflow_json: { i } })))]);
    assert.equal(racing[0]!.status, 204);
    for (const x of racing.slice(1)) assert.ok([200, 201, 404, 409].includes(x.status), `${x.status} ${x.text}`);
    assert.equal((await u.http.get(`/api/workflows/${doomed.id}/versions`)).status, 404);
    // A workflow created without content starts at version 0.
    const empty = (await u.http.post('/api/workflows', { name: 'empty' })).body;
    assert.deepEqual((await u.http.get(`/api/workflows/${empty.id}/content`)).body, {});
    r = await u.http.post(`/api/workflows/${empty.id}/versions`, { base_version: 0, workflow_json: GRAPH });
    assert.equal(r.status, 201);
    assert.equal(r.body.version, 1);
    r = await u.http.put(`/api/workflows/${empty.id}/content`, [1, 2]);
    assert.equal(r.status, 400);
    r = await u.http.put(`/api/workflows/${empty.id}/content`, { big: 'x'.repeat(8 * 1024 * 1024) });
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'payload_too_large');
  });

  test('403: a member changing a workflow another member created, or another workspace a published one; 404 for an unpublished one', async () => {
    const owner = await signupUser(srv.url, 'wfowner');
    const member = await signupUser(srv.url, 'wfmember');
    const team = (await owner.http.post('/api/workspaces', { name: 'WF team' })).body;
    const inv = await inWs(owner, team.id).post('/api/workspace/invites', { email: member.email, role: 'member' });
    assert.equal((await member.http.post(`/api/invites/${inv.body.token}/accept`)).status, 200);
    const w = (await inWs(owner, team.id).post('/api/workflows', { name: 'team wf', content: GRAPH })).body;
    const m = inWs(member, team.id);
    assert.equal((await m.get(`/api/workflows/${w.id}`)).status, 200, 'members read the workspace’s workflows');
    let r = await m.post(`/api/workflows/${w.id}/versions`, { base_version: 1, workflow_json: GRAPH });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { error: 'Only the workflow’s creator or a workspace admin can change it', code: 'forbidden', details: {} });
    assert.equal((await m.patch(`/api/workflows/${w.id}`, { name: 'x' })).status, 403);
    assert.equal((await m.put(`/api/workflows/${w.id}/content`, GRAPH)).status, 403);
    assert.equal((await m.delete(`/api/workflows/${w.id}`)).status, 403);
    const own = (await m.post('/api/workflows', { name: 'mine', content: GRAPH })).body;
    assert.equal((await m.post(`/api/workflows/${own.id}/versions`, { base_version: 1, workflow_json: GRAPH })).status, 201);
    assert.equal((await inWs(owner, team.id).post(`/api/workflows/${own.id}/versions`, { base_version: 2, workflow_json: GRAPH })).status, 201, 'the owner may change any');

    const stranger = await signupUser(srv.url, 'wfstranger');
    r = await stranger.http.post(`/api/workflows/${w.id}/versions`, { base_version: 1, workflow_json: GRAPH });
    assert.equal(r.status, 404);
    // Published (through a user data file of the owner's personal workspace): visible, still not the stranger's.
    assert.equal((await owner.http.post('/api/userdata/workflows%2Fpub.json', JSON.stringify(GRAPH))).status, 200);
    const url = (await owner.http.post('/api/userdata/workflows%2Fpub.json/publish')).body.url as string;
    const shareId = url.split('/').pop()!;
    const pub = await client(srv.url).get(`/api/workflows/published/${shareId}`);
    r = await stranger.http.post(`/api/workflows/${pub.body.id}/versions`, { base_version: 1, workflow_json: GRAPH });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { error: 'Only the workspace that owns this workflow can add versions to it', code: 'forbidden', details: {} });
    assert.equal((await stranger.http.get(`/api/workflows/${pub.body.id}`)).status, 404, 'not in the stranger’s list or detail');
  });

  test('fork: own workflows and published ones, with the latest content; unpublished ones of another workspace are 404', async () => {
    const u = await signupUser(srv.url, 'forker');
    const w = (await u.http.post('/api/workflows', { name: 'orig', description: 'd', content: GRAPH })).body;
    await u.http.put(`/api/workflows/${w.id}/content`, { ...GRAPH, last_node_id: 9 });
    let r = await u.http.post(`/api/workflows/${w.id}/fork`);
    assert.equal(r.status, 201, r.text);
    assert.notEqual(r.body.id, w.id);
    assert.equal(r.body.name, 'orig');
    assert.equal(r.body.description, 'd');
    assert.equal((await u.http.get(`/api/workflows/${r.body.id}/content`)).body.last_node_id, 9);
    assert.equal((await u.http.get(`/api/workflows/${r.body.id}/versions`)).body.total, 1);
    r = await u.http.post(`/api/workflows/${w.id}/fork`, { name: 'copy' });
    assert.equal(r.body.name, 'copy');
    const other = await signupUser(srv.url, 'forker2');
    assert.equal((await other.http.post(`/api/workflows/${w.id}/fork`)).status, 404);
    await u.http.post('/api/userdata/workflows%2Ff.json', JSON.stringify(GRAPH));
    const shareId = ((await u.http.post('/api/userdata/workflows%2Ff.json/publish')).body.url as string).split('/').pop()!;
    const pub = (await client(srv.url).get(`/api/workflows/published/${shareId}`)).body;
    r = await other.http.post(`/api/workflows/${pub.id}/fork`, { name: 'theirs' });
    assert.equal(r.status, 201);
    assert.deepEqual((await other.http.get(`/api/workflows/${r.body.id}/content`)).body, GRAPH);
    assert.equal((await other.http.get('/api/workflows')).body.total, 1);
  });

  test('user data publish: WorkflowPublishInfo before and after, public URL without credentials, republish keeps the share id', async () => {
    const u = await signupUser(srv.url, 'pub');
    assert.equal((await u.http.post('/api/userdata/workflows%2Fmy%20flow.json', JSON.stringify(GRAPH))).status, 200);
    let r = await u.http.get('/api/userdata/workflows%2Fmy%20flow.json/publish');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { workflow_id: '', share_id: '', publish_time: null, listed: false, assets: [] });
    r = await u.http.get('/api/userdata/workflows%2Fmissing.json/publish');
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { error: 'Workflow file not found', code: 'not_found', details: {} });
    assert.equal((await u.http.post('/api/userdata/workflows%2Fmissing.json/publish')).status, 404);
    assert.equal((await u.http.post('/api/userdata/..%2F..%2Fetc%2Fpasswd/publish')).status, 404);
    r = await u.http.post('/api/userdata/workflows%2Fmy%20flow.json/publish');
    assert.equal(r.status, 200);
    const url = new URL(r.body.url);
    assert.equal(url.origin, srv.url);
    const shareId = url.pathname.split('/').pop()!;
    assert.match(url.pathname, /^\/api\/workflows\/published\/[A-Za-z0-9_-]{22}$/);
    const pub = await client(srv.url).get(url.pathname);
    assert.equal(pub.status, 200);
    assert.equal(pub.body.share_id, shareId);
    assert.equal(pub.body.name, 'my flow');
    assert.deepEqual(pub.body.content, GRAPH);
    r = await u.http.get('/api/userdata/workflows%2Fmy%20flow.json/publish');
    assert.equal(r.body.workflow_id, pub.body.id);
    assert.equal(r.body.share_id, shareId);
    assert.ok(Date.parse(r.body.publish_time) > 0);
    assert.equal(r.body.listed, false);
    assert.deepEqual(r.body.assets, []);
    // The file changes; publishing again serves the new content under the same link.
    await u.http.post('/api/userdata/workflows%2Fmy%20flow.json', JSON.stringify({ ...GRAPH, last_node_id: 7 }));
    r = await u.http.post('/api/userdata/workflows%2Fmy%20flow.json/publish');
    assert.equal(r.body.url, url.href);
    assert.equal((await client(srv.url).get(url.pathname)).body.content.last_node_id, 7);
    assert.equal((await u.http.get(`/api/workflows/${pub.body.id}/versions`)).body.total, 2);
    await u.http.post('/api/userdata/workflows%2Fnot-json.json', 'not json');
    r = await u.http.post('/api/userdata/workflows%2Fnot-json.json/publish');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { error: 'The file is not a JSON workflow', code: 'invalid_workflow', details: {} });
    r = await client(srv.url).get('/api/workflows/published/nope');
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { error: 'Published workflow not found', code: 'not_found', details: {} });
    // Names decode as the user data routes decode them (once more than the URL): the same file either way.
    assert.equal((await u.http.post('/api/userdata/workflows%252Fdouble.json', JSON.stringify(GRAPH))).status, 200);
    assert.equal((await u.http.post('/api/userdata/workflows%252Fdouble.json/publish')).status, 200);
    assert.equal((await u.http.get('/api/userdata/workflows%2Fdouble.json/publish')).body.listed, false);
    assert.notEqual((await u.http.get('/api/userdata/workflows%2Fdouble.json/publish')).body.share_id, '');
    // The shared user data routes still see the file itself.
    assert.equal((await u.http.get('/api/userdata/workflows%2Fmy%20flow.json')).status, 200);
  });

  test('a prompt names its workflow and version; jobs filter by either', async () => {
    const u = await signupUser(srv.url, 'link');
    const w = (await u.http.post('/api/workflows', { name: 'linked', content: GRAPH })).body;
    const p = await u.http.post('/api/prompt', { prompt: textPrompt('linked-run'), workflow_id: w.id, workflow_version_id: w.latest_version_id });
    assert.equal(p.status, 200, p.text);
    const other = await u.http.post('/api/prompt', { prompt: textPrompt('other-run'), extra_data: { workflow_id: '11111111-1111-1111-1111-111111111111' } });
    await waitJob(u.http, p.body.prompt_id);
    await waitJob(u.http, other.body.prompt_id);
    let r = await u.http.get(`/api/jobs?workflow_id=${w.id}`);
    assert.deepEqual(
      r.body.jobs.map((j: any) => j.id),
      [p.body.prompt_id],
    );
    assert.equal(r.body.jobs[0].workflow_id, w.id);
    assert.equal(r.body.jobs[0].workflow_version_id, w.latest_version_id);
    r = await u.http.get(`/api/jobs?workflow_version_id=${w.latest_version_id}`);
    assert.deepEqual(
      r.body.jobs.map((j: any) => j.id),
      [p.body.prompt_id],
    );
    r = await u.http.get('/api/jobs?workflow_id=11111111-1111-1111-1111-111111111111');
    assert.deepEqual(
      r.body.jobs.map((j: any) => j.id),
      [other.body.prompt_id],
    );
    r = await u.http.get(`/api/jobs/${p.body.prompt_id}`);
    assert.equal(r.body.workflow_version_id, w.latest_version_id);
    const stranger = await signupUser(srv.url, 'link2');
    assert.deepEqual((await stranger.http.get(`/api/jobs?workflow_id=${w.id}`)).body.jobs, []);
  });
});

forEachStorage('hosted runtime: two API processes on one database race for the same unique keys', (storage) => {
  test('versions on the same base, a secret name, a hub username, a user data publish: one winner each, nothing lost', async () => {
    const srv = await startCloud(storage);
    const second = await buildApp(srv.cfg);
    try {
      const url2 = await second.listen({ port: 0, host: '127.0.0.1' });
      const u = await signupUser(srv.url, 'race');
      const other = client(url2, { authorization: `Bearer ${u.token}` });
      const both = [u.http, other];
      // The second process meets the first one's signing key with several requests at once: all wait for one key reload.
      const first = await Promise.all(Array.from({ length: 6 }, () => other.get('/api/secrets')));
      assert.deepEqual(first.map((r) => r.status), [200, 200, 200, 200, 200, 200], first.map((r) => r.text).join());
      const w = (await u.http.post('/api/workflows', { name: 'race', content: GRAPH })).body;
      const versions = await Promise.all(Array.from({ length: 8 }, (_, i) => both[i % 2]!.post(`/api/workflows/${w.id}/versions`, { base_version: 1, workflow_json: { writer: i } })));
      assert.deepEqual(versions.map((r) => r.status).filter((s) => s === 201), [201]);
      assert.ok(versions.every((r) => r.status === 201 || r.status === 409), versions.map((r) => r.text).join());
      const list = (await other.get(`/api/workflows/${w.id}/versions`)).body;
      assert.deepEqual(list.versions.map((v: any) => v.version_number), [2, 1]);
      const secrets = await Promise.all(Array.from({ length: 6 }, (_, i) => both[i % 2]!.post('/api/secrets', { name: 'RACE', value: `v${i}` })));
      assert.deepEqual(secrets.map((r) => r.status).sort(), [201, 201, 201, 201, 201, 201], secrets.map((r) => r.text).join());
      assert.equal(new Set(secrets.map((r) => r.body.id)).size, 1);
      assert.equal((await u.http.get('/api/secrets')).body.length, 1);
      const v = await signupUser(srv.url, 'race2');
      const name = `racer${process.pid % 1000}${storage}`;
      const claims = await Promise.all([u.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: name }), client(url2, { authorization: `Bearer ${v.token}` }).post('/api/hub/profiles', { workspace_id: v.workspaceId, username: name.toUpperCase() })]);
      assert.deepEqual(claims.map((r) => r.status).sort(), [201, 409]);
      await u.http.post('/api/userdata/workflows%2Frace.json', JSON.stringify(GRAPH));
      const pubs = await Promise.all(Array.from({ length: 4 }, (_, i) => both[i % 2]!.post('/api/userdata/workflows%2Frace.json/publish')));
      assert.ok(pubs.every((r) => r.status === 200 || r.status === 409), pubs.map((r) => r.text).join());
      assert.equal(new Set(pubs.filter((r) => r.status === 200).map((r) => r.body.url.split('/').pop())).size, 1, 'one share id');
      assert.equal((await u.http.get('/api/workflows?search=race')).body.total, 2, 'one workflow for the file');
    } finally {
      await second.close();
      await srv.close();
    }
  });
});

test('the local runtime answers 404 for every workflows, secrets and hub path', async () => {
  const cloud = await startCloud('sqlite');
  const local = await startWorkflow('sqlite');
  try {
    const doc = (await client(cloud.url).get('/openapi.json')).body;
    let n = 0;
    for (const [p, item] of Object.entries<any>(doc.paths)) {
      if (!/^\/api\/(workflows|secrets|hub)\b|\/publish$/.test(p)) continue;
      for (const [m, op] of Object.entries<any>(item)) {
        assert.deepEqual(op['x-runtime'], ['cloud'], `${m} ${p}`);
        assert.ok(op.description.startsWith('[cloud-only] '), `${m} ${p}`);
        const url = p.replace(/\{[^}]+\}/g, 'x');
        const r = await local.http.request(m.toUpperCase(), url, m === 'get' || m === 'delete' ? undefined : {});
        assert.equal(r.status, 404, `${m} ${url}`);
        n++;
      }
    }
    assert.ok(n >= 15, `only ${n} operations`);
    const localDoc = (await client(local.url).get('/openapi.json')).body;
    assert.ok(!Object.keys(localDoc.paths).some((p) => /^\/api\/(workflows|secrets|hub)\b|\/publish$/.test(p)));
  } finally {
    await cloud.close();
    await local.close();
  }
});
