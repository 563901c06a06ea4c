import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import WebSocket from 'ws';
import { client, forEachStorage } from '@svc/testkit';
import { bearer, signupUser, TEST_LIMITS, type TestUser } from './cloud-helpers.ts';
import { gateEntered, gatePrompt, pollPause, releaseGate, startWorkflow, textPrompt, waitJob } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

/** What workspace B owns; none of it may reach A. */
interface Victim {
  user: TestUser;
  done: string;
  running: string;
  pending: string;
  outputFile: string;
  assetId?: string;
  keyId: string;
  key: string;
  teamId: string;
  inviteId: string;
  inviteToken: string;
  gate: string;
  secretId: string;
  workflowId: string;
  shareId: string;
  uploadId: string;
  uploadUrl: string;
  hubUsername: string;
  taskId: string;
  exportName: string;
  billingOpId: string;
}

const SECRET_TEXT = 'b-secret-text-7f3a';
const SECRET_SETTING = 'b-setting-value-91c2';
const SECRET_USERDATA = 'b-secret-userdata-55d1';
const USERDATA_FILE = 'b-private-workflow.json';
const SECRET_VALUE = 'b-stored-secret-value-4e8d';
const SECRET_NAME = 'b-secret-name-c1';
const WF_NAME = 'b-private-saved-workflow-9a';
const WF_CONTENT = 'b-workflow-graph-text-77e0';

function wsUrl(srv: Srv, token: string, clientId: string): string {
  return `${srv.url.replace(/^http/, 'ws')}/ws?clientId=${clientId}&token=${encodeURIComponent(token)}`;
}

async function setupVictim(srv: Srv, gate: string): Promise<Victim> {
  const user = await signupUser(srv.url, 'victim');
  const h = user.http;
  let r = await h.post('/api/prompt', {
    prompt: {
      ...textPrompt(SECRET_TEXT),
      3: { class_type: 'EmptyImage', inputs: { width: 4, height: 4, batch_size: 1, color: 0x112233 } },
      4: { class_type: 'SaveImage', inputs: { images: ['3', 0], filename_prefix: 'bsecretout' } },
    },
  });
  assert.equal(r.status, 200, r.text);
  const done = r.body.prompt_id;
  const job = await waitJob(h, done);
  assert.equal(job.status, 'completed', JSON.stringify(job.execution_error));
  const outputFile = job.outputs['4'].images[0].filename;
  r = await h.post('/api/prompt', { prompt: gatePrompt(gate) });
  const running = r.body.prompt_id;
  await gateEntered(gate);
  r = await h.post('/api/prompt', { prompt: textPrompt(`${SECRET_TEXT}-pending`) });
  const pending = r.body.prompt_id;
  assert.equal((await h.post('/api/settings/Secret.Setting', JSON.stringify(SECRET_SETTING))).status, 200);
  assert.equal((await h.post(`/api/userdata/${USERDATA_FILE}`, JSON.stringify({ v: SECRET_USERDATA }))).status, 200);
  const assets = await h.get('/api/assets');
  const assetId = assets.status === 200 ? assets.body.assets?.find((a: any) => a.name === outputFile)?.id : undefined;
  r = await h.post('/api/workspace/api-keys', { name: 'b-key' });
  const team = await h.post('/api/workspaces', { name: 'B team' });
  const inv = await bearer(srv.url, user.token).post('/api/workspace/invites', { email: 'someone-b@example.test' }, { 'x-workspace-id': team.body.id });
  assert.equal(inv.status, 201);
  const secret = await h.post('/api/secrets', { name: SECRET_NAME, value: SECRET_VALUE });
  assert.equal(secret.status, 201);
  const wf = await h.post('/api/workflows', { name: WF_NAME, content: { note: WF_CONTENT } });
  assert.equal(wf.status, 201);
  // The hub: a profile and a published (public) workflow B alone may unpublish; an upload URL only B holds.
  const hubUsername = `victim${process.pid % 1000}${Math.random().toString(36).slice(2, 7)}`;
  assert.equal((await h.post('/api/hub/profiles', { workspace_id: user.workspaceId, username: hubUsername })).status, 201);
  const pubWf = await h.post('/api/workflows', { name: 'b public', content: { public: true } });
  const hubPub = await h.post('/api/hub/workflows', { username: hubUsername, name: 'B public', workflow_filename: pubWf.body.id, asset_ids: [] });
  assert.equal(hubPub.status, 200, hubPub.text);
  const upload = await h.post('/api/hub/assets/upload-url', { filename: 'b.png', content_type: 'image/png' });
  assert.equal(upload.status, 200);
  // Cloud operations: a finished export (its task and archive) and a paid top-up.
  const ex = await h.post('/api/assets/export', { asset_ids: [assetId], export_name: 'b-private-export' });
  assert.equal(ex.status, 202, ex.text);
  for (let attempt = 0; ; attempt++) {
    const t = await h.get(`/api/tasks/${ex.body.task_id}`);
    assert.notEqual(t.body.status, 'failed', t.text);
    if (t.body.status === 'completed') break;
    await pollPause(attempt);
  }
  assert.equal((await h.post('/api/billing/topup', { amount: 5 })).status, 200);
  const billingOpId = (await h.get('/api/billing/events?type=topup')).body.events[0].op_id;
  return { taskId: ex.body.task_id, exportName: 'b-private-export.zip', billingOpId, user, done, running, pending, outputFile, assetId, keyId: r.body.id, key: r.body.key, teamId: team.body.id, inviteId: inv.body.id, inviteToken: inv.body.token, gate, secretId: secret.body.id, workflowId: wf.body.id, shareId: hubPub.body.share_id, uploadId: upload.body.upload_id, uploadUrl: upload.body.upload_url, hubUsername };
}

