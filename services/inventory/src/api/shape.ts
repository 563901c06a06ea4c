import type { FastifyInstance, FastifyRequest } from 'fastify';
import { baseUrl } from './pagination.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route builds absolute URLs and applies ?brief / ?fields itself. */
    shaped?: boolean;
  }
}

/**
 * Keys whose values are event payloads or raw records: NetBox keeps relative URLs there (its event
 * data is serialised without a request), so the response hook leaves them as they are.
 */
const OPAQUE = new Set(['data', 'snapshots', 'prechange_data', 'postchange_data', 'kwargs', 'args', 'arguments', 'request', 'action_data', 'context', 'custom_fields', 'conditions', 'body']);

/** Brief forms of the endpoints that are not registry models (NetBox's brief_fields). */
const BRIEF: Array<[RegExp, string[]]> = [
  [/^\/api\/extras\/webhooks\//, ['id', 'url', 'display', 'name', 'description']],
  [/^\/api\/extras\/event-rules\//, ['id', 'url', 'display', 'name', 'description']],
  [/^\/api\/users\/tokens\//, ['id', 'url', 'display', 'key', 'write_enabled', 'description']],
  [/^\/api\/users\/users\//, ['id', 'url', 'display', 'username']],
  [/^\/api\/core\/object-changes\//, ['id', 'url', 'display', 'action']],
  [/^\/api\/core\/background-tasks\//, ['id', 'url', 'description', 'status']],
];

function last(v: unknown): string | undefined {
  const s = Array.isArray(v) ? v[v.length - 1] : v;
  return typeof s === 'string' ? s : undefined;
}

function truthy(v: unknown): boolean {
  const s = last(v);
  return s !== undefined && ['true', '1', 'yes', 'on'].includes(s.trim().toLowerCase());
}

/** Relative `url` / `display_url` values made absolute with the request's origin, outside event payloads. */
export function absolutise(v: unknown, base: string): unknown {
  if (Array.isArray(v)) return v.map((x) => absolutise(x, base));
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if ((k === 'url' || k === 'display_url') && typeof x === 'string' && x.startsWith('/') && !x.startsWith('//')) out[k] = base + x;
    else if (OPAQUE.has(k)) out[k] = x;
    else out[k] = absolutise(x, base);
  }
  return out;
}

function pick(obj: unknown, keep: string[] | undefined, omit: string[] | undefined): unknown {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return obj;
  let entries = Object.entries(obj);
  if (keep) entries = entries.filter(([k]) => keep.includes(k));
  if (omit) entries = entries.filter(([k]) => !omit.includes(k));
  return Object.fromEntries(entries);
}

const list = (s: string | undefined) => (s === undefined || s.trim() === '' ? undefined : s.split(',').map((x) => x.trim()).filter(Boolean));

/** `?brief`, `?fields=` and `?omit=` applied to a page or one object. */
function shape(req: FastifyRequest, payload: unknown): unknown {
  const q = req.query as Record<string, unknown>;
  const path = req.url.split('?')[0]!;
  const brief = truthy(q.brief) ? BRIEF.find(([re]) => re.test(path))?.[1] : undefined;
  const keep = list(last(q.fields)) ?? brief;
  const omit = list(last(q.omit));
  if (!keep && !omit) return payload;
  const apply = (o: unknown) => pick(o, keep, omit);
  if (payload && typeof payload === 'object' && !Array.isArray(payload) && Array.isArray((payload as any).results) && 'count' in payload) {
    return { ...(payload as object), results: (payload as any).results.map(apply) };
  }
  return Array.isArray(payload) ? payload.map(apply) : apply(payload);
}

/**
 * Every JSON object the API returns: absolute `url` / `display_url` (as DRF's build_absolute_uri),
 * and on reads NetBox's `?brief`, `?fields` and `?omit` for the endpoints that are not registry
 * models (those shape their own output, which this leaves unchanged).
 */
export function installResponseShaping(app: FastifyInstance): void {
  app.addHook('preSerialization', async (req, reply, payload) => {
    if (!req.url.startsWith('/api/') || reply.statusCode >= 300 || payload === null || typeof payload !== 'object') return payload;
    if (req.routeOptions.config?.shaped) return payload;
    let out: unknown = absolutise(payload, baseUrl(req));
    if (req.method === 'GET') out = shape(req, out);
    return out;
  });
}
