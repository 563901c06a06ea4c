import type { OpenApiOptions } from '@svc/kernel';

/**
 * How the inventory's OpenAPI document (/openapi.json, /api/schema/, /docs)
 * presents the API: the two ways to send a token, so Swagger UI's Authorize
 * works; the admin UI's HTML pages and form posts left out; in the copy
 * Swagger UI shows, NetBox's lookup variants of a filter (`name__ic`,
 * `id__gte`, …) named in the filter's description instead of listed as
 * parameters of their own (1,400 of them).
 */
export const inventoryOpenApi: OpenApiOptions = {
  securitySchemes: {
    tokenAuth: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'An API token as NetBox takes it: `Token <key>` (type the word Token, a space, then the key).' },
    bearerAuth: { type: 'http', scheme: 'bearer', description: 'The same API token as `Authorization: Bearer <key>`.' },
  },
  security: [{ tokenAuth: [] }, { bearerAuth: [] }],
  // Trading a username and password for a token needs no token.
  securityFor: ({ method, url }) => (method === 'POST' && url === '/api/users/tokens/provision/' ? [] : undefined),
  hide: (url) => url === '/' || url.startsWith('/ui/') || url === '/ui' || url === '/login' || url.startsWith('/login/'),
  // Only in the copy /docs shows: /api/schema/ and /openapi.json list every lookup, as NetBox's (Ansible reads them).
  docsShape: foldLookups,
  errors: ({ url, secured, hasInput }) => ({
    ...(hasInput ? { 400: 'Invalid input: {"<field>": ["<message>"]} or {"detail": "<message>"}' } : {}),
    ...(secured ? { 403: 'No token, an invalid or expired token, or no permission: {"detail": "<message>"}' } : {}),
    ...(url.includes('{') ? { 404: 'No such object: {"detail": "Not found."}' } : {}),
  }),
  errorSchema: { type: 'object', title: 'Error', additionalProperties: true },
  // Hundreds of operations and models: /docs shows one tag (NetBox app) at a time, dcim first, its
  // operations listed; "all" in the selector is the whole document, its tags collapsed.
  ui: { docExpansion: 'none', defaultModelsExpandDepth: -1 },
  docsSections: { primary: 'dcim', ui: { docExpansion: 'list' } },
};

/** `<filter>__<lookup>` query parameters of an operation that also has `<filter>`: folded into the filter's description. */
function foldLookups(doc: { paths?: Record<string, Record<string, { parameters?: Array<Record<string, unknown>> }>> }): void {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      const params = op?.parameters;
      if (!Array.isArray(params)) continue;
      const query = new Set(params.filter((p) => p.in === 'query').map((p) => p.name as string));
      const lookups = new Map<string, string[]>();
      const kept = params.filter((p) => {
        const name = p.name as string;
        const cut = p.in === 'query' ? name.lastIndexOf('__') : -1;
        if (cut <= 0 || !query.has(name.slice(0, cut))) return true;
        const base = name.slice(0, cut);
        lookups.set(base, [...(lookups.get(base) ?? []), name.slice(cut + 2)]);
        return false;
      });
      for (const p of kept) {
        const l = p.in === 'query' ? lookups.get(p.name as string) : undefined;
        if (l) p.description = `${p.description ? `${p.description} ` : ''}Lookups: ${p.name as string}__{${l.join(',')}}.`;
      }
      op.parameters = kept;
    }
  }
}