/** B's data is all still there, unchanged. */
async function victimIntact(srv: Srv, v: Victim): Promise<void> {
  const h = v.user.http;
  const job = await h.get(`/api/jobs/${v.done}`);
  assert.equal(job.status, 200);
  assert.equal(job.body.status, 'completed');
  const q = await h.get('/api/queue');
  assert.ok(JSON.stringify(q.body.queue_running).includes(v.running), 'B running prompt still running');
  assert.ok(JSON.stringify(q.body.queue_pending).includes(v.pending), 'B pending prompt still pending');
  const s = await h.get('/api/settings/Secret.Setting');
  assert.equal(s.body, SECRET_SETTING);
  const u = await h.get(`/api/userdata/${USERDATA_FILE}`);
  assert.equal(u.status, 200);
  assert.ok(u.text.includes(SECRET_USERDATA));
  const view = await h.get(`/api/view?filename=${v.outputFile}&type=output`);
  assert.equal(view.status, 200);
  if (v.assetId) assert.equal((await h.get(`/api/assets/${v.assetId}`)).status, 200);
  assert.equal((await client(srv.url, { 'x-api-key': v.key }).get('/api/jobs')).status, 200);
  assert.equal((await h.get(`/api/workspaces/${v.teamId}`)).status, 200);
  const invites = await bearer(srv.url, v.user.token).get('/api/workspace/invites', { 'x-workspace-id': v.teamId });
  assert.ok(invites.body.some((i: any) => i.id === v.inviteId));
  const secret = await h.get(`/api/secrets/${v.secretId}`);
  assert.equal(secret.body.name, SECRET_NAME);
  assert.equal(secret.body.last_used_at, undefined, 'nobody used B’s secret');
  const wf = await h.get(`/api/workflows/${v.workflowId}`);
  assert.equal(wf.body.name, WF_NAME);
  assert.equal(wf.body.latest_version, 1);
  assert.equal((await h.get(`/api/workflows/${v.workflowId}/content`)).body.note, WF_CONTENT);
  const pub = await client(srv.url).get(`/api/hub/workflows/${v.shareId}`);
  assert.equal(pub.status, 200, 'B’s hub entry is still published');
  assert.equal(pub.body.name, 'B public');
  assert.equal((await client(srv.url).get(`/api/hub/profiles/${v.hubUsername}`)).body.username, v.hubUsername);
  const put = await fetch(v.uploadUrl, { method: 'PUT', body: new Uint8Array([1, 2, 3]), headers: { 'content-type': 'image/png' } });
  assert.equal(put.status, 200, 'B’s upload URL was not used by anyone else');
  assert.equal((await h.get(`/api/tasks/${v.taskId}`)).body.status, 'completed');
  assert.equal((await h.get(`/api/assets/exports/${v.exportName}`)).status, 200);
  assert.equal((await h.get(`/api/billing/ops/${v.billingOpId}`)).body.status, 'completed');
}

