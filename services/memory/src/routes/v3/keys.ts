import { Type } from 'typebox';
import type { App } from '@svc/kernel';
import { mintKey } from '../../domain/v3/keys.ts';
import { v3op, V3 } from './common.ts';

const KeyQuery = Type.Object({
  workspace_id: Type.Optional(Type.Union([Type.String({ maxLength: 512, description: 'ID of the workspace to scope the key to' }), Type.Null()])),
  peer_id: Type.Optional(Type.Union([Type.String({ maxLength: 512, description: 'ID of the peer to scope the key to' }), Type.Null()])),
  session_id: Type.Optional(Type.Union([Type.String({ maxLength: 512, description: 'ID of the session to scope the key to' }), Type.Null()])),
  expires_at: Type.Optional(Type.Union([Type.String({ maxLength: 64, description: 'ISO 8601 date-time after which the key is refused' }), Type.Null()])),
});
const KeyResponse = Type.Object({ key: Type.String() }, { title: 'KeyResponse' });

/** `POST /v3/keys`: admin keys mint scoped keys (auth on); 405 when auth is off. */
export function v3KeyRoutes(app: App, secret: string | undefined): void {
  app.post(
    `${V3}/keys`,
    {
      schema: {
        ...v3op('keys', 'Create Key', KeyResponse, 200, 'Create a JWT scoped to a workspace, a peer or a session of a workspace (admin key only; 405 when auth is off).'),
        querystring: KeyQuery,
      },
    },
    (req) => mintKey(secret, req.query),
  );
}
