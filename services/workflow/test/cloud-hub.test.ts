/**
 * The hub of the hosted runtime: profiles (immutable, case-insensitively
 * unique usernames), labels, publishing user data files and saved workflows
 * (HubWorkflowDetail, share id kept on republish), public listing, search,
 * label filter, index and detail, unpublishing, moderation status, and
 * single-use pre-signed upload URLs for hub files.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { client, forEachStorage } from '@svc/testkit';
import { openWorkflowStorage } from '../src/app.ts';
import { hubModerateCommand } from '../src/cli/hub-moderate.ts';
import { signupUser, startCloud, type TestUser } from './cloud-helpers.ts';
import { waitJob } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startCloud>>;
const GRAPH = { last_node_id: 1, nodes: [{ id: 1, type: 'SaveImage' }], links: [], version: 0.4 };
let seq = 0;
const uname = (base: string) => `${base}${process.pid % 1000}x${++seq}`;

async function png(): Promise<Buffer> {
  return sharp({ create: { width: 3, height: 2, channels: 3, background: { r: 1, g: 2, b: 3 } } }).png().toBuffer();
}

/** An output asset of the user's workspace (a SaveImage job): its id, file name and size. */
async function outputAsset(u: TestUser, prefix: string): Promise<{ id: string; name: string; size: number }> {
  const job = await u.http.post('/api/prompt', { prompt: { 1: { class_type: 'EmptyImage', inputs: { width: 3, height: 2, batch_size: 1, color: 0x010203 } }, 2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: prefix } } } });
  assert.equal(job.status, 200, job.text);
  const done = await waitJob(u.http, job.body.prompt_id);
  assert.equal(done.status, 'completed', JSON.stringify(done.execution_error));
  const filename = done.outputs['2'].images[0].filename;
  const a = (await u.http.get('/api/assets?limit=500')).body.assets.find((x: any) => x.name === filename);
  assert.ok(a, `asset of ${filename}`);
  return { id: a.id, name: a.name, size: Number(a.size) };
}

/** A hub file through its pre-signed URL; returns the upload id and public URL. */
async function hubFile(srv: Srv, u: TestUser): Promise<{ id: string; url: string }> {
  const bytes = await png();
  const r = await u.http.post('/api/hub/assets/upload-url', { filename: 'thumb.png', content_type: 'image/png', size: bytes.length });
  assert.equal(r.status, 200, r.text);
  const put = await fetch(r.body.upload_url, { method: 'PUT', body: new Uint8Array(bytes), headers: { 'content-type': 'image/png' } });
  assert.equal(put.status, 200, await put.text());
  return { id: r.body.upload_id, url: r.body.asset_url };
}

/** The operator's CLI (`hub-moderate`), run in-process against the server's database. */
async function moderate(srv: Srv, flags: Record<string, string | boolean>): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const sink = (f: (s: string) => void) => ({ write: (s: string) => f(s) });
  const code = await hubModerateCommand({ ...srv.cfg, flags }, openWorkflowStorage, sink((s) => (out += s)), sink((s) => (err += s)));
  return { code, out, err };
}

async function setStatus(srv: Srv, shareId: string, status: string): Promise<void> {
  const r = await moderate(srv, { shareId, status });
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, `${shareId} ${status}\n`);
}