forEachStorage('hosted runtime: tenant isolation generated from the route table', (storage) => {
  let srv: Srv;
  let victim: Victim;
  let attacker: TestUser;
  const gate = `iso-${storage}-${process.pid}`;

  before(async () => {
    srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS }, { packs: ['gate-pack.mjs'] });
    victim = await setupVictim(srv, gate);
    attacker = await signupUser(srv.url, 'attacker');
  });
  after(async () => {
    releaseGate(gate);
    await srv.close();
  });

  test('every route of the OpenAPI document, called by workspace A with workspace B’s ids, reads and changes nothing of B', async () => {
    const doc = (await client(srv.url).get('/openapi.json')).body;
    const v = victim;
    // A's own settings and user data hold what A wrote (B's ids in hostile bodies and paths): only B's contents count there.
    const secretsOf = (sent: string): string[] =>
      (/settings|userdata/.test(sent) ? [SECRET_SETTING, SECRET_USERDATA] : [SECRET_TEXT, SECRET_SETTING, SECRET_USERDATA, v.done, v.running, v.pending, v.outputFile, v.assetId, v.keyId, v.key, v.key.slice(0, 12), v.user.email, v.inviteId, v.inviteToken, v.teamId, v.user.workspaceId, USERDATA_FILE, SECRET_VALUE, SECRET_NAME, v.secretId, WF_NAME, WF_CONTENT, v.workflowId, new URL(v.uploadUrl).searchParams.get('token')!, v.taskId, v.billingOpId])
        .filter((s): s is string => typeof s === 'string')
        .filter((s) => !sent.includes(s) && !sent.includes(encodeURIComponent(s)));
    const candidates: Record<string, string[]> = {
      job_id: [v.done, v.running, v.pending],
      prompt_id: [v.done, v.running, v.pending],
      id: [v.assetId ?? 'none', 'Secret.Setting', v.teamId, v.user.workspaceId, v.keyId, v.secretId, v.billingOpId],
      task_id: [v.taskId],
      exportName: [v.exportName],
      file: [USERDATA_FILE],
      dest: ['stolen.json'],
      userId: [v.user.id],
      user_id: [v.user.id],
      inviteId: [v.inviteId],
      workflow_id: [v.workflowId],
      share_id: [v.shareId],
      upload_id: [v.uploadId],
      username: [v.hubUsername],
      token: [v.inviteToken],
    };
    const hostileBody = { delete: [v.done, v.running, v.pending], clear: true, prompt_id: v.running, id: v.assetId, asset_id: v.assetId, hash: 'x', name: 'x', tags: ['x'], decision: 'deny', workspace_id: v.teamId, base_version: 1, workflow_json: { stolen: true }, secret_value: 'overwritten' };
    const skip = new Set(['POST /api/auth/session', 'DELETE /api/auth/session', 'POST /api/workspace/leave']);
    let calls = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of Object.keys(item)) {
        const M = method.toUpperCase();
        if (skip.has(`${M} ${path}`)) continue;
        const params = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
        const choices = params.length === 0 ? [{}] : (candidates[params[0]!] ?? ['x']).map((c) => Object.fromEntries(params.map((p, i) => [p, i === 0 ? c : (candidates[p]?.[0] ?? 'x')])));
        for (const choice of choices) {
          const url = path.replace(/\{([^}]+)\}/g, (_: string, p: string) => encodeURIComponent((choice as Record<string, string>)[p]!));
          const body = M === 'GET' || M === 'HEAD' || M === 'DELETE' ? undefined : hostileBody;
          const r = await attacker.http.request(M, url, body);
          calls++;
          assert.ok(r.status < 500, `${M} ${url}: ${r.status} ${r.text.slice(0, 200)}`);
          for (const s of secretsOf(url + JSON.stringify(body ?? ''))) assert.ok(!r.text.includes(s), `${M} ${url} leaked ${s}: ${r.text.slice(0, 300)}`);
        }
      }
    }
    assert.ok(calls > 60, `only ${calls} calls`);
    // Routes that take B's data in the query string.
    for (const url of [
      `/api/view?filename=${v.outputFile}&type=output`,
      `/api/view?filename=${v.outputFile}`,
      `/view?filename=${v.outputFile}&type=output`,
      `/api/jobs?status=completed,in_progress,pending`,
      `/api/history?max_items=100`,
      `/api/assets?include_tags=output`,
      `/api/userdata?dir=.&recurse=true`,
      `/api/v2/userdata`,
      `/api/settings`,
    ]) {
      const r = await attacker.http.get(url);
      if (url.includes('/view')) assert.equal(r.status, 404, url);
      for (const s of secretsOf(url)) assert.ok(!r.text.includes(s), `${url} leaked ${s}`);
    }
    // An API key and a bare-path request of A see nothing of B either.
    const key = (await attacker.http.post('/api/workspace/api-keys', { name: 'a' })).body.key;
    for (const url of ['/queue', '/history', `/history/${v.done}`, `/api/jobs/${v.done}`]) {
      const r = await client(srv.url, { 'x-api-key': key }).get(url);
      for (const s of secretsOf(url)) assert.ok(!r.text.includes(s), `${url} (API key) leaked ${s}`);
    }
    await victimIntact(srv, v);
  });

  test('/ws: needs a credential, and a socket of A (even with B’s client id) receives none of B’s messages', async () => {
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${srv.url.replace(/^http/, 'ws')}/ws?clientId=x`);
      ws.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    assert.equal(refused, 401);
    const b = await signupUser(srv.url, 'wsb');
    const sharedId = `shared-client-${storage}`;
    const open = (token: string) => new WsClientWithToken(srv, token, sharedId);
    const bs = open(b.token);
    const as = open(attacker.token);
    await Promise.all([bs.opened, as.opened]);
    releaseGate(gate); // let the earlier victim's queue drain so these prompts run
    const withClient = await b.http.post('/api/prompt', { prompt: textPrompt('ws-b-secret-1'), client_id: sharedId });
    const broadcast = await b.http.post('/api/prompt', { prompt: textPrompt('ws-b-secret-2') });
    await bs.until((ms) => ms.some((m) => m.type === 'executing' && m.data?.node === null && m.data?.prompt_id === withClient.body.prompt_id));
    await waitJob(b.http, broadcast.body.prompt_id);
    // A's own prompt on A's socket: once it is done, anything B's prompts sent earlier has arrived.
    const mine = await attacker.http.post('/api/prompt', { prompt: textPrompt('ws-a'), client_id: sharedId });
    await as.until((ms) => ms.some((m) => m.type === 'executing' && m.data?.node === null && m.data?.prompt_id === mine.body.prompt_id));
    const seen = JSON.stringify(as.messages);
    for (const s of [withClient.body.prompt_id, broadcast.body.prompt_id, 'ws-b-secret']) assert.ok(!seen.includes(s), `A's socket saw ${s}`);
    assert.ok(JSON.stringify(bs.messages).includes(withClient.body.prompt_id));
    bs.close();
    as.close();
  });
});

/** A recording socket opened with a token in the query (what browsers and SDKs without headers do). */
class WsClientWithToken {
  readonly messages: Array<{ type: string; data: any }> = [];
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  private waiters: Array<() => void> = [];
  constructor(srv: Srv, token: string, clientId: string) {
    this.ws = new WebSocket(wsUrl(srv, token, clientId));
    this.opened = new Promise((res, rej) => {
      this.ws.once('open', () => res());
      this.ws.once('error', rej);
    });
    this.ws.on('message', (d, bin) => {
      if (!bin) this.messages.push(JSON.parse(String(d)));
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    });
  }
  async until(pred: (m: Array<{ type: string; data: any }>) => boolean): Promise<void> {
    while (!pred(this.messages)) await new Promise<void>((r) => this.waiters.push(r));
  }
  close(): void {
    this.ws.terminate();
  }
}
