import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { availablePacks, ifNoneMatchHits, installPack, resolvePack, uninstallPack } from '../domain/cloud/experiment-nodes.ts';
import { renderStaticSchema } from '../engine/static-schema.ts';
import type { NodeRegistry, Rendered } from '../engine/registry.ts';
import { cloudError } from '../identity/errors.ts';
import { badRequest, cloudRoute, errors, noContent, objectBody, principal, ref } from './cloud-common.ts';
import { param, wellFormed } from './cloud-params.ts';

/** The schema only changes with a deploy: caches may keep it a while, and revalidate with the ETag. */
const CACHE_CONTROL = 'public, max-age=300, must-revalidate';

const ifNoneMatch = { type: 'object', properties: { 'if-none-match': { type: 'string' } } };

function sendStatic(req: FastifyRequest, reply: FastifyReply, r: Rendered): FastifyReply {
  reply.header('ETag', r.etag).header('Cache-Control', CACHE_CONTROL);
  const h = req.headers['if-none-match'];
  if (ifNoneMatchHits(Array.isArray(h) ? h.join(',') : h, r.etag)) return reply.code(304).send();
  return reply.type('application/json').send(r.body);
}

/** /api/experiment/nodes: the pre-rendered static schema (conditional GETs) and node packs per workspace. */
export function experimentNodeRoutes(app: FastifyInstance, db: () => Kysely<any>, registry: NodeRegistry): void {
  const schema = renderStaticSchema(registry);
  const packs = availablePacks(registry.names().map((name) => ({ name, pythonModule: registry.get(name)!.def.pythonModule })));

  cloudRoute(
    app,
    'GET',
    '/api/experiment/nodes',
    {
      operationId: 'getNodeInfoSchema',
      tags: ['runtime-only'],
      description: 'Returns the static ComfyUI object_info schema, identical for every caller, rendered once at startup with empty model/user-file context. Served as pre-rendered bytes with ETag + Cache-Control validators; a matching If-None-Match (RFC 9110 list, weak comparison) answers 304.',
      headers: ifNoneMatch,
      response: { 200: { description: 'Node schema keyed by class', type: 'object', additionalProperties: true, headers: { ETag: { type: 'string' }, 'Cache-Control': { type: 'string' } } }, 304: { description: 'Not modified', type: 'null' } },
    },
    (req, reply) => sendStatic(req, reply, schema.all),
    'public',
  );

  cloudRoute(
    app,
    'GET',
    '/api/experiment/nodes/:id',
    {
      operationId: 'getNodeByID',
      tags: ['runtime-only'],
      description: "Returns one node's definition from the pre-indexed object_info schema, as pre-rendered bytes with ETag + Cache-Control validators for conditional requests.",
      params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      headers: ifNoneMatch,
      response: { 200: { description: 'NodeInfo', type: 'object', additionalProperties: true }, 304: { description: 'Not modified', type: 'null' }, ...errors(404) },
    },
    (req, reply) => {
      const r = schema.perClass.get(param(req, 'id'));
      if (!r) throw cloudError(404, 'not_found', 'Node not found');
      return sendStatic(req, reply, r);
    },
    'public',
  );

  const cloudNode = (id: string, version: string, installedAt: number) => {
    const classes = packs.get(id) ?? [];
    return { id, name: id, version, description: `${classes.length} node class${classes.length === 1 ? '' : 'es'}: ${classes.join(', ')}`, installed_at: new Date(installedAt).toISOString(), enabled: true };
  };

  cloudRoute(
    app,
    'POST',
    '/api/experiment/nodes',
    {
      operationId: 'installCloudNode',
      tags: ['runtime-only'],
      description: "Installs a custom node package in the cloud runtime by ID or repository URL. Installable packages are those the server has loaded; the installation is the workspace's own.",
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' }, version: { type: 'string' } } },
      response: { 200: ref('CloudNode'), ...errors(400, 404) },
    },
    async (req) => {
      const owner = principal(req).workspaceId;
      const b = objectBody(req);
      if (typeof b.id !== 'string' || b.id.trim() === '' || b.id.length > 2048 || !wellFormed(b.id)) badRequest('id is required: a node package id or repository URL', { field: 'id' });
      if (b.version !== undefined && b.version !== null && (typeof b.version !== 'string' || b.version.length > 100 || !wellFormed(b.version))) badRequest('version must be a string of at most 100 characters', { field: 'version' });
      const id = resolvePack(packs, (b.id as string).trim());
      if (!id) throw cloudError(404, 'not_found', 'Node package not found');
      const version = typeof b.version === 'string' && b.version.trim() !== '' ? b.version.trim() : 'latest';
      const p = await installPack(db(), owner, id, version, Date.now());
      return cloudNode(p.id, p.version, p.installedAt);
    },
  );

  cloudRoute(
    app,
    'DELETE',
    '/api/experiment/nodes/:id',
    { operationId: 'uninstallCloudNode', tags: ['runtime-only'], description: 'Removes a custom node package from the cloud runtime.', params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } }, response: { 204: { description: 'Removed', type: 'null' }, ...errors(404) } },
    async (req, reply) => {
      const owner = principal(req).workspaceId;
      const raw = param(req, 'id');
      const id = wellFormed(raw) ? (resolvePack(packs, raw) ?? raw) : '';
      if (!id || !(await uninstallPack(db(), owner, id))) throw cloudError(404, 'not_found', 'Node package not installed');
      return noContent(reply);
    },
  );
}