forEachStorage('hosted runtime: hub', (storage) => {
  let srv: Srv;
  before(async () => {
    srv = await startCloud(storage);
  });
  after(async () => srv.close());
  const anon = () => client(srv.url);

  test('profiles: create with an immutable username, availability, get by any case, me get/put, list and search', async () => {
    const u = await signupUser(srv.url, 'hubp');
    const name = uname('Alice');
    let r = await anon().get(`/api/hub/profiles/check?username=${name}`);
    assert.deepEqual(r.body, { available: true, username: name });
    r = await u.http.get('/api/hub/profiles/me');
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { error: 'Hub profile not found', code: 'not_found', details: {} });
    r = await u.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: name, display_name: 'Alice A', description: 'makes pictures', website_urls: ['https://example.test/a'] });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(Object.keys(r.body).sort(), ['bio', 'created_at', 'display_name', 'links', 'username', 'workflow_count']);
    assert.equal(r.body.username, name);
    assert.equal(r.body.bio, 'makes pictures');
    assert.deepEqual(r.body.links, ['https://example.test/a']);
    assert.equal(r.body.workflow_count, 0);
    assert.deepEqual((await anon().get(`/api/hub/profiles/check?username=${name.toUpperCase()}`)).body, { available: false, username: name.toUpperCase() });
    assert.equal((await anon().get('/api/hub/profiles/check?username=me')).body.available, false, 'reserved');
    assert.equal((await anon().get('/api/hub/profiles/check?username=a')).body.available, false, 'invalid');
    r = await anon().get('/api/hub/profiles/check');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { error: 'username is required', code: 'invalid_request', details: {} });
    r = await anon().get(`/api/hub/profiles/${name.toLowerCase()}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.display_name, 'Alice A');
    assert.equal((await anon().get('/api/hub/profiles/nobody-here')).status, 404);
    // One profile per workspace; usernames unique regardless of case.
    r = await u.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: uname('other') });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { error: 'This workspace already has a hub profile', code: 'profile_exists', details: {} });
    const v = await signupUser(srv.url, 'hubp2');
    r = await v.http.post('/api/hub/profiles', { workspace_id: v.workspaceId, username: name.toUpperCase() });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { error: 'This username is already taken', code: 'username_taken', details: {} });
    r = await v.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: uname('steal') });
    assert.equal(r.status, 404, 'not a member of that workspace');
    assert.deepEqual(r.body, { error: 'Workspace not found', code: 'not_found', details: {} });
    for (const [body, error] of [
      [{ workspace_id: v.workspaceId, username: 'ab' }, 'username must be 3-39 letters, digits, "-" or "_", starting with a letter or digit'],
      [{ workspace_id: v.workspaceId, username: '-abc' }, 'username must be 3-39 letters, digits, "-" or "_", starting with a letter or digit'],
      [{ workspace_id: v.workspaceId, username: 'has space' }, 'username must be 3-39 letters, digits, "-" or "_", starting with a letter or digit'],
      [{ workspace_id: v.workspaceId, username: 'Admin' }, 'This username is reserved'],
      [{ username: 'valid-name' }, 'workspace_id must be a string'],
      [{ workspace_id: v.workspaceId, username: 'valid-name', website_urls: ['javascript:alert(1)'] }, 'website_urls[0] must be an http(s) URL without credentials'],
    ] as const) {
      r = await v.http.post('/api/hub/profiles', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.body, { error, code: 'invalid_request', details: {} });
    }
    // me: update fields; the username never changes.
    r = await u.http.put('/api/hub/profiles/me', { display_name: 'Alice B', bio: 'new bio', links: [] });
    assert.equal(r.status, 200);
    assert.equal(r.body.display_name, 'Alice B');
    assert.deepEqual(r.body.links, []);
    r = await u.http.put('/api/hub/profiles/me', { username: uname('renamed') });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { error: 'The username of a hub profile cannot be changed', code: 'username_immutable', details: {} });
    assert.equal((await u.http.put('/api/hub/profiles/me', { username: name })).status, 200, 'the same username is fine');
    assert.equal((await u.http.get('/api/hub/profiles/me')).body.username, name);
    // PUT me creates a profile for a workspace without one.
    const vname = uname('Bob');
    r = await v.http.put('/api/hub/profiles/me', { username: vname, display_name: 'Bobby' });
    assert.equal(r.status, 200);
    assert.equal(r.body.username, vname);
    r = await anon().get(`/api/hub/profiles?search=${encodeURIComponent('bobby')}`);
    assert.ok(r.body.profiles.some((p: any) => p.username === vname));
    assert.ok(!r.body.profiles.some((p: any) => p.username === name));
    r = await anon().get('/api/hub/profiles?limit=1');
    assert.equal(r.body.profiles.length, 1);
    assert.ok(r.body.total >= 2);
    assert.equal(r.body.has_more, true);
    assert.equal((await u.http.get('/api/hub/profiles/me', {})).status, 200);
    assert.equal((await anon().get('/api/hub/profiles/me')).status, 401);
  });

  test('labels are public', async () => {
    const r = await anon().get('/api/hub/labels');
    assert.equal(r.status, 200);
    assert.ok(r.body.length >= 5);
    for (const l of r.body) assert.ok(typeof l.id === 'string' && typeof l.name === 'string' && /^#[0-9a-f]{6}$/.test(l.color));
  });

  test('publish a user data file with assets, thumbnail and labels; list, search, index, detail; republish; unpublish', async () => {
    const u = await signupUser(srv.url, 'hubpub');
    const name = uname('carol');
    await u.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: name });
    assert.equal((await u.http.post('/api/userdata/workflows%2Fhub.json', JSON.stringify(GRAPH))).status, 200);
    const asset = await outputAsset(u, 'hubsample');
    const assetId = asset.id;
    const thumb = await hubFile(srv, u);
    const body = {
      username: name,
      name: 'Glowing Portraits',
      workflow_filename: 'workflows/hub.json',
      asset_ids: [assetId],
      description: 'soft light portrait pipeline',
      tags: ['image-generation', 'portrait'],
      models: ['sdxl.safetensors'],
      custom_nodes: [],
      tutorial_url: 'https://example.test/tutorial',
      metadata: { difficulty: 'easy' },
      thumbnail_type: 'image',
      thumbnail_token_or_url: thumb.id,
      sample_image_tokens_or_urls: ['https://example.test/s.png'],
    };
    let r = await u.http.post('/api/hub/workflows', body);
    assert.equal(r.status, 200, r.text);
    const d = r.body;
    assert.match(d.share_id, /^[A-Za-z0-9_-]{22}$/);
    assert.match(d.workflow_id, /^[0-9a-f-]{36}$/);
    assert.equal(d.status, 'approved');
    assert.equal(d.name, 'Glowing Portraits');
    assert.deepEqual(d.workflow_json, GRAPH);
    assert.deepEqual(d.assets, [{ id: assetId, filename: asset.name, mime_type: 'image/png', size_bytes: asset.size }]);
    assert.equal(d.profile.username, name);
    assert.equal(d.thumbnail_url, thumb.url);
    assert.deepEqual(d.sample_image_urls, ['https://example.test/s.png']);
    assert.deepEqual(d.metadata, { difficulty: 'easy' });
    assert.ok(Date.parse(d.publish_time) > 0);
    // The user data file's publish info now names it.
    r = await u.http.get('/api/userdata/workflows%2Fhub.json/publish');
    assert.deepEqual({ ...r.body, publish_time: undefined }, { workflow_id: d.workflow_id, share_id: d.share_id, publish_time: undefined, listed: true, assets: d.assets });
    // Public detail, list, search, label filter, index.
    const stranger = await signupUser(srv.url, 'hubviewer');
    r = await stranger.http.get(`/api/hub/workflows/${d.share_id}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.content, GRAPH);
    assert.equal(r.body.author.username, name);
    assert.deepEqual(
      r.body.labels.map((l: any) => l.id),
      ['image-generation'],
    );
    assert.equal(r.body.views, 0, 'counted after this read');
    assert.equal((await anon().get(`/api/hub/workflows/${d.share_id}`)).body.views, 1);
    r = await anon().get('/api/hub/workflows?search=GLOWING');
    assert.deepEqual(
      r.body.workflows.map((w: any) => w.share_id),
      [d.share_id],
    );
    assert.equal(r.body.workflows[0].content, undefined, 'lists leave the graph out');
    assert.equal(r.body.total, 1);
    assert.equal((await anon().get('/api/hub/workflows?search=portrait%20pipeline')).body.total, 1, 'description matches too');
    assert.ok((await anon().get('/api/hub/workflows?labels=image-generation,video')).body.workflows.some((w: any) => w.share_id === d.share_id));
    assert.ok(!(await anon().get('/api/hub/workflows?labels=video')).body.workflows.some((w: any) => w.share_id === d.share_id));
    r = await anon().get('/api/hub/workflows?labels=nope');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { error: 'labels must be label ids from GET /api/hub/labels', code: 'invalid_request', details: {} });
    assert.equal((await anon().get('/api/hub/workflows?sort=stars')).status, 400);
    r = await anon().get('/api/hub/workflows/index');
    const entry = r.body.find((e: any) => e.share_id === d.share_id);
    assert.deepEqual({ ...entry, updated_at: undefined }, { share_id: d.share_id, name: 'Glowing Portraits', author_username: name, labels: ['image-generation'], likes: 0, updated_at: undefined });
    assert.equal((await anon().get(`/api/hub/profiles/${name}`)).body.workflow_count, 1);
    // Republish: same share id, new content, counters kept.
    await u.http.post('/api/userdata/workflows%2Fhub.json', JSON.stringify({ ...GRAPH, last_node_id: 5 }));
    r = await u.http.post('/api/hub/workflows', { ...body, name: 'Glowing Portraits v2', asset_ids: [] });
    assert.equal(r.status, 200);
    assert.equal(r.body.share_id, d.share_id);
    assert.equal(r.body.workflow_json.last_node_id, 5);
    r = await anon().get(`/api/hub/workflows/${d.share_id}`);
    assert.equal(r.body.name, 'Glowing Portraits v2');
    assert.equal(r.body.views, 2, 'counters survive a republish');
    // The published workflow can be forked by anyone signed in (counted).
    assert.equal((await stranger.http.post(`/api/workflows/${d.workflow_id}/fork`)).status, 201);
    assert.equal((await anon().get(`/api/hub/workflows/${d.share_id}`)).body.forks, 1);
    // Unpublish: only the owner; then gone from the hub.
    r = await stranger.http.delete(`/api/hub/workflows/${d.share_id}`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { error: 'Hub workflow not found', code: 'not_found', details: {} });
    assert.equal((await u.http.delete(`/api/hub/workflows/${d.share_id}`)).status, 204);
    assert.equal((await anon().get(`/api/hub/workflows/${d.share_id}`)).status, 404);
    assert.equal((await anon().get('/api/hub/workflows?search=glowing')).body.total, 0);
    assert.equal((await u.http.get('/api/userdata/workflows%2Fhub.json/publish')).body.listed, false);
    assert.equal((await u.http.delete(`/api/hub/workflows/${d.share_id}`)).status, 404);
  });

  test('publish a saved workflow; errors: no profile, another username, unknown assets and files, bad fields', async () => {
    const u = await signupUser(srv.url, 'hubpub2');
    const w = (await u.http.post('/api/workflows', { name: 'saved', content: GRAPH })).body;
    const base = { username: 'x', name: 'n', workflow_filename: w.id, asset_ids: [] };
    let r = await u.http.post('/api/hub/workflows', base);
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'not_found');
    const name = uname('dave');
    await u.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: name });
    const other = await signupUser(srv.url, 'hubpub3');
    const otherName = uname('erin');
    await other.http.post('/api/hub/profiles', { workspace_id: other.workspaceId, username: otherName });
    r = await u.http.post('/api/hub/workflows', { ...base, username: otherName });
    assert.equal(r.status, 404, 'not under another workspace’s profile');
    r = await u.http.post('/api/hub/workflows', { ...base, username: name.toUpperCase() });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.workflow_id, w.id);
    assert.equal((await u.http.get(`/api/workflows/${w.id}`)).body.share_id, r.body.share_id);
    r = await u.http.post('/api/hub/workflows', { ...base, username: name, asset_ids: ['00000000-0000-0000-0000-000000000000'] });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, { error: 'Some asset_ids are not assets of this workspace', code: 'invalid_asset', details: { missing: ['00000000-0000-0000-0000-000000000000'] } });
    const theirAsset = (await outputAsset(other, 'hubtheirs')).id;
    assert.ok(theirAsset);
    r = await u.http.post('/api/hub/workflows', { ...base, username: name, asset_ids: [theirAsset] });
    assert.equal(r.status, 400, 'another workspace’s asset');
    // A bare file name is the file under workflows/ (where the frontend saves them).
    await u.http.post('/api/userdata/workflows%2Fbare.json', JSON.stringify(GRAPH));
    r = await u.http.post('/api/hub/workflows', { ...base, username: name, workflow_filename: 'bare.json' });
    assert.equal(r.status, 200, r.text);
    assert.equal((await u.http.get('/api/userdata/workflows%2Fbare.json/publish')).body.share_id, r.body.share_id);
    r = await u.http.post('/api/hub/workflows', { ...base, username: name, workflow_filename: 'workflows/none.json' });
    assert.equal(r.status, 404);
    const theirs = (await other.http.post('/api/workflows', { name: 'theirs', content: GRAPH })).body;
    r = await u.http.post('/api/hub/workflows', { ...base, username: name, workflow_filename: theirs.id });
    assert.equal(r.status, 404, 'another workspace’s workflow id is not a file of this one either');
    const theirUpload = await hubFile(srv, other);
    for (const [patch, error] of [
      [{ asset_ids: undefined }, 'asset_ids must be an array of asset ids'],
      [{ name: '' }, 'name must not be empty'],
      [{ thumbnail_type: 'gif' }, 'thumbnail_type must be one of: image, video, image_comparison'],
      [{ tutorial_url: 'ftp://x' }, 'tutorial_url must be an http(s) URL without credentials'],
      [{ metadata: [1] }, 'metadata must be a JSON object'],
      [{ tags: 'a' }, 'tags must be an array of at most 20 strings'],
      [{ thumbnail_token_or_url: theirUpload.id }, 'thumbnail_token_or_url names no uploaded hub file of this workspace'],
    ] as const) {
      r = await u.http.post('/api/hub/workflows', { ...base, username: name, ...patch });
      assert.equal(r.status, 400, JSON.stringify(patch));
      assert.deepEqual(r.body, { error, code: 'invalid_request', details: {} });
    }
  });

  test('a deleted workspace takes its hub profile, entries and published links with it (its username stays taken)', async () => {
    const u = await signupUser(srv.url, 'hubdel');
    const team = (await u.http.post('/api/workspaces', { name: 'Hub team' })).body;
    const t = client(srv.url, { authorization: `Bearer ${u.token}`, 'x-workspace-id': team.id });
    const name = uname('team');
    assert.equal((await t.post('/api/hub/profiles', { workspace_id: team.id, username: name })).status, 201);
    const w = (await t.post('/api/workflows', { name: 'team pub', content: GRAPH })).body;
    const thumb = 'https://example.test/t.png';
    const pub = await t.post('/api/hub/workflows', { username: name, name: 'Team Entry', workflow_filename: w.id, asset_ids: [], thumbnail_token_or_url: thumb });
    assert.equal(pub.status, 200, pub.text);
    assert.equal((await t.get(`/api/workflows/${w.id}`)).body.thumbnail_url, thumb, 'the hub thumbnail becomes the workflow’s');
    assert.equal((await anon().get(`/api/hub/workflows/${pub.body.share_id}`)).status, 200);
    assert.equal((await anon().get(`/api/workflows/published/${pub.body.share_id}`)).status, 200);
    assert.equal((await u.http.delete(`/api/workspaces/${team.id}`)).status, 204);
    assert.equal((await anon().get(`/api/hub/workflows/${pub.body.share_id}`)).status, 404);
    assert.equal((await anon().get(`/api/workflows/published/${pub.body.share_id}`)).status, 404);
    assert.equal((await anon().get(`/api/hub/profiles/${name}`)).status, 404);
    assert.equal((await anon().get('/api/hub/workflows?search=team%20entry')).body.total, 0);
    assert.ok(!(await anon().get('/api/hub/workflows/index')).body.some((e: any) => e.share_id === pub.body.share_id));
    assert.ok(!(await anon().get(`/api/hub/profiles?search=${name}`)).body.profiles.length);
    assert.equal((await anon().get(`/api/hub/profiles/check?username=${name}`)).body.available, false);
  });

  test('upload URLs: single use, token checked, declared type and size enforced, served with safe headers', async () => {
    const u = await signupUser(srv.url, 'hubup');
    const bytes = await png();
    let r = await u.http.post('/api/hub/assets/upload-url', { filename: 'a.png', content_type: 'image/png', size: bytes.length });
    assert.equal(r.status, 200);
    const { upload_url, asset_url } = r.body;
    assert.ok(upload_url.startsWith(`${srv.url}/api/hub/assets/upload/`));
    assert.equal((await fetch(asset_url)).status, 404, 'nothing uploaded yet');
    const bad = new URL(upload_url);
    bad.searchParams.set('token', 'wrong');
    let put = await fetch(bad, { method: 'PUT', body: new Uint8Array(bytes), headers: { 'content-type': 'image/png' } });
    assert.equal(put.status, 403);
    assert.deepEqual(await put.json(), { error: 'The upload URL is not valid', code: 'invalid_upload_token', details: {} });
    put = await fetch(upload_url, { method: 'PUT', body: new Uint8Array(bytes), headers: { 'content-type': 'text/html' } });
    assert.equal(put.status, 400);
    put = await fetch(upload_url, { method: 'PUT', body: new Uint8Array(bytes.subarray(1)), headers: { 'content-type': 'image/png' } });
    assert.equal(put.status, 400, 'size differs from the declared one');
    put = await fetch(upload_url, { method: 'PUT', body: new Uint8Array(bytes), headers: { 'content-type': 'image/png' } });
    assert.equal(put.status, 200);
    put = await fetch(upload_url, { method: 'PUT', body: new Uint8Array(bytes), headers: { 'content-type': 'image/png' } });
    assert.equal(put.status, 409);
    assert.deepEqual(await put.json(), { error: 'This upload URL was already used', code: 'already_uploaded', details: {} });
    const r2 = await u.http.post('/api/hub/assets/upload-url', { filename: 'big.png', content_type: 'image/png' });
    put = await fetch(r2.body.upload_url, { method: 'PUT', body: new Uint8Array(50 * 1024 * 1024 + 1), headers: { 'content-type': 'image/png' } });
    assert.equal(put.status, 413);
    assert.deepEqual(await put.json(), { error: `A hub file is at most ${50 * 1024 * 1024} bytes`, code: 'payload_too_large', details: { max_bytes: 50 * 1024 * 1024 } });
    const got = await fetch(asset_url);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'image/png');
    assert.equal(got.headers.get('x-content-type-options'), 'nosniff');
    assert.match(got.headers.get('content-security-policy') ?? '', /sandbox/);
    assert.deepEqual(Buffer.from(await got.arrayBuffer()), bytes);
    for (const [body, error] of [
      [{ filename: 'a.html', content_type: 'text/html' }, 'content_type must be one of: image/png, image/jpeg, image/webp, image/gif, image/avif, video/mp4, video/webm'],
      [{ filename: 'a.svg', content_type: 'image/svg+xml' }, 'content_type must be one of: image/png, image/jpeg, image/webp, image/gif, image/avif, video/mp4, video/webm'],
      [{ filename: '../x.png', content_type: 'image/png' }, 'filename must be a file name without folders'],
      [{ filename: 'x.png', content_type: 'image/png', size: 0 }, 'size must be a positive integer'],
      [{ filename: 'x.png', content_type: 'image/png', size: 1e12 }, `size must be at most ${50 * 1024 * 1024} bytes`],
      [{ content_type: 'image/png' }, 'filename must be a string'],
    ] as const) {
      r = await u.http.post('/api/hub/assets/upload-url', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.body, { error, code: 'invalid_request', details: {} });
    }
    assert.equal((await anon().post('/api/hub/assets/upload-url', { filename: 'a.png', content_type: 'image/png' })).status, 401);
    // A workspace holds at most 100 open upload URLs.
    const v = await signupUser(srv.url, 'hubup2');
    const opened = await Promise.all(Array.from({ length: 100 }, () => v.http.post('/api/hub/assets/upload-url', { filename: 'x.png', content_type: 'image/png' })));
    assert.ok(opened.every((x) => x.status === 200));
    r = await v.http.post('/api/hub/assets/upload-url', { filename: 'x.png', content_type: 'image/png' });
    assert.equal(r.status, 429);
    assert.equal(r.body.code, 'too_many_uploads');
    assert.equal((await u.http.post('/api/hub/assets/upload-url', { filename: 'x.png', content_type: 'image/png' })).status, 200, 'per workspace');
  });
});

