import type { App } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { createApp, getApp, getAppByName, getOrCreateApp, updateApp } from '../domain/apps.ts';
import { App as AppSchema, AppCreate, AppUpdate } from '../schemas/resources.ts';
import { AppNameParams, AppParams } from '../schemas/params.ts';
import { op } from './common.ts';

export function appRoutes(app: App, ctx: Ctx): void {
  app.post('/apps', { schema: { ...op('apps', 'Create App', AppSchema), body: AppCreate } }, (req) => createApp(ctx, req.body));
  app.get('/apps/:app_id', { schema: { ...op('apps', 'Get App', AppSchema), params: AppParams } }, (req) => getApp(ctx, req.params.app_id));
  app.put('/apps/:app_id', { schema: { ...op('apps', 'Update App', AppSchema), params: AppParams, body: AppUpdate } }, (req) =>
    updateApp(ctx, req.params.app_id, req.body),
  );
  app.get('/apps/name/:name', { schema: { ...op('apps', 'Get App By Name', AppSchema), params: AppNameParams } }, (req) => getAppByName(ctx, req.params.name));
  app.get('/apps/get_or_create/:name', { schema: { ...op('apps', 'Get Or Create App', AppSchema), params: AppNameParams } }, (req) =>
    getOrCreateApp(ctx, req.params.name),
  );
}
