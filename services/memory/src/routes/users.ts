import type { App } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { createUser, getOrCreateUser, getUserByName, listUsers, updateUser } from '../domain/users.ts';
import { pagingFrom } from '../domain/paging.ts';
import { listQuery } from '../schemas/common.ts';
import { PageUser, User, UserCreate, UserUpdate } from '../schemas/resources.ts';
import { AppParams, UserNameParams, UserParams } from '../schemas/params.ts';
import { op } from './common.ts';

export function userRoutes(app: App, ctx: Ctx): void {
  app.post('/apps/:app_id/users', { schema: { ...op('users', 'Create User', User), params: AppParams, body: UserCreate } }, (req) =>
    createUser(ctx, req.params.app_id, req.body),
  );
  app.get('/apps/:app_id/users', { schema: { ...op('users', 'Get Users', PageUser), params: AppParams, querystring: listQuery({}, false) } }, (req) =>
    listUsers(ctx, req.params.app_id, pagingFrom(req.query)),
  );
  app.get('/apps/:app_id/users/:name', { schema: { ...op('users', 'Get User', User), params: UserNameParams } }, (req) =>
    getUserByName(ctx, req.params.app_id, req.params.name),
  );
  app.get('/apps/:app_id/users/get_or_create/:name', { schema: { ...op('users', 'Get Or Create User', User), params: UserNameParams } }, (req) =>
    getOrCreateUser(ctx, req.params.app_id, req.params.name),
  );
  app.put('/apps/:app_id/users/:user_id', { schema: { ...op('users', 'Update User', User), params: UserParams, body: UserUpdate } }, (req) =>
    updateUser(ctx, req.params.app_id, req.params.user_id, req.body),
  );
}