forEachStorage('hosted runtime: hub moderation', (storage) => {
  let srv: Srv;
  before(async () => {
    srv = await startCloud(storage, { hubModeration: true });
  });
  after(async () => srv.close());

  test('with --hub-moderation a publication is pending (seen only by its workspace) until approved; rejected and deprecated states', async () => {
    const u = await signupUser(srv.url, 'mod');
    const name = uname('frank');
    await u.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: name });
    const w = (await u.http.post('/api/workflows', { name: 'mod wf', content: GRAPH })).body;
    const r = await u.http.post('/api/hub/workflows', { username: name, name: 'Moderated', workflow_filename: w.id, asset_ids: [] });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'pending');
    const share = r.body.share_id;
    const anon = client(srv.url);
    assert.equal((await anon.get(`/api/hub/workflows/${share}`)).status, 404);
    assert.equal((await u.http.get(`/api/hub/workflows/${share}`)).body.status, 'pending');
    assert.equal((await anon.get('/api/hub/workflows?search=moderated')).body.total, 0);
    // The operator lists what waits, and decides.
    const pending = await moderate(srv, { list: true });
    assert.equal(pending.code, 0);
    assert.ok(pending.out.split('\n').some((l) => l.startsWith(`${share}\t${u.workspaceId}\t`) && l.endsWith('\tModerated')), pending.out);
    assert.deepEqual(await moderate(srv, { shareId: 'nope', status: 'approved' }), { code: 1, out: '', err: 'hub-moderate: no hub workflow with share id nope\n' });
    assert.equal((await moderate(srv, { shareId: share, status: 'great' })).code, 2);
    assert.equal((await moderate(srv, {})).code, 2);
    await setStatus(srv, share, 'approved');
    assert.ok(!(await moderate(srv, { list: true })).out.includes(share), 'decided: no longer pending');
    assert.equal((await anon.get('/api/hub/workflows?search=moderated')).body.total, 1);
    await setStatus(srv, share, 'rejected');
    assert.equal((await anon.get(`/api/hub/workflows/${share}`)).status, 404);
    assert.equal((await u.http.get(`/api/hub/workflows/${share}`)).body.status, 'rejected');
    await setStatus(srv, share, 'deprecated');
    assert.equal((await anon.get(`/api/hub/workflows/${share}`)).body.status, 'deprecated', 'still readable by link');
    assert.equal((await anon.get('/api/hub/workflows?search=moderated')).body.total, 0, 'not listed');
  });
});

