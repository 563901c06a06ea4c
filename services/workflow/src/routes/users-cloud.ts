import type { FastifyInstance } from 'fastify';
import { cloudError } from '../identity/errors.ts';
import type { Identity } from '../identity/index.ts';
import { textProblem, userView } from '../identity/store.ts';
import { badRequest, cloudRoute, errors, objectBody, principal, ref } from './cloud-common.ts';

const MAX_CONTEXT_BYTES = 16 * 1024;

function avatarProblem(v: unknown): string | null {
  if (typeof v !== 'string' || v.length > 2048) return 'avatar_url must be a URL of at most 2048 characters';
  try {
    const u = new URL(v);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'avatar_url must be an http(s) URL';
  } catch {
    return 'avatar_url must be an absolute URL';
  }
  return null;
}

/** The caller's profile and feedback. */
export function cloudUserRoutes(app: FastifyInstance, id: Identity): void {
  const me = async (userId: string) => {
    const u = await id.store.userById(userId);
    if (!u) throw cloudError(401, 'unauthorized', 'Authentication required');
    return u;
  };

  cloudRoute(app, 'GET', '/api/user', { operationId: 'getCloudUser', summary: 'Get the authenticated cloud user', tags: ['user'], description: 'Returns the profile and account information for the currently authenticated user.', response: { 200: ref('CloudUser', 'User profile') } }, async (req) => userView(await me(principal(req).userId)));

  cloudRoute(
    app,
    'PUT',
    '/api/user',
    { operationId: 'updateCloudUser', summary: 'Update the authenticated cloud user profile', tags: ['user'], description: 'Updates the profile information (display_name ≤ 200 characters, avatar_url http(s)) of the currently authenticated user.', body: { type: 'object', properties: { display_name: { type: 'string', maxLength: 200 }, avatar_url: { type: 'string', format: 'uri' } } }, response: { 200: ref('CloudUser', 'Updated profile'), ...errors(400) } },
    async (req) => {
      const p = principal(req);
      if (p.via === 'api_key' || p.clientId) throw cloudError(403, 'forbidden', 'Profiles are changed by their users, not by API keys or third-party clients');
      const b = objectBody(req);
      const patch: { display_name?: string; avatar_url?: string } = {};
      if (b.display_name !== undefined) {
        const e = textProblem(b.display_name, 'display_name', 200, { allowEmpty: true });
        if (e) badRequest(e);
        patch.display_name = b.display_name as string;
      }
      if (b.avatar_url !== undefined) {
        const e = avatarProblem(b.avatar_url);
        if (e) badRequest(e);
        patch.avatar_url = b.avatar_url as string;
      }
      if (Object.keys(patch).length) await id.store.updateUser(p.userId, patch);
      return userView(await me(p.userId));
    },
    'required',
    { firstParty: true },
  );

  cloudRoute(
    app,
    'POST',
    '/api/feedback',
    { operationId: 'submitFeedback', summary: 'Submit user feedback', tags: ['user'], description: 'Submits feedback (message ≤ 10,000 characters, rating 1–5, context object ≤ 16 KiB) from the user about their experience with the cloud runtime.', body: { type: 'object', required: ['message'], properties: { message: { type: 'string' }, rating: { type: 'integer', minimum: 1, maximum: 5 }, context: { type: 'object', additionalProperties: true } } }, response: { 201: { description: 'Feedback submitted', type: 'object', properties: { id: { type: 'string' }, status: { type: 'string' } } }, ...errors(400) } },
    async (req, reply) => {
      const p = principal(req);
      const b = objectBody(req);
      const e = textProblem(b.message, 'message', 10_000);
      if (e) badRequest(e);
      if (b.rating !== undefined && b.rating !== null && (typeof b.rating !== 'number' || !Number.isInteger(b.rating) || b.rating < 1 || b.rating > 5)) badRequest('rating must be an integer from 1 to 5');
      if (b.context !== undefined && b.context !== null && (typeof b.context !== 'object' || Array.isArray(b.context))) badRequest('context must be an object');
      if (b.context !== undefined && Buffer.byteLength(JSON.stringify(b.context)) > MAX_CONTEXT_BYTES) badRequest('context must be at most 16 KiB of JSON');
      const fid = await id.store.addFeedback(p.userId, p.workspaceId, b.message as string, (b.rating as number | undefined) ?? null, b.context ?? undefined);
      return reply.code(201).send({ id: fid, status: 'received' });
    },
  );
}
