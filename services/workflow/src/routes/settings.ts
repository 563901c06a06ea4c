import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SettingsStore } from '../domain/settings.ts';
import { UnknownUserError, type UserManager } from '../domain/users.ts';
import { UnsafePathError } from '../files/paths.ts';
import { BODY_LIMITS, dual } from './common.ts';
import { sendError, sendText } from './replies.ts';
import { comfyUserHeader } from './users.ts';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** GET/POST /settings and /settings/{id}, kept in `user/<id>/comfy.settings.json`. */
export function settingsRoutes(app: FastifyInstance, users: UserManager): void {
  const store = new SettingsStore();

  /** The folder of the request's user; an unknown user is the reference's 401. */
  const rootOf = (req: FastifyRequest, reply: FastifyReply): string | undefined => {
    try {
      return users.userRoot(users.userId(req.headers['comfy-user']));
    } catch (err) {
      if (err instanceof UnknownUserError) {
        sendText(reply, 401, '401: Unauthorized');
        return undefined;
      }
      if (err instanceof UnsafePathError) {
        sendText(reply, 403, '403: Forbidden');
        return undefined;
      }
      throw err;
    }
  };
  const params = { type: 'object', properties: { id: { type: 'string' } } } as const;

  dual(app, 'GET', '/settings', { operationId: 'getSettings', tags: ['settings'], headers: comfyUserHeader }, (req, reply) => {
    const root = rootOf(req, reply);
    if (root === undefined) return reply;
    return reply.type('application/json').send(JSON.stringify(store.read(root)));
  }, { validate: false });

  dual(
    app,
    'POST',
    '/settings',
    { operationId: 'updateSettings', tags: ['settings'], headers: comfyUserHeader, body: { type: 'object', additionalProperties: true } },
    async (req, reply) => {
      const root = rootOf(req, reply);
      if (root === undefined) return reply;
      const body = req.body as unknown;
      if (!isPlainObject(body)) return sendError(reply, 400, 'Settings must be a JSON object');
      await store.update(root, (current) => {
        const merged: Record<string, unknown> = { ...current };
        for (const [k, v] of Object.entries(body)) Object.defineProperty(merged, k, { value: v, enumerable: true, writable: true, configurable: true });
        return merged;
      });
      return reply.code(200).send();
    },
    { validate: false, bodyLimit: BODY_LIMITS.settings },
  );

  dual(app, 'GET', '/settings/:id', { operationId: 'getSetting', tags: ['settings'], headers: comfyUserHeader, params }, (req, reply) => {
    const root = rootOf(req, reply);
    if (root === undefined) return reply;
    const id = (req.params as { id: string }).id;
    const settings = store.read(root);
    return reply.type('application/json').send(JSON.stringify(Object.hasOwn(settings, id) ? settings[id] : null));
  }, { validate: false });

  dual(
    app,
    'POST',
    '/settings/:id',
    { operationId: 'updateSetting', tags: ['settings'], headers: comfyUserHeader, params, body: { description: 'The setting value (any JSON)' } },
    async (req, reply) => {
      const root = rootOf(req, reply);
      if (root === undefined) return reply;
      const id = (req.params as { id: string }).id;
      if (!id) return sendError(reply, 400, 'Setting id not provided');
      // An empty body is the reference's json() failure: there is no value to store.
      if (req.body === undefined) return sendError(reply, 400, 'Invalid JSON body: the setting value is missing');
      const value = req.body;
      await store.update(root, (current) => {
        const next: Record<string, unknown> = { ...current };
        Object.defineProperty(next, id, { value, enumerable: true, writable: true, configurable: true });
        return next;
      });
      return reply.code(200).send();
    },
    { validate: false },
  );
}