forEachStorage('hosted runtime: secrets, workflows and hub fuzzed from their OpenAPI', (storage) => {
  test('hostile values in every property and path parameter: 4xx CloudError or success, never 500; stored data intact', async () => {
    const srv = await startCloud(storage);
    try {
      const u = await signupUser(srv.url, 'fuzz');
      const name = uname('fuzzer');
      await u.http.post('/api/hub/profiles', { workspace_id: u.workspaceId, username: name });
      const w = (await u.http.post('/api/workflows', { name: 'fuzz wf', content: GRAPH })).body;
      const s = (await u.http.post('/api/secrets', { name: 'FUZZ', value: 'fuzz-value' })).body;
      await u.http.post('/api/userdata/workflows%2Ffuzz.json', JSON.stringify(GRAPH));
      const pub = (await u.http.post('/api/hub/workflows', { username: name, name: 'fuzz', workflow_filename: w.id, asset_ids: [] })).body;
      const up = (await u.http.post('/api/hub/assets/upload-url', { filename: 'f.png', content_type: 'image/png' })).body;
      const own: Record<string, string> = { id: s.id, workflow_id: w.id, share_id: pub.share_id, username: name, file: 'workflows/fuzz.json', upload_id: up.upload_id, filename: 'f.png' };
      const doc = (await client(srv.url).get('/openapi.json')).body;
      const hostile: unknown[] = ['a\u0000b', 'x\udfffy', 1e308, 2 ** 53 + 1, -1, [['\u0000']], { a: { b: '\ud800' } }, null, 'x'.repeat(70_000)];
      const pathValues = ['%00', '%ED%A0%80', '..%2F..%2Fetc%2Fpasswd', '9'.repeat(300), '%25', ' '];
      let calls = 0;
      for (const [p, item] of Object.entries<any>(doc.paths)) {
        if (!/^\/api\/(workflows|secrets|hub)\b|\/publish$/.test(p)) continue;
        for (const [m, op] of Object.entries<any>(item)) {
          const M = m.toUpperCase();
          const fill = (over: Record<string, string> = {}) => p.replace(/\{([^}]+)\}/g, (_: string, k: string) => over[k] ?? encodeURIComponent(own[k] ?? 'x'));
          let schema = op.requestBody?.content?.['application/json']?.schema ?? {};
          if (schema.$ref) schema = doc.components.schemas[schema.$ref.split('/').pop()] ?? {};
          const fields = Object.keys(schema.properties ?? {});
          const send = async (url: string, body: unknown) => {
            const r = await u.http.request(M, url, M === 'GET' || M === 'DELETE' ? undefined : body, M === 'PUT' && p.includes('/upload/') ? { 'content-type': 'image/png' } : {});
            calls++;
            assert.ok(r.status < 500, `${M} ${url} ${JSON.stringify(body)?.slice(0, 120)}: ${r.status} ${r.text.slice(0, 200)}`);
            if (r.status >= 400 && r.headers.get('content-type')?.includes('json')) assert.equal(typeof r.body.error, 'string', `${M} ${url}: ${r.text.slice(0, 200)}`);
          };
          for (const v of pathValues) {
            const keys = [...p.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]!);
            if (keys.length) await send(fill(Object.fromEntries(keys.map((k) => [k, v]))), {});
          }
          if (M === 'GET' || M === 'DELETE') continue;
          for (const f of fields) for (const v of hostile) await send(fill(), { [f]: v, ...(f === 'name' ? {} : { name: 'n' }) });
          for (const v of hostile) await send(fill(), v);
        }
      }
      assert.ok(calls > 300, `only ${calls} calls`);
      // Query strings too.
      for (const q of ['limit=1e309', 'offset=99999999999999999999999', 'search=%00', 'search=%ED%A0%80', 'sort=%00', 'labels=%00', 'order=%ff', 'username=%00', 'version_id=%00']) {
        for (const path of ['/api/workflows', '/api/hub/workflows', '/api/hub/profiles', '/api/hub/profiles/check', `/api/workflows/${w.id}/content`, `/api/workflows/${w.id}/versions`]) {
          const r = await u.http.get(`${path}?${q}`);
          assert.ok(r.status < 500, `${path}?${q}: ${r.status} ${r.text.slice(0, 200)}`);
        }
      }
      // What was stored before is still there (the fuzz wrote only through validated paths).
      assert.equal((await u.http.get(`/api/secrets/${s.id}`)).body.name === undefined, false);
      assert.equal((await u.http.get(`/api/hub/profiles/me`)).body.username, name);
      assert.equal((await client(srv.url).get(`/api/hub/workflows/${pub.share_id}`)).status === 200 || (await u.http.get(`/api/workflows/${w.id}`)).status === 404, true);
    } finally {
      await srv.close();
    }
  });
});
