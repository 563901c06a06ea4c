import fs from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { UnknownUserError, UserInputError, type UserManager } from '../domain/users.ts';
import { dual } from './common.ts';
import { sendError } from './replies.ts';

export const comfyUserHeader = {
  type: 'object',
  properties: { 'comfy-user': { type: 'string', description: 'The active user in multi-user mode (not a security mechanism).' } },
} as const;

/** GET/POST /users: the reference's user list and user creation. */
export function userRoutes(app: FastifyInstance, users: UserManager): void {
  dual(
    app,
    'GET',
    '/users',
    { operationId: 'getUsers', tags: ['user'], headers: comfyUserHeader },
    (req) => {
      if (users.multiUser) return { storage: 'server', users: users.users };
      let migrated = false;
      try {
        migrated = fs.existsSync(users.userRoot(users.userId(req.headers['comfy-user'])));
      } catch (err) {
        if (!(err instanceof UnknownUserError)) throw err;
      }
      return { storage: 'server', migrated };
    },
    { validate: false },
  );

  dual(
    app,
    'POST',
    '/users',
    {
      operationId: 'createUser',
      tags: ['user'],
      headers: comfyUserHeader,
      body: { type: 'object', required: ['username'], properties: { username: { type: 'string' } } },
    },
    (req, reply) => {
      const body = req.body as unknown;
      const username = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>).username : undefined;
      try {
        return reply.type('application/json').send(JSON.stringify(users.addUser(username)));
      } catch (err) {
        if (err instanceof UserInputError) return sendError(reply, 400, err.message);
        throw err;
      }
    },
    { validate: false },
  );
}
