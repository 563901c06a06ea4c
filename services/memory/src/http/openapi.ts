import type { OpenApiOptions } from '@svc/kernel';

/**
 * The memory service's credentials in /openapi.json, as enforced: with
 * --api-keys every operation needs `Authorization: Bearer <key>`; without,
 * the header is accepted and ignored (the reference's clients always send
 * one), so each operation is open or Bearer.
 */
export function memoryOpenApi(keysRequired: boolean, jwt = false): OpenApiOptions {
  return {
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', description: jwt
          ? 'A key minted by POST /v3/keys (or the admin key of AUTH_JWT_SECRET), or one of the keys given with --api-keys.'
          : keysRequired
            ? 'One of the keys given with --api-keys.'
            : 'Not checked: this server runs without --api-keys.' },
    },
    security: keysRequired ? [{ bearerAuth: [] }] : [{}, { bearerAuth: [] }],
  };
}
