import { Type } from 'typebox';
import type { App } from '@svc/kernel';
import type { Ctx } from '../domain/context.ts';
import { createMetamessage, getMetamessage, listMetamessages, updateMetamessage } from '../domain/metamessages.ts';
import { pagingFrom } from '../domain/paging.ts';
import { listQuery, NAME_MAX, Uuid } from '../schemas/common.ts';
import { Metamessage, MetamessageCreate, MetamessageUpdate, PageMetamessage } from '../schemas/resources.ts';
import { MetamessageParams, S, S_NOSLASH, SessionParams } from '../schemas/params.ts';
import { op } from './common.ts';

const MetamessageListQuery = listQuery({
  message_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
  metamessage_type: Type.Optional(Type.Union([Type.String({ maxLength: NAME_MAX }), Type.Null()])),
});

export function metamessageRoutes(app: App, ctx: Ctx): void {
  app.post(`${S}/:session_id/metamessages`, { schema: { ...op('metamessages', 'Create Metamessage', Metamessage), params: SessionParams, body: MetamessageCreate } }, (req) =>
    createMetamessage(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.body),
  );
  app.get(`${S}/:session_id/metamessages`, { schema: { ...op('metamessages', 'Get Metamessages', PageMetamessage), params: SessionParams, querystring: MetamessageListQuery } }, (req) =>
    listMetamessages(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.query, pagingFrom(req.query)),
  );
  app.get(
    `${S}/:session_id/metamessages/:metamessage_id`,
    { schema: { ...op('metamessages', 'Get Metamessage', Metamessage), params: MetamessageParams, querystring: Type.Object({ message_id: Uuid }) } },
    (req) => getMetamessage(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.params.metamessage_id, req.query.message_id),
  );
  for (const prefix of [S_NOSLASH, S]) {
    app.put(
      `${prefix}/:session_id/metamessages/:metamessage_id`,
      { schema: { ...op('metamessages', 'Update Metamessage', Metamessage), params: MetamessageParams, body: MetamessageUpdate } },
      (req) => updateMetamessage(ctx, req.params.app_id, req.params.user_id, req.params.session_id, req.params.metamessage_id, req.body),
    );
  }
}
