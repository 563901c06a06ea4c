/**
 * Workspace secrets of the hosted runtime: CRUD with exact CloudError
 * bodies, encryption at rest (the value is in no response and no stored
 * column), isolation between workspaces, key rotation across restarts, and
 * a node reading a secret by name while it runs (last_used_at set then),
 * against a loopback OpenAI-compatible endpoint.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { cleanupConfig, client, forEachStorage } from '@svc/testkit';
import { buildApp, openWorkflowStorage } from '../src/app.ts';
import { SecretBox, loadSecretKeys } from '../src/domain/cloud/secret-box.ts';
import { isCloudError, signupUser, startCloud } from './cloud-helpers.ts';
import { startWorkflow, waitJob } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startCloud>>;

const VALUE = 'hf_secret-value-0123456789abcdefVALUE';
const K1 = 'a'.repeat(64);
const K2 = Buffer.alloc(32, 7).toString('base64');

async function dbRows(cfg: Srv['cfg'], table: string): Promise<any[]> {
  const storage = await openWorkflowStorage(cfg);
  try {
    return await storage.db.selectFrom(table).selectAll().execute();
  } finally {
    await storage.close();
  }
}

/** A loopback chat-completions endpoint that records the Authorization header of each call. */
async function fakeEndpoint(): Promise<{ url: string; auth: string[]; close(): Promise<void> }> {
  const auth: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      auth.push(String(req.headers.authorization ?? ''));
      const text = JSON.stringify({ id: 'c', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    auth,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const chat = (inputs: Record<string, unknown>) => ({
  '1': { class_type: 'OpenAICompatibleChat', inputs: { prompt: 'hi', ...inputs } },
  '2': { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
});

test('SecretBox: AES-GCM bound to its row; rotation opens old ciphertexts; tampering and unknown keys fail', () => {
  const [k1] = loadSecretKeys({ secretsKey: K1 }, '/nonexistent');
  const [k2] = loadSecretKeys({ secretsKey: `second:${K2}` }, '/nonexistent');
  const a = new SecretBox([k1!]);
  const sealed = a.seal('v', 'row-1');
  assert.ok(!sealed.ciphertext.includes('v.') || sealed.ciphertext.startsWith('v1.'));
  assert.equal(a.open(sealed.keyId, sealed.ciphertext, 'row-1'), 'v');
  assert.equal(a.open(sealed.keyId, sealed.ciphertext, 'row-2'), null, 'bound to its row');
  const parts = sealed.ciphertext.split('.');
  parts[3] = Buffer.from('x').toString('base64url');
  assert.equal(a.open(sealed.keyId, parts.join('.'), 'row-1'), null, 'tampered');
  const rotated = new SecretBox([k2!, k1!]);
  assert.equal(rotated.activeKeyId, 'second');
  assert.equal(rotated.open(sealed.keyId, sealed.ciphertext, 'row-1'), 'v');
  assert.equal(new SecretBox([k2!]).open(sealed.keyId, sealed.ciphertext, 'row-1'), null);
  assert.throws(() => loadSecretKeys({ secretsKey: 'short' }, '/x'), /32 bytes/);
  assert.throws(() => loadSecretKeys({ secretsKey: `${K1},${K1}` }, '/x'), /same id/);
  // Without configuration, one key is generated once under the data dir and kept.
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wf-secret-key-'));
  try {
    const g1 = loadSecretKeys({}, dir, {});
    const g2 = loadSecretKeys({}, dir, {});
    assert.equal(g1[0]!.id, g2[0]!.id);
    assert.equal(fs.statSync(path.join(dir, 'secrets.key')).mode & 0o077, 0, 'owner-only file');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

forEachStorage('hosted runtime: workspace secrets', (storage) => {
  let srv: Srv;
  let endpoint: Awaited<ReturnType<typeof fakeEndpoint>>;
  before(async () => {
    endpoint = await fakeEndpoint();
    srv = await startCloud(storage, { openaiBaseUrl: endpoint.url, secretsKey: K1 });
  });
  after(async () => {
    await srv.close();
    await endpoint.close();
  });

  test('create, list, get, upsert by name, PATCH (409 on a name clash), delete; values never returned nor stored in clear', async () => {
    const u = await signupUser(srv.url, 'sec');
    let r = await u.http.post('/api/secrets', { name: 'HF_TOKEN', value: VALUE, provider: 'huggingface' });
    assert.equal(r.status, 201, r.text);
    const id = r.body.id;
    assert.match(id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(Object.keys(r.body).sort(), ['created_at', 'id', 'name', 'provider', 'updated_at']);
    assert.equal(r.body.name, 'HF_TOKEN');
    assert.equal(r.body.provider, 'huggingface');
    assert.ok(Date.parse(r.body.created_at) > 0);
    r = await u.http.post('/api/secrets', { name: 'civitai', value: 'other-value-123' });
    assert.equal(r.status, 201);
    assert.equal(r.body.provider, undefined);
    const second = r.body.id;
    r = await u.http.get('/api/secrets');
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.map((s: any) => s.name),
      ['HF_TOKEN', 'civitai'],
    );
    // The same name again replaces the value of that secret.
    r = await u.http.post('/api/secrets', { name: 'HF_TOKEN', value: `${VALUE}-2` });
    assert.equal(r.status, 201);
    assert.equal(r.body.id, id);
    assert.equal(r.body.provider, 'huggingface');
    r = await u.http.get(`/api/secrets/${id}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'HF_TOKEN');
    r = await u.http.patch(`/api/secrets/${id}`, { name: 'civitai' });
    assert.equal(r.status, 409);
    assert.deepEqual(r.body, { error: 'A secret with this name already exists', code: 'secret_exists', details: {} });
    r = await u.http.patch(`/api/secrets/${id}`, { name: 'HF', secret_value: VALUE });
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'HF');
    r = await u.http.patch(`/api/secrets/${id}`, {});
    assert.equal(r.status, 200, 'nothing to change is fine');
    for (const text of [(await u.http.get('/api/secrets')).text, (await u.http.get(`/api/secrets/${id}`)).text]) assert.ok(!text.includes(VALUE));
    const rows = await dbRows(srv.cfg, 'cloud_secrets');
    const row = rows.find((x) => x.id === id);
    assert.ok(row.key_id && row.ciphertext.startsWith('v1.'));
    assert.ok(!JSON.stringify(rows).includes(VALUE), 'no column holds the value');
    r = await u.http.delete(`/api/secrets/${second}`);
    assert.equal(r.status, 204);
    r = await u.http.get(`/api/secrets/${second}`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.body, { error: 'Secret not found', code: 'not_found', details: {} });
    assert.equal((await u.http.delete(`/api/secrets/${second}`)).status, 404);
    assert.equal((await u.http.get('/api/secrets/not-a-uuid')).status, 404);
    assert.equal((await u.http.patch('/api/secrets/not-a-uuid', { name: 'x' })).status, 404);
  });

  test('bad bodies: 400 CloudError, nothing stored', async () => {
    const u = await signupUser(srv.url, 'secbad');
    const cases: Array<[unknown, string]> = [
      [{ value: 'v' }, 'name must be a string'],
      [{ name: '', value: 'v' }, 'name must not be empty'],
      [{ name: 'x'.repeat(101), value: 'v' }, 'name must be at most 100 characters'],
      [{ name: 'a\u0000b', value: 'v' }, 'name contains invalid characters'],
      [{ name: '\ud800', value: 'v' }, 'name contains invalid characters'],
      [{ name: 'n' }, 'value must be a non-empty string'],
      [{ name: 'n', value: '' }, 'value must be a non-empty string'],
      [{ name: 'n', value: 5 }, 'value must be a non-empty string'],
      [{ name: 'n', value: '\udc00' }, 'value contains invalid characters'],
      [{ name: 'n', value: 'x'.repeat(16 * 1024 + 1) }, 'value must be at most 16384 characters'],
      [{ name: 'n', value: 'v', provider: 'Not Valid' }, 'provider must be a lowercase identifier such as huggingface or civitai'],
      [[1], 'The request body must be a JSON object'],
    ];
    for (const [body, error] of cases) {
      const r = await u.http.post('/api/secrets', body);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 60));
      assert.deepEqual(r.body, { error, code: 'invalid_request', details: {} });
    }
    const made = await u.http.post('/api/secrets', { name: 'n', value: 'v' });
    assert.equal((await u.http.patch(`/api/secrets/${made.body.id}`, { secret_value: '' })).status, 400);
    assert.equal((await u.http.patch(`/api/secrets/${made.body.id}`, { name: 7 })).status, 400);
    assert.equal((await u.http.get('/api/secrets')).body.length, 1);
    // At most 200 secrets per workspace.
    const many = await signupUser(srv.url, 'secmany');
    for (let i = 0; i < 200; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => many.http.post('/api/secrets', { name: `s${i + j}`, value: 'v' })));
    const over = await many.http.post('/api/secrets', { name: 'one-more', value: 'v' });
    assert.equal(over.status, 409);
    assert.deepEqual(over.body, { error: 'A workspace keeps at most 200 secrets', code: 'too_many_secrets', details: {} });
    assert.equal((await many.http.post('/api/secrets', { name: 's0', value: 'replaced' })).status, 201, 'replacing one is fine');
    const anon = await client(srv.url).get('/api/secrets');
    assert.equal(anon.status, 401);
    assert.ok(isCloudError(anon.body, 'unauthorized'));
  });

  test("another workspace sees, changes and uses none of a workspace's secrets", async () => {
    const a = await signupUser(srv.url, 'seca');
    const b = await signupUser(srv.url, 'secb');
    const s = (await b.http.post('/api/secrets', { name: 'B_KEY', value: VALUE })).body;
    assert.equal((await a.http.get(`/api/secrets/${s.id}`)).status, 404);
    assert.equal((await a.http.patch(`/api/secrets/${s.id}`, { name: 'stolen', secret_value: 'x' })).status, 404);
    assert.equal((await a.http.delete(`/api/secrets/${s.id}`)).status, 404);
    assert.deepEqual((await a.http.get('/api/secrets')).body, []);
    // A's prompt naming B's secret finds nothing.
    const p = await a.http.post('/api/prompt', { prompt: chat({ api_key_secret: 'B_KEY' }) });
    assert.equal(p.status, 200, p.text);
    const job = await waitJob(a.http, p.body.prompt_id);
    assert.equal(job.status, 'failed');
    assert.match(JSON.stringify(job.execution_error), /No secret named \\"B_KEY\\" is stored in this workspace/);
    assert.ok(!endpoint.auth.includes(`Bearer ${VALUE}`));
    const after = (await b.http.get(`/api/secrets/${s.id}`)).body;
    assert.equal(after.name, 'B_KEY');
    assert.equal(after.last_used_at, undefined);
  });

  test('in a team, members change and delete only the secrets they stored; admins any; every member’s prompts may use them', async () => {
    const owner = await signupUser(srv.url, 'secowner');
    const member = await signupUser(srv.url, 'secmember');
    const team = (await owner.http.post('/api/workspaces', { name: 'Secret team' })).body;
    const inWs = (u: typeof owner) => client(srv.url, { authorization: `Bearer ${u.token}`, 'x-workspace-id': team.id });
    const inv = await inWs(owner).post('/api/workspace/invites', { email: member.email, role: 'member' });
    assert.equal((await member.http.post(`/api/invites/${inv.body.token}/accept`)).status, 200);
    const o = inWs(owner);
    const m = inWs(member);
    const teamKey = (await o.post('/api/secrets', { name: 'TEAM_KEY', value: VALUE })).body;
    const forbidden = { error: 'Only the secret’s creator or a workspace admin can change or delete it', code: 'forbidden', details: {} };
    let r = await m.patch(`/api/secrets/${teamKey.id}`, { secret_value: 'hijacked' });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, forbidden);
    r = await m.post('/api/secrets', { name: 'TEAM_KEY', value: 'hijacked' });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, forbidden);
    assert.equal((await m.delete(`/api/secrets/${teamKey.id}`)).status, 403);
    assert.equal((await m.get(`/api/secrets/${teamKey.id}`)).status, 200, 'members see the metadata');
    const mine = (await m.post('/api/secrets', { name: 'MEMBER_KEY', value: 'member-value' })).body;
    assert.equal((await m.patch(`/api/secrets/${mine.id}`, { name: 'MEMBER_KEY_2' })).status, 200);
    assert.equal((await o.patch(`/api/secrets/${mine.id}`, { secret_value: 'set-by-owner' })).status, 200, 'admins change any');
    assert.equal((await m.delete(`/api/secrets/${mine.id}`)).status, 204);
    const p = await m.post('/api/prompt', { prompt: chat({ api_key_secret: 'TEAM_KEY', prompt: 'member run' }) });
    const job = await waitJob(m, p.body.prompt_id);
    assert.equal(job.status, 'completed', JSON.stringify(job.execution_error));
    assert.ok(endpoint.auth.includes(`Bearer ${VALUE}`));
  });

  test('a node reads the secret by name at execution time; last_used_at is set then; the value stays out of history', async () => {
    const u = await signupUser(srv.url, 'secnode');
    const s = (await u.http.post('/api/secrets', { name: 'OPENAI', value: VALUE })).body;
    assert.equal(s.last_used_at, undefined);
    const before = Date.now();
    const p = await u.http.post('/api/prompt', { prompt: chat({ api_key_secret: 'OPENAI' }) });
    const job = await waitJob(u.http, p.body.prompt_id);
    assert.equal(job.status, 'completed', JSON.stringify(job.execution_error));
    assert.ok(endpoint.auth.includes(`Bearer ${VALUE}`));
    const meta = (await u.http.get(`/api/secrets/${s.id}`)).body;
    assert.ok(Date.parse(meta.last_used_at) >= before - 1000, meta.last_used_at);
    for (const url of [`/api/jobs/${p.body.prompt_id}`, `/api/history/${p.body.prompt_id}`, '/api/secrets']) assert.ok(!(await u.http.get(url)).text.includes(VALUE), url);
  });
});

forEachStorage('hosted runtime: secrets keys rotate across restarts', (storage) => {
  test('a value sealed under the old key opens after rotation and is re-sealed under the new one on use', async () => {
    const endpoint = await fakeEndpoint();
    const first = await startCloud(storage, { openaiBaseUrl: endpoint.url, secretsKey: K1 });
    const cfg = first.cfg;
    try {
      const u = await signupUser(first.url, 'rot');
      const s = (await u.http.post('/api/secrets', { name: 'K', value: VALUE })).body;
      const oldKeyId = (await dbRows(cfg, 'cloud_secrets'))[0].key_id;
      await first.app.close();
      const app = await buildApp({ ...cfg, flags: { ...cfg.flags, secretsKey: `new:${K2},${K1}` } });
      try {
        const url = await app.listen({ port: 0, host: '127.0.0.1' });
        const h = client(url, { authorization: `Bearer ${u.token}` });
        const p = await h.post('/api/prompt', { prompt: chat({ api_key_secret: 'K' }) });
        const job = await waitJob(h, p.body.prompt_id);
        assert.equal(job.status, 'completed', JSON.stringify(job.execution_error));
        assert.ok(endpoint.auth.includes(`Bearer ${VALUE}`));
        const row = (await dbRows(cfg, 'cloud_secrets'))[0];
        assert.notEqual(oldKeyId, 'new');
        assert.equal(row.key_id, 'new');
        assert.equal((await h.get(`/api/secrets/${s.id}`)).status, 200);
      } finally {
        await app.close();
      }
      // Only the new key now: the re-sealed value still opens.
      const app2 = await buildApp({ ...cfg, flags: { ...cfg.flags, secretsKey: `new:${K2}` } });
      try {
        const url = await app2.listen({ port: 0, host: '127.0.0.1' });
        const h = client(url, { authorization: `Bearer ${u.token}` });
        endpoint.auth.length = 0;
        const job = await waitJob(h, (await h.post('/api/prompt', { prompt: chat({ api_key_secret: 'K', prompt: 'again' }) })).body.prompt_id);
        assert.equal(job.status, 'completed', JSON.stringify(job.execution_error));
        assert.deepEqual(endpoint.auth, [`Bearer ${VALUE}`]);
      } finally {
        await app2.close();
      }
    } finally {
      await cleanupConfig(cfg);
      await endpoint.close();
    }
  });
});

test('the local runtime has no /api/secrets, and a node naming a stored secret fails with a clear message', async () => {
  const srv = await startWorkflow('sqlite', { openaiBaseUrl: 'http://127.0.0.1:9/v1' });
  try {
    assert.equal((await srv.http.get('/api/secrets')).status, 404);
    assert.equal((await srv.http.post('/api/secrets', { name: 'a', value: 'b' })).status, 404);
    const p = await srv.http.post('/prompt', { prompt: chat({ api_key_secret: 'K' }) });
    const job = await waitJob(srv.http, p.body.prompt_id);
    assert.equal(job.status, 'failed');
    assert.match(JSON.stringify(job.execution_error), /stored secrets exist only on the hosted runtime/);
  } finally {
    await srv.close();
  }
});
