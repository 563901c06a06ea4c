import type { FastifyInstance, FastifyRequest } from 'fastify';
import { cloudError } from '../identity/errors.ts';
import type { Identity, Principal } from '../identity/index.ts';
import { apiKeyView, emailProblem, normEmail, ROLE_RANK, textProblem, workspaceView, type Membership, type Role } from '../identity/store.ts';
import { arrayOf, badRequest, cloudRoute, errors, noContent, objectBody, principal, ref } from './cloud-common.ts';

const idParam = (name: string) => ({ type: 'object', required: [name], properties: { [name]: { type: 'string' } } });

function forbid(message: string, code = 'forbidden'): never {
  throw cloudError(403, code, message);
}

function needRole(p: Principal, min: Role, what: string): void {
  if (ROLE_RANK[p.role] < ROLE_RANK[min]) forbid(`${what} requires the ${min} role`);
}

/** Workspaces, members, invites and API keys of the hosted runtime. */
export function workspaceRoutes(app: FastifyInstance, id: Identity): void {
  const view = async (m: Membership) => workspaceView(m, await id.store.memberCount(m.id), m.role);
  /** The caller's membership of `wid`, or 404 (a workspace you are not in does not exist for you). */
  const memberOf = async (req: FastifyRequest, wid: string): Promise<Membership> => {
    const m = await id.membership(principal(req).userId, wid);
    if (!m) throw cloudError(404, 'not_found', 'Workspace not found');
    return m;
  };
  const nameOf = (v: unknown): string => {
    const e = textProblem(v, 'name', 100);
    if (e) badRequest(e);
    return (v as string).trim();
  };

  cloudRoute(app, 'GET', '/api/workspaces', { operationId: 'listWorkspaces', summary: 'List workspaces the user belongs to', tags: ['workspace'], description: 'Returns the list of workspaces the authenticated user is a member of.', response: { 200: arrayOf('Workspace') } }, async (req) => {
    const ms = await id.store.memberships(principal(req).userId);
    return Promise.all(ms.map(view));
  });

  cloudRoute(app, 'POST', '/api/workspaces', { operationId: 'createWorkspace', summary: 'Create a new workspace', tags: ['workspace'], description: 'Creates a new team workspace. The authenticated user becomes the owner.', body: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 100 } } }, response: { 201: ref('Workspace', 'Workspace created'), ...errors(400) } }, async (req, reply) => {
    const p = principal(req);
    if (p.via === 'api_key' || p.clientId) forbid('Workspaces are created by users, not by API keys or third-party clients');
    const name = nameOf(objectBody(req).name);
    const w = await id.store.createWorkspace(p.userId, name);
    return reply.code(201).send(workspaceView(w, 1, 'owner'));
  }, 'required', { firstParty: true });

  cloudRoute(app, 'GET', '/api/workspaces/:id', { operationId: 'getWorkspace', summary: 'Get a workspace by ID', tags: ['workspace'], description: 'Returns details of a workspace the user is a member of (404 for any other).', params: idParam('id'), response: { 200: ref('Workspace'), ...errors(403, 404) } }, async (req) => view(await memberOf(req, (req.params as { id: string }).id)));

  cloudRoute(app, 'PATCH', '/api/workspaces/:id', { operationId: 'updateWorkspace', summary: 'Update workspace settings', tags: ['workspace'], description: 'Updates the name of a workspace. Requires admin role.', params: idParam('id'), body: { type: 'object', properties: { name: { type: 'string', maxLength: 100 } } }, response: { 200: ref('Workspace'), ...errors(400, 403, 404) } }, async (req) => {
    const m = await memberOf(req, (req.params as { id: string }).id);
    if (ROLE_RANK[m.role] < ROLE_RANK.admin) forbid('Updating a workspace requires the admin role');
    const b = objectBody(req);
    if (b.name !== undefined) {
      const renamed = await id.store.renameWorkspace(m.id, nameOf(b.name));
      id.forgetWorkspace(m.id);
      if (!renamed) throw cloudError(404, 'not_found', 'Workspace not found');
    }
    // Deleted by a concurrent request: gone, as for any later one.
    return view(await memberOf(req, m.id));
  }, 'required', { firstParty: true });

  cloudRoute(app, 'DELETE', '/api/workspaces/:id', { operationId: 'deleteWorkspace', summary: 'Delete a workspace', tags: ['workspace'], description: 'Soft-deletes a workspace (its API keys and pending invites are revoked, tokens bound to it stop working). Requires owner role. Personal workspaces cannot be deleted.', params: idParam('id'), response: { 204: { description: 'Workspace deleted' }, ...errors(403, 404) } }, async (req, reply) => {
    const m = await memberOf(req, (req.params as { id: string }).id);
    if (m.type === 'personal') forbid('Personal workspaces cannot be deleted', 'personal_workspace');
    if (m.role !== 'owner') forbid('Deleting a workspace requires the owner role');
    const deleted = await id.store.softDeleteWorkspace(m.id);
    id.forgetWorkspace(m.id);
    if (!deleted) throw cloudError(404, 'not_found', 'Workspace not found');
    return noContent(reply);
  }, 'required', { firstParty: true });

  // ---- members of the current workspace

  cloudRoute(app, 'GET', '/api/workspace/members', { operationId: 'listWorkspaceMembers', summary: 'List workspace members', tags: ['workspace'], description: 'Returns the list of members in the current workspace.', response: { 200: arrayOf('WorkspaceMember'), ...errors(403) } }, async (req) => id.store.members(principal(req).workspaceId));

  cloudRoute(app, 'PATCH', '/api/workspace/members/:userId', { operationId: 'updateWorkspaceMember', summary: "Update a workspace member's role", tags: ['workspace'], description: "Updates the role of a workspace member (admin or member). Requires admin role; the owner's role cannot be changed.", params: idParam('userId'), body: { type: 'object', required: ['role'], properties: { role: { type: 'string', enum: ['admin', 'member'] } } }, response: { 200: ref('WorkspaceMember'), ...errors(400, 403, 404) } }, async (req) => {
    const p = principal(req);
    needRole(p, 'admin', 'Changing roles');
    const role = objectBody(req).role;
    if (role !== 'admin' && role !== 'member') badRequest('role must be admin or member');
    const target = await id.store.member(p.workspaceId, (req.params as { userId: string }).userId);
    if (!target) throw cloudError(404, 'not_found', 'Member not found');
    if (target.role === 'owner') forbid("The owner's role cannot be changed");
    if (!(await id.store.setRole(p.workspaceId, target.user_id as string, role))) throw cloudError(404, 'not_found', 'Member not found');
    id.forgetWorkspace(p.workspaceId);
    return { ...target, role };
  }, 'required', { firstParty: true });

  cloudRoute(app, 'DELETE', '/api/workspace/members/:userId', { operationId: 'removeWorkspaceMember', summary: 'Remove a member from the workspace', tags: ['workspace'], description: 'Removes a member from the current workspace and revokes the API keys they created in it. Requires admin role (only the owner removes admins; nobody removes the owner; leave with POST /api/workspace/leave).', params: idParam('userId'), response: { 204: { description: 'Member removed' }, ...errors(403, 404) } }, async (req, reply) => {
    const p = principal(req);
    needRole(p, 'admin', 'Removing members');
    const target = await id.store.member(p.workspaceId, (req.params as { userId: string }).userId);
    if (!target) throw cloudError(404, 'not_found', 'Member not found');
    if (target.role === 'owner') forbid('The owner cannot be removed');
    if (target.user_id === p.userId) forbid('Use POST /api/workspace/leave to leave a workspace');
    if (target.role === 'admin' && p.role !== 'owner') forbid('Only the owner removes admins');
    const hashes = (await id.store.apiKeys(p.workspaceId, target.user_id as string)).map((k) => k.key_hash as string);
    const removed = await id.store.removeMember(p.workspaceId, target.user_id as string);
    id.forgetApiKeys(hashes);
    id.forgetWorkspace(p.workspaceId);
    // Of concurrent removals one removed the member; the others found none.
    if (!removed) throw cloudError(404, 'not_found', 'Member not found');
    return noContent(reply);
  }, 'required', { firstParty: true });

  cloudRoute(app, 'POST', '/api/workspace/leave', { operationId: 'leaveWorkspace', summary: 'Leave the current workspace', tags: ['workspace'], description: 'Removes the authenticated user from the current workspace (not the personal one; the owner deletes the workspace instead).', response: { 204: { description: 'Left workspace' }, ...errors(403) } }, async (req, reply) => {
    const p = principal(req);
    if (p.workspaceType === 'personal') forbid('You cannot leave your personal workspace', 'personal_workspace');
    if (p.role === 'owner') forbid('The owner cannot leave the workspace; delete it instead', 'owner_cannot_leave');
    const hashes = (await id.store.apiKeys(p.workspaceId, p.userId)).map((k) => k.key_hash as string);
    await id.store.removeMember(p.workspaceId, p.userId);
    id.forgetApiKeys(hashes);
    id.forgetWorkspace(p.workspaceId);
    return noContent(reply);
  }, 'required', { firstParty: true });

  // ---- invites

  cloudRoute(app, 'GET', '/api/workspace/invites', { operationId: 'listWorkspaceInvites', summary: 'List pending workspace invites', tags: ['workspace'], description: 'Returns the list of pending invitations for the current workspace. Requires admin role.', response: { 200: arrayOf('WorkspaceInvite'), ...errors(403) } }, async (req) => {
    const p = principal(req);
    needRole(p, 'admin', 'Listing invites');
    return id.store.invites(p.workspaceId);
  });

  cloudRoute(app, 'POST', '/api/workspace/invites', { operationId: 'createWorkspaceInvite', summary: 'Invite a user to the workspace', tags: ['workspace'], description: 'Creates an invitation (valid 7 days) for a user to join the current team workspace. Requires admin role. The response carries the invite `token` once; the invitee accepts with POST /api/invites/{token}/accept.', body: { type: 'object', required: ['email'], properties: { email: { type: 'string', format: 'email' }, role: { type: 'string', enum: ['admin', 'member'] } } }, response: { 201: ref('WorkspaceInvite', 'Invite created'), ...errors(400, 403, 409) } }, async (req, reply) => {
    const p = principal(req);
    needRole(p, 'admin', 'Inviting members');
    if (p.workspaceType === 'personal') forbid('Personal workspaces cannot have other members', 'personal_workspace');
    const b = objectBody(req);
    const e = emailProblem(b.email);
    if (e) badRequest(e);
    const role = b.role ?? 'member';
    if (role !== 'admin' && role !== 'member') badRequest('role must be admin or member');
    const email = b.email as string;
    const made = await id.store.createInvite(p.workspaceId, email, role, p.userId, id.cfg.inviteTtlMs);
    if (made === 'already_member') throw cloudError(409, 'already_member', 'That user is already a member of this workspace');
    if (made === 'invite_exists') throw cloudError(409, 'invite_exists', 'A pending invite for that email already exists');
    return reply.code(201).send({ ...made.invite, token: made.token });
  }, 'required', { firstParty: true });

  cloudRoute(app, 'DELETE', '/api/workspace/invites/:inviteId', { operationId: 'deleteWorkspaceInvite', summary: 'Cancel a workspace invite', tags: ['workspace'], description: 'Cancels a pending workspace invitation. Requires admin role.', params: idParam('inviteId'), response: { 204: { description: 'Invite cancelled' }, ...errors(403, 404) } }, async (req, reply) => {
    const p = principal(req);
    needRole(p, 'admin', 'Cancelling invites');
    if (!(await id.store.revokeInvite(p.workspaceId, (req.params as { inviteId: string }).inviteId))) throw cloudError(404, 'not_found', 'Invite not found');
    return noContent(reply);
  }, 'required', { firstParty: true });

  cloudRoute(app, 'POST', '/api/invites/:token/accept', { operationId: 'acceptInvite', summary: 'Accept a workspace invitation', tags: ['workspace'], description: "Accepts a workspace invitation using the invite token. The authenticated user (whose email must be the invite's) is added to the workspace with the invited role.", params: idParam('token'), response: { 200: ref('Workspace', 'Invite accepted'), ...errors(400, 404) } }, async (req) => {
    const p = principal(req);
    if (p.via === 'api_key' || p.clientId) forbid('Invites are accepted by users, not by API keys or third-party clients');
    const token = (req.params as { token: string }).token;
    const inv = token.length <= 200 ? await id.store.inviteByToken(token) : null;
    if (!inv || inv.status === 'revoked') throw cloudError(404, 'not_found', 'Invite not found');
    if (inv.status === 'accepted') throw cloudError(400, 'invite_used', 'This invite was already accepted');
    if (Number(inv.expires_at) <= Date.now()) throw cloudError(400, 'invite_expired', 'This invite has expired');
    const user = await id.store.userById(p.userId);
    if (!user || normEmail(user.email) !== inv.email_norm) throw cloudError(400, 'invite_email_mismatch', 'This invite was sent to another email address');
    if (!(await id.store.workspaceAlive(inv.workspace_id as string))) throw cloudError(404, 'not_found', 'Invite not found');
    if (!(await id.store.acceptInvite(inv.id as string, inv.workspace_id as string, p.userId, inv.role as Role))) throw cloudError(400, 'invite_used', 'This invite was already accepted');
    id.forgetWorkspace(inv.workspace_id as string);
    const m = await id.membership(p.userId, inv.workspace_id as string);
    if (!m) throw cloudError(404, 'not_found', 'Invite not found');
    return view(m);
  }, 'required', { firstParty: true });

  // ---- API keys

  const keyUse = (k: { id: string }) => id.keyUses.get(k.id);

  cloudRoute(app, 'GET', '/api/workspace/api-keys', { operationId: 'listWorkspaceApiKeys', summary: 'List workspace API keys', tags: ['workspace'], description: 'Returns the API keys of the current workspace (secrets redacted): all of them for admins and owners, the caller’s own for members.', response: { 200: arrayOf('WorkspaceApiKey'), ...errors(403) } }, async (req) => {
    const p = principal(req);
    const rows = await id.store.apiKeys(p.workspaceId, ROLE_RANK[p.role] >= ROLE_RANK.admin ? undefined : p.userId);
    return rows.map((r) => apiKeyView(r as never, keyUse(r as never)));
  });

  cloudRoute(app, 'POST', '/api/workspace/api-keys', { operationId: 'createWorkspaceApiKey', summary: 'Create a workspace API key', tags: ['workspace'], description: 'Creates a new API key for the current workspace. The key is shown once in this response and stored only as a hash; send it as `Authorization: Bearer <key>` or `X-API-Key: <key>`.', body: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 100 }, description: { type: 'string', maxLength: 5000 } } }, response: { 201: ref('WorkspaceApiKeyCreated', 'API key created'), ...errors(400, 403) } }, async (req, reply) => {
    const p = principal(req);
    if (p.clientId) forbid('Third-party clients cannot create API keys');
    // A key never mints keys, whatever its creator's role: a leaked key could otherwise make itself new ones that
    // outlive its own revocation. Keys are made by a person signed in (login token or session); members make their
    // own, admins and owners also list and revoke everyone's.
    if (p.via === 'api_key') forbid('API keys cannot create API keys: sign in (login token or session) to make one');
    const b = objectBody(req);
    const e = textProblem(b.name, 'name', 100) ?? (b.description !== undefined && b.description !== null ? textProblem(b.description, 'description', 5000, { allowEmpty: true }) : null);
    if (e) badRequest(e);
    const { key, row } = await id.store.createApiKey(p.workspaceId, p.userId, (b.name as string).trim(), typeof b.description === 'string' ? b.description : '');
    return reply.code(201).send({ id: row.id, name: row.name, description: row.description, key, prefix: row.prefix, created_at: new Date(row.created_at).toISOString() });
  }, 'required', { firstParty: true });

  cloudRoute(app, 'DELETE', '/api/workspace/api-keys/:id', { operationId: 'deleteWorkspaceApiKey', summary: 'Delete a workspace API key', tags: ['workspace'], description: 'Revokes and deletes a workspace API key (its creator, or an admin).', params: idParam('id'), response: { 204: { description: 'API key deleted' }, ...errors(403, 404) } }, async (req, reply) => {
    const p = principal(req);
    const row = await id.store.apiKey(p.workspaceId, (req.params as { id: string }).id);
    if (!row) throw cloudError(404, 'not_found', 'API key not found');
    if (row.user_id !== p.userId && ROLE_RANK[p.role] < ROLE_RANK.admin) forbid("Deleting another member's API key requires the admin role");
    const hash = await id.store.deleteApiKey(p.workspaceId, row.id as string);
    id.forgetApiKeys([row.key_hash as string]);
    id.keyUses.delete(row.id as string);
    // A concurrent delete took it first: one 204, the others 404 as for any missing key.
    if (!hash) throw cloudError(404, 'not_found', 'API key not found');
    return noContent(reply);
  }, 'required', { firstParty: true });

  cloudRoute(app, 'GET', '/api/workspace/members/:user_id/api-keys', { operationId: 'listMemberApiKeys', summary: 'List API keys for a workspace member', tags: ['workspace'], description: 'Returns the API keys belonging to a specific workspace member. Requires admin role.', params: idParam('user_id'), response: { 200: arrayOf('WorkspaceApiKey'), ...errors(403, 404) } }, async (req) => {
    const p = principal(req);
    needRole(p, 'admin', "Listing a member's API keys");
    const uid = (req.params as { user_id: string }).user_id;
    if (!(await id.store.member(p.workspaceId, uid))) throw cloudError(404, 'not_found', 'Member not found');
    return (await id.store.apiKeys(p.workspaceId, uid)).map((r) => apiKeyView(r as never, keyUse(r as never)));
  });

  cloudRoute(app, 'DELETE', '/api/workspace/members/:user_id/api-keys', { operationId: 'bulkRevokeMemberApiKeys', summary: "Bulk revoke a member's API keys", tags: ['workspace'], description: 'Revokes all active API keys for a specific workspace member. Only workspace owners can perform this action.', params: { type: 'object', required: ['user_id'], properties: { user_id: { type: 'string', minLength: 1 } } }, response: { 200: { description: 'Keys revoked', type: 'object', required: ['revoked_count'], properties: { revoked_count: { type: 'integer', minimum: 0 } } }, ...errors(403) } }, async (req) => {
    const p = principal(req);
    if (p.role !== 'owner') forbid('Only workspace owners can bulk-revoke API keys');
    const hashes = await id.store.deleteMemberApiKeys(p.workspaceId, (req.params as { user_id: string }).user_id);
    id.forgetApiKeys(hashes);
    return { revoked_count: hashes.length };
  }, 'required', { firstParty: true });
}
