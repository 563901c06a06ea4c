import type { OpenApiOptions } from '@svc/kernel';

type Requirement = Array<Record<string, string[]>>;

/**
 * How /openapi.json describes the workflow service's credentials, as the
 * running configuration enforces them, so Swagger UI's Authorize works: the
 * local runtime is open unless started with --api-key (then a Bearer key or
 * ?token=); the hosted runtime takes a JWT access token, a workspace API key
 * (Bearer or X-API-Key), the session cookie, or an OAuth 2.1 client's token,
 * except on the routes it declares public.
 */
export function workflowOpenApi(cfg: { runtime: string; apiKey?: string; corsOrigin?: string }): OpenApiOptions {
  // The local runtime's origin guard (http/access.ts) refuses a page of another site driving a loopback server.
  const originGuard = cfg.runtime !== 'cloud' && !cfg.corsOrigin;
  return {
    ...credentials(cfg),
    shape: summariesFromDescriptions,
    errors: ({ url, secured, hasInput }) => ({
      ...(hasInput ? { 400: 'Invalid request' } : {}),
      ...(originGuard ? { 403: 'A cross-site request (Origin of another host) to a loopback server' } : {}),
      ...(secured ? { 401: 'Missing or invalid credentials' } : {}),
      ...(url.includes('{') ? { 404: 'Not found' } : {}),
    }),
    errorSchema: { type: 'object', title: 'ErrorBody', description: 'An error: {"error": …} (local routes), or {"error", "code", "details"} (hosted runtime)', additionalProperties: true },
  };
}

/**
 * The hosted runtime's operations carry the reference's descriptions but no
 * summary: their first sentence becomes one (Swagger UI lists operations by it).
 */
function summariesFromDescriptions(doc: { paths?: Record<string, Record<string, { summary?: string; description?: string }>> }): void {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      if (!op || typeof op !== 'object' || op.summary || typeof op.description !== 'string') continue;
      const text = op.description.replace(/^\[cloud-only\]\s*/, '');
      const sentence = /^(.+?[.!?])(\s|$)/s.exec(text)?.[1] ?? text;
      op.summary = sentence.length > 100 ? `${sentence.slice(0, 97).trimEnd()}…` : sentence.replace(/\.$/, '');
    }
  }
}

function credentials(cfg: { runtime: string; apiKey?: string }): OpenApiOptions {
  if (cfg.runtime === 'cloud') {
    const any: Requirement = [{ bearerAuth: [] }, { apiKeyHeader: [] }, { sessionCookie: [] }, { oauth2: [] }];
    return {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token (POST /api/auth/login) or a workspace API key `wfk_…`.' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'A workspace API key `wfk_…`.' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'wf_session', description: 'The session cookie of POST /api/auth/session; writes also need the X-CSRF-Token header.' },
        oauth2: {
          type: 'oauth2',
          description: 'OAuth 2.1 with PKCE; clients register at /oauth/register.',
          flows: { authorizationCode: { authorizationUrl: '/oauth/authorize', tokenUrl: '/oauth/token', refreshUrl: '/oauth/token', scopes: {} } },
        },
      },
      security: any,
      securityFor: ({ config }) => {
        const mode = (config as { auth?: string }).auth;
        if (mode === 'public') return [];
        if (mode === 'optional') return [...any, {}];
        return undefined;
      },
    };
  }
  if (cfg.apiKey) {
    return {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'The key given with --api-key.' },
        tokenQuery: { type: 'apiKey', in: 'query', name: 'token', description: 'The same key as ?token= (what ComfyUI-Login clients send).' },
      },
      security: [{ bearerAuth: [] }, { tokenQuery: [] }],
    };
  }
  // Open, as the reference on loopback: no credentials anywhere.
  return { security: [] };
}
