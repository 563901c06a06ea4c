import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, forEachStorage } from '@svc/testkit';
import { isCloudError, signupUser, startCloud, type Http, type TestUser } from './cloud-helpers.ts';

type Srv = Awaited<ReturnType<typeof startCloud>>;

forEachStorage('hosted runtime: workspaces, members, invites, API keys', (storage) => {
  let srv: Srv;
  before(async () => {
    srv = await startCloud(storage);
  });
  after(async () => srv.close());

  /** A client acting in workspace `wid` with the user's login token (X-Workspace-Id). */
  const inWs = (u: TestUser, wid: string): Http => client(srv.url, { authorization: `Bearer ${u.token}`, 'x-workspace-id': wid });

  /** Owner with a team; admin and member joined through invites. */
  async function team() {
    const owner = await signupUser(srv.url, 'owner');
    const admin = await signupUser(srv.url, 'admin');
    const member = await signupUser(srv.url, 'member');
    const w = await owner.http.post('/api/workspaces', { name: 'Team A' });
    assert.equal(w.status, 201);
    const wid = w.body.id as string;
    for (const [u, role] of [
      [admin, 'admin'],
      [member, 'member'],
    ] as const) {
      const inv = await inWs(owner, wid).post('/api/workspace/invites', { email: u.email, role });
      assert.equal(inv.status, 201, inv.text);
      const acc = await u.http.post(`/api/invites/${inv.body.token}/accept`);
      assert.equal(acc.status, 200, acc.text);
      assert.equal(acc.body.id, wid);
    }
    return { owner, admin, member, wid };
  }

  test('workspaces: create, list, get, PATCH, soft DELETE; the personal one cannot be deleted', async () => {
    const u = await signupUser(srv.url, 'ws');
    let r = await u.http.post('/api/workspaces', { name: 'Studio' });
    assert.equal(r.status, 201);
    assert.equal(r.body.name, 'Studio');
    assert.equal(r.body.owner_id, u.id);
    assert.equal(r.body.member_count, 1);
    assert.ok(Date.parse(r.body.created_at) > 0 && Date.parse(r.body.updated_at) > 0);
    const wid = r.body.id;
    r = await u.http.get('/api/workspaces');
    assert.deepEqual(
      r.body.map((w: any) => w.id),
      [u.workspaceId, wid],
    );
    r = await u.http.get(`/api/workspaces/${wid}`);
    assert.equal(r.body.name, 'Studio');
    r = await u.http.patch(`/api/workspaces/${wid}`, { name: 'Studio 2' });
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'Studio 2');
    for (const bad of [{ name: '' }, { name: 'x'.repeat(101) }, { name: 7 }]) {
      const e = await u.http.patch(`/api/workspaces/${wid}`, bad);
      assert.equal(e.status, 400, JSON.stringify(bad));
      assert.ok(isCloudError(e.body, 'invalid_request'));
      assert.equal((await u.http.post('/api/workspaces', bad)).status, 400);
    }
    assert.equal((await u.http.post('/api/workspaces', {})).status, 400);
    r = await u.http.delete(`/api/workspaces/${u.workspaceId}`);
    assert.equal(r.status, 403);
    assert.ok(isCloudError(r.body, 'personal_workspace'));
    assert.equal((await u.http.delete(`/api/workspaces/${wid}`)).status, 204);
    r = await u.http.get(`/api/workspaces/${wid}`);
    assert.equal(r.status, 404);
    assert.ok(isCloudError(r.body, 'not_found'));
    assert.deepEqual(
      (await u.http.get('/api/workspaces')).body.map((w: any) => w.id),
      [u.workspaceId],
    );
    assert.equal((await u.http.delete(`/api/workspaces/${wid}`)).status, 404);
    // Someone else's workspace does not exist for you.
    const other = await signupUser(srv.url, 'other');
    for (const m of ['GET', 'PATCH', 'DELETE']) assert.equal((await other.http.request(m, `/api/workspaces/${u.workspaceId}`, m === 'PATCH' ? { name: 'x' } : undefined)).status, 404);
  });

  test('invites and members: roles enforced (owner > admin > member), CloudError bodies', async () => {
    const { owner, admin, member, wid } = await team();
    let r = await inWs(member, wid).get('/api/workspace/members');
    assert.equal(r.status, 200);
    const roles = Object.fromEntries(r.body.map((m: any) => [m.user_id, m.role]));
    assert.deepEqual(roles, { [owner.id]: 'owner', [admin.id]: 'admin', [member.id]: 'member' });
    assert.ok(r.body.every((m: any) => m.email && m.joined_at));
    assert.equal((await owner.http.get(`/api/workspaces/${wid}`)).body.member_count, 3);
    // Members may not invite, list invites or change roles.
    r = await inWs(member, wid).post('/api/workspace/invites', { email: 'x@example.test' });
    assert.equal(r.status, 403);
    assert.ok(isCloudError(r.body, 'forbidden'));
    assert.equal((await inWs(member, wid).get('/api/workspace/invites')).status, 403);
    assert.equal((await inWs(member, wid).patch(`/api/workspace/members/${admin.id}`, { role: 'member' })).status, 403);
    // Admins invite; duplicate invites and existing members are 409s.
    r = await inWs(admin, wid).post('/api/workspace/invites', { email: 'new@example.test', role: 'member' });
    assert.equal(r.status, 201);
    assert.equal(r.body.email, 'new@example.test');
    assert.equal(r.body.role, 'member');
    assert.equal(r.body.invited_by, admin.id);
    assert.ok(Date.parse(r.body.expires_at) > Date.now());
    const inviteId = r.body.id;
    r = await inWs(admin, wid).post('/api/workspace/invites', { email: 'NEW@example.test' });
    assert.equal(r.status, 409);
    assert.ok(isCloudError(r.body, 'invite_exists'));
    r = await inWs(admin, wid).post('/api/workspace/invites', { email: member.email });
    assert.equal(r.status, 409);
    assert.ok(isCloudError(r.body, 'already_member'));
    for (const bad of [{}, { email: 'nope' }, { email: 'a@b.test', role: 'owner' }]) {
      r = await inWs(admin, wid).post('/api/workspace/invites', bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.ok(isCloudError(r.body));
    }
    r = await inWs(admin, wid).get('/api/workspace/invites');
    assert.deepEqual(
      r.body.map((i: any) => i.email),
      ['new@example.test'],
    );
    assert.ok(!('token' in r.body[0]));
    assert.equal((await inWs(admin, wid).delete(`/api/workspace/invites/${inviteId}`)).status, 204);
    assert.equal((await inWs(admin, wid).delete(`/api/workspace/invites/${inviteId}`)).status, 404);
    // Personal workspaces take no invites.
    r = await owner.http.post('/api/workspace/invites', { email: 'y@example.test' });
    assert.equal(r.status, 403);
    // Roles: admin promotes the member; nobody changes the owner; bad roles are 400s; unknown members 404.
    r = await inWs(admin, wid).patch(`/api/workspace/members/${member.id}`, { role: 'admin' });
    assert.equal(r.status, 200);
    assert.equal(r.body.role, 'admin');
    assert.equal(r.body.user_id, member.id);
    assert.equal((await inWs(admin, wid).patch(`/api/workspace/members/${owner.id}`, { role: 'member' })).status, 403);
    assert.equal((await inWs(owner, wid).patch(`/api/workspace/members/${member.id}`, { role: 'owner' })).status, 400);
    assert.equal((await inWs(owner, wid).patch(`/api/workspace/members/${member.id}`, {})).status, 400);
    r = await inWs(owner, wid).patch('/api/workspace/members/nobody', { role: 'member' });
    assert.equal(r.status, 404);
    assert.ok(isCloudError(r.body, 'not_found'));
    assert.equal((await inWs(owner, wid).patch(`/api/workspace/members/${member.id}`, { role: 'member' })).body.role, 'member');
    // Removal: members cannot; admins remove members; only the owner removes admins; nobody removes the owner.
    assert.equal((await inWs(member, wid).delete(`/api/workspace/members/${admin.id}`)).status, 403);
    assert.equal((await inWs(admin, wid).delete(`/api/workspace/members/${owner.id}`)).status, 403);
    assert.equal((await inWs(admin, wid).delete('/api/workspace/members/nobody')).status, 404);
    // Leave: the member leaves; the owner cannot; nobody leaves a personal workspace.
    assert.equal((await inWs(member, wid).post('/api/workspace/leave')).status, 204);
    assert.equal((await inWs(member, wid).get('/api/jobs')).status, 403);
    r = await inWs(owner, wid).post('/api/workspace/leave');
    assert.equal(r.status, 403);
    assert.ok(isCloudError(r.body, 'owner_cannot_leave'));
    assert.equal((await owner.http.post('/api/workspace/leave')).status, 403);
    assert.equal((await inWs(owner, wid).delete(`/api/workspace/members/${admin.id}`)).status, 204);
    assert.equal((await inWs(admin, wid).get('/api/jobs')).status, 403);
    assert.deepEqual(
      (await inWs(owner, wid).get('/api/workspace/members')).body.map((m: any) => m.user_id),
      [owner.id],
    );
  });

  test('accepting invites: the invited email only, once, not after revocation or deletion', async () => {
    const owner = await signupUser(srv.url, 'inv-owner');
    const invitee = await signupUser(srv.url, 'invitee');
    const stranger = await signupUser(srv.url, 'stranger');
    const wid = (await owner.http.post('/api/workspaces', { name: 'Invites' })).body.id;
    const inv = await inWs(owner, wid).post('/api/workspace/invites', { email: invitee.email.toUpperCase(), role: 'admin' });
    let r = await stranger.http.post(`/api/invites/${inv.body.token}/accept`);
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body, 'invite_email_mismatch'));
    r = await invitee.http.post(`/api/invites/${inv.body.token}/accept`);
    assert.equal(r.status, 200);
    assert.equal(r.body.role, 'admin');
    r = await invitee.http.post(`/api/invites/${inv.body.token}/accept`);
    assert.equal(r.status, 400);
    assert.ok(isCloudError(r.body, 'invite_used'));
    r = await invitee.http.post('/api/invites/wfi_unknown/accept');
    assert.equal(r.status, 404);
    assert.ok(isCloudError(r.body, 'not_found'));
    const inv2 = await inWs(owner, wid).post('/api/workspace/invites', { email: stranger.email });
    await inWs(owner, wid).delete(`/api/workspace/invites/${inv2.body.id}`);
    assert.equal((await stranger.http.post(`/api/invites/${inv2.body.token}/accept`)).status, 404);
    const inv3 = await inWs(owner, wid).post('/api/workspace/invites', { email: stranger.email });
    assert.equal((await owner.http.delete(`/api/workspaces/${wid}`)).status, 204);
    assert.equal((await stranger.http.post(`/api/invites/${inv3.body.token}/accept`)).status, 404);
    // An API key cannot accept invites on its user's behalf.
    const key = (await stranger.http.post('/api/workspace/api-keys', { name: 'k' })).body.key;
    assert.equal((await client(srv.url, { 'x-api-key': key }).post('/api/invites/wfi_x/accept')).status, 403);
  });

  test('API keys per member: members see their own, admins all; member keys listed by admins; bulk revoke by owners only', async () => {
    const { owner, admin, member, wid } = await team();
    const mk = await inWs(member, wid).post('/api/workspace/api-keys', { name: 'member key', description: 'm' });
    const mk2 = await inWs(member, wid).post('/api/workspace/api-keys', { name: 'member key 2' });
    const ak = await inWs(admin, wid).post('/api/workspace/api-keys', { name: 'admin key' });
    assert.equal(mk.status, 201);
    // The key acts in the team workspace, as its member, and cannot be moved elsewhere.
    const keyHttp = client(srv.url, { 'x-api-key': mk.body.key });
    assert.equal((await keyHttp.get('/api/auth/session')).body.workspace.id, wid);
    assert.equal((await keyHttp.get('/api/jobs', { 'x-workspace-id': member.workspaceId })).status, 403);
    let r = await inWs(member, wid).get('/api/workspace/api-keys');
    assert.deepEqual(r.body.map((k: any) => k.name).sort(), ['member key', 'member key 2']);
    r = await inWs(admin, wid).get('/api/workspace/api-keys');
    assert.deepEqual(r.body.map((k: any) => k.name).sort(), ['admin key', 'member key', 'member key 2']);
    assert.ok(r.body.every((k: any) => typeof k.description === 'string' && !('key' in k)));
    // A member cannot delete the admin's key; an admin can delete the member's.
    assert.equal((await inWs(member, wid).delete(`/api/workspace/api-keys/${ak.body.id}`)).status, 403);
    assert.equal((await inWs(admin, wid).delete(`/api/workspace/api-keys/${mk2.body.id}`)).status, 204);
    // Member keys: admins list, members may not; unknown members 404.
    r = await inWs(admin, wid).get(`/api/workspace/members/${member.id}/api-keys`);
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.map((k: any) => k.id),
      [mk.body.id],
    );
    assert.equal((await inWs(member, wid).get(`/api/workspace/members/${admin.id}/api-keys`)).status, 403);
    assert.equal((await inWs(admin, wid).get('/api/workspace/members/nobody/api-keys')).status, 404);
    // Bulk revoke: owners only.
    r = await inWs(admin, wid).delete(`/api/workspace/members/${member.id}/api-keys`);
    assert.equal(r.status, 403);
    assert.ok(isCloudError(r.body));
    r = await inWs(owner, wid).delete(`/api/workspace/members/${member.id}/api-keys`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { revoked_count: 1 });
    assert.equal((await keyHttp.get('/api/jobs')).status, 401);
    r = await inWs(owner, wid).delete(`/api/workspace/members/${member.id}/api-keys`);
    assert.deepEqual(r.body, { revoked_count: 0 });
    // Removing a member revokes their keys.
    const ak2 = client(srv.url, { 'x-api-key': ak.body.key });
    assert.equal((await ak2.get('/api/jobs')).status, 200);
    assert.equal((await inWs(owner, wid).delete(`/api/workspace/members/${admin.id}`)).status, 204);
    assert.equal((await ak2.get('/api/jobs')).status, 401);
  });
});
