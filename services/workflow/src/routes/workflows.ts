import fs from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MAX_WORKFLOW_BYTES, publishUserdataWorkflow, userdataFile } from '../domain/cloud/publish.ts';
import { VersionConflict, versionView, WorkflowGone, workflowView, type WorkflowRow, type WorkflowStore } from '../domain/cloud/workflows.ts';
import type { HubStore } from '../domain/cloud/hub.ts';
import type { UserManager } from '../domain/users.ts';
import { pyUnquote } from '../files/paths.ts';
import { cloudError } from '../identity/errors.ts';
import type { Principal } from '../identity/index.ts';
import { ROLE_RANK } from '../identity/store.ts';
import { addContentSchemas } from '../schemas/cloud-content.ts';
import { badRequest, cloudRoute, errors, noContent, objectBody, principal, ref } from './cloud-common.ts';
import { graph, optText, page, qEnum, qInt, qString, queryOf, text } from './content-params.ts';

/** A graph of at most MAX_WORKFLOW_BYTES, with the body around it (name, description, base version). */
const GRAPH_BODY_LIMIT = MAX_WORKFLOW_BYTES + 64 * 1024;

const MAX_PAGE = 1000;

const wfParam = { type: 'object', required: ['workflow_id'], properties: { workflow_id: { type: 'string', format: 'uuid', description: 'The workflow ID.' } } };
const pageQuery = { limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 50, description: 'Maximum number of results' }, offset: { type: 'integer', minimum: 0, default: 0, description: 'Pagination offset' } };
const versionList = { description: 'Version list', type: 'object', properties: { versions: { type: 'array', items: { $ref: 'CloudWorkflowVersion#' } }, total: { type: 'integer' }, has_more: { type: 'boolean' } } };

const notFound = () => cloudError(404, 'not_found', 'Workflow not found');

/** The user data file a path names, decoded as the shared user data routes decode it (the reference unquotes once more). */
function fileParamOf(req: FastifyRequest): string {
  return pyUnquote((req.params as { file: string }).file ?? '');
}

/** Members change the workflows they created; admins and owners any of the workspace. */
export function canEdit(p: Principal, w: WorkflowRow): boolean {
  return w.created_by === p.userId || ROLE_RANK[p.role] >= ROLE_RANK.admin;
}

function mustEdit(p: Principal, w: WorkflowRow): void {
  if (!canEdit(p, w)) throw cloudError(403, 'forbidden', 'Only the workflow’s creator or a workspace admin can change it');
}

function parseContent(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

export interface WorkflowRouteDeps {
  workflows: WorkflowStore;
  hub: HubStore;
  users: UserManager;
  baseUrl(req: FastifyRequest): string;
}

/** Saved workflows, their versions, publishing by share id, and publishing user data files. */
export function workflowRoutes(app: FastifyInstance, d: WorkflowRouteDeps): void {
  addContentSchemas(app, ['CloudWorkflow', 'CloudWorkflowList', 'CloudWorkflowVersion', 'CreateWorkflowVersionRequest', 'WorkflowVersionResponse', 'WorkflowPublishInfo']);
  const { workflows } = d;
  const tags = ['workflows'];
  const mine = async (req: FastifyRequest): Promise<WorkflowRow> => {
    const w = await workflows.get(principal(req).workspaceId, (req.params as { workflow_id: string }).workflow_id);
    if (!w) throw notFound();
    return w;
  };

  cloudRoute(
    app,
    'GET',
    '/api/workflows',
    {
      operationId: 'listCloudWorkflows',
      summary: 'List cloud workflows',
      tags,
      description: "Returns a paginated list of the workspace's cloud workflows. `search` matches a substring of the name (case-insensitive); `sort` is created_at, updated_at (default) or name; `order` defaults to desc (asc for name).",
      querystring: { type: 'object', properties: { ...pageQuery, sort: { type: 'string', enum: ['created_at', 'updated_at', 'name'] }, order: { type: 'string', enum: ['asc', 'desc'] }, search: { type: 'string', maxLength: 200 } } },
      response: { 200: ref('CloudWorkflowList', 'Workflow list'), ...errors(400) },
    },
    async (req) => {
      const q = queryOf(req.query);
      const sort = qEnum(q, 'sort', ['created_at', 'updated_at', 'name'] as const, 'updated_at');
      const order = qEnum(q, 'order', ['asc', 'desc'] as const, sort === 'name' ? 'asc' : 'desc');
      const limit = qInt(q, 'limit', 1, MAX_PAGE, 50);
      const offset = qInt(q, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
      const { rows, total } = await workflows.list(principal(req).workspaceId, { search: qString(q, 'search'), sort, order, limit, offset });
      return { workflows: rows.map(workflowView), ...page(rows, total, offset) };
    },
  );

  cloudRoute(
    app,
    'POST',
    '/api/workflows',
    {
      operationId: 'createCloudWorkflow',
      summary: 'Create a new cloud workflow',
      tags,
      description: 'Creates a new cloud workflow with the provided name and optional initial content (which becomes version 1).',
      body: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 255 }, description: { type: 'string', maxLength: 5000 }, content: { type: 'object', additionalProperties: true } } },
      response: { 201: ref('CloudWorkflow', 'Workflow created'), ...errors(400, 413) },
    },
    async (req, reply) => {
      const p = principal(req);
      const b = objectBody(req);
      const name = text(b.name, 'name', 255);
      const description = optText(b.description, 'description', 5000) ?? '';
      const content = b.content === undefined || b.content === null ? undefined : graph(b.content, 'content', MAX_WORKFLOW_BYTES);
      const w = await workflows.create(p.workspaceId, p.userId, { name, description, content });
      return reply.code(201).send(workflowView(w));
    },
    'required',
    { bodyLimit: GRAPH_BODY_LIMIT },
  );

  cloudRoute(app, 'GET', '/api/workflows/:workflow_id', { operationId: 'getCloudWorkflow', summary: 'Get a cloud workflow by ID', tags, description: 'Returns the metadata for a cloud workflow.', params: wfParam, response: { 200: ref('CloudWorkflow', 'Workflow detail'), ...errors(404) } }, async (req) => workflowView(await mine(req)));

  cloudRoute(
    app,
    'PATCH',
    '/api/workflows/:workflow_id',
    { operationId: 'updateCloudWorkflow', summary: 'Update a cloud workflow', tags, description: 'Updates the metadata (name, description) of an existing cloud workflow. Members change the workflows they created; admins any (403 otherwise).', params: wfParam, body: { type: 'object', properties: { name: { type: 'string', maxLength: 255 }, description: { type: 'string', maxLength: 5000 } } }, response: { 200: ref('CloudWorkflow', 'Workflow updated'), ...errors(400, 403, 404) } },
    async (req) => {
      const w = await mine(req);
      const b = objectBody(req);
      const patch = { name: b.name === undefined ? undefined : text(b.name, 'name', 255), description: optText(b.description, 'description', 5000) };
      mustEdit(principal(req), w);
      const updated = await workflows.update(w, patch);
      if (!updated) throw notFound();
      return workflowView(updated);
    },
  );

  cloudRoute(app, 'DELETE', '/api/workflows/:workflow_id', { operationId: 'deleteCloudWorkflow', summary: 'Delete a cloud workflow', tags, description: 'Deletes a cloud workflow, all its versions and its hub listing.', params: wfParam, response: { 204: { description: 'Workflow deleted' }, ...errors(403, 404) } }, async (req, reply) => {
    const w = await mine(req);
    mustEdit(principal(req), w);
    if (!(await workflows.delete(w))) throw notFound();
    return noContent(reply);
  });

  cloudRoute(
    app,
    'GET',
    '/api/workflows/:workflow_id/content',
    { operationId: 'getCloudWorkflowContent', summary: 'Get the content of a cloud workflow', tags, description: 'Returns the full workflow graph JSON of the latest version (or of `version_id`); `{}` for a workflow without content.', params: wfParam, querystring: { type: 'object', properties: { version_id: { type: 'string', description: 'Specific version ID to fetch' } } }, response: { 200: { description: 'Workflow content', type: 'object', additionalProperties: true }, ...errors(404) } },
    async (req) => {
      const w = await mine(req);
      const versionId = qString(queryOf(req.query), 'version_id', 100);
      if (versionId === undefined && Number(w.latest_version) === 0) return {};
      const v = await workflows.version(w, versionId);
      if (!v) throw cloudError(404, 'not_found', 'Workflow version not found');
      return parseContent(v.content);
    },
  );

  cloudRoute(
    app,
    'PUT',
    '/api/workflows/:workflow_id/content',
    { operationId: 'updateCloudWorkflowContent', summary: 'Update the content of a cloud workflow', tags, description: 'Saves new workflow graph JSON as a new version of the cloud workflow (on top of the latest; use POST …/versions for optimistic concurrency).', params: wfParam, body: { type: 'object', additionalProperties: true, description: 'The workflow graph JSON to save' }, response: { 200: ref('CloudWorkflowVersion', 'Content updated'), ...errors(400, 403, 404, 413) } },
    async (req) => {
      const w = await mine(req);
      const content = graph(req.body, 'The request body', MAX_WORKFLOW_BYTES);
      const p = principal(req);
      mustEdit(p, w);
      try {
        return versionView((await workflows.addVersion(w, p.userId, content)).version);
      } catch (err) {
        if (err instanceof WorkflowGone) throw notFound();
        throw err;
      }
    },
    'required',
    { bodyLimit: GRAPH_BODY_LIMIT },
  );

  cloudRoute(
    app,
    'POST',
    '/api/workflows/:workflow_id/fork',
    { operationId: 'forkCloudWorkflow', summary: 'Fork a cloud workflow', tags, description: "Creates a copy (metadata and latest content) of a workflow of the current workspace, or of any published one, in the current workspace.", params: wfParam, body: { type: 'object', properties: { name: { type: 'string', maxLength: 255, description: 'Name for the forked workflow (defaults to original name)' } } }, response: { 201: ref('CloudWorkflow', 'Forked workflow'), ...errors(400, 404) } },
    async (req, reply) => {
      const p = principal(req);
      const id = (req.params as { workflow_id: string }).workflow_id;
      const src = (await workflows.get(p.workspaceId, id)) ?? (await workflows.getAny(id));
      if (!src || (src.workspace_id !== p.workspaceId && src.share_id === null)) throw notFound();
      const b = req.body === undefined || req.body === null ? {} : objectBody(req);
      const name = b.name === undefined ? src.name : text(b.name, 'name', 255);
      const latest = Number(src.latest_version) > 0 ? await workflows.version(src) : null;
      const w = await workflows.create(p.workspaceId, p.userId, { name, description: src.description, content: latest ? parseContent(latest.content) : undefined, forkedFrom: src.id });
      if (src.share_id !== null) await d.hub.countFork(src.id);
      return reply.code(201).send(workflowView(w));
    },
  );

  cloudRoute(
    app,
    'GET',
    '/api/workflows/:workflow_id/versions',
    { operationId: 'listCloudWorkflowVersions', summary: 'List versions of a cloud workflow', tags, description: 'Returns the version history of a cloud workflow, newest first.', params: wfParam, querystring: { type: 'object', properties: pageQuery }, response: { 200: versionList, ...errors(400, 404) } },
    async (req) => {
      const w = await mine(req);
      const q = queryOf(req.query);
      const limit = qInt(q, 'limit', 1, MAX_PAGE, 50);
      const offset = qInt(q, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
      const { rows, total } = await workflows.versions(w, limit, offset);
      return { versions: rows.map(versionView), ...page(rows, total, offset) };
    },
  );

  cloudRoute(
    app,
    'POST',
    '/api/workflows/:workflow_id/versions',
    {
      operationId: 'createCloudWorkflowVersion',
      summary: 'Create a new cloud workflow version',
      tags,
      description: 'Creates a new workflow version with updated workflow JSON. Optimistic concurrency: `base_version` must be the latest version number (0 for a workflow without versions), else 409 with `details.latest_version`. 403 when the caller may not change the workflow (a published workflow of another workspace, or a member who did not create it).',
      params: wfParam,
      body: { $ref: 'CreateWorkflowVersionRequest#' },
      response: { 201: ref('WorkflowVersionResponse', 'Version created'), ...errors(400, 403, 404, 409, 413) },
    },
    async (req, reply) => {
      const p = principal(req);
      const id = (req.params as { workflow_id: string }).workflow_id;
      let w = await workflows.get(p.workspaceId, id);
      if (!w) {
        const other = await workflows.getAny(id);
        if (other && other.share_id !== null) throw cloudError(403, 'forbidden', 'Only the workspace that owns this workflow can add versions to it');
        throw notFound();
      }
      const b = objectBody(req);
      const base = b.base_version;
      if (typeof base !== 'number' || !Number.isSafeInteger(base) || base < 0) badRequest('base_version must be a non-negative integer');
      const content = graph(b.workflow_json, 'workflow_json', MAX_WORKFLOW_BYTES);
      mustEdit(p, w);
      try {
        const r = await workflows.addVersion(w, p.userId, content, base);
        w = r.workflow;
        return reply.code(201).send({ id: r.version.id, version: r.version.version, latest_version: r.version.version, created_by: r.version.created_by, created_at: new Date(r.version.created_at).toISOString() });
      } catch (err) {
        if (err instanceof WorkflowGone) throw notFound();
        if (err instanceof VersionConflict) throw cloudError(409, 'version_conflict', `base_version ${base} is not the latest version (${err.latest})`, { latest_version: err.latest, base_version: base });
        throw err;
      }
    },
    'required',
    { bodyLimit: GRAPH_BODY_LIMIT },
  );

  cloudRoute(
    app,
    'GET',
    '/api/workflows/published/:share_id',
    { operationId: 'getPublishedWorkflow', summary: 'Get a published workflow by share ID', tags, description: 'Returns a published cloud workflow by its share identifier, with its latest `content`. No credentials needed.', params: { type: 'object', required: ['share_id'], properties: { share_id: { type: 'string' } } }, response: { 200: ref('CloudWorkflow', 'Published workflow'), ...errors(404) } },
    async (req) => {
      const w = await workflows.byShareId((req.params as { share_id: string }).share_id);
      if (!w) throw cloudError(404, 'not_found', 'Published workflow not found');
      const v = Number(w.latest_version) > 0 ? await workflows.version(w) : null;
      return { ...workflowView(w), content: v ? parseContent(v.content) : {} };
    },
    'public',
  );

  const fileParam = { type: 'object', required: ['file'], properties: { file: { type: 'string', description: 'File path relative to user data directory (URL-encoded, e.g. workflows%2Fmy.json)' } } };

  cloudRoute(
    app,
    'GET',
    '/api/userdata/:file/publish',
    { operationId: 'getUserdataFilePublish', summary: 'Get publish info for a userdata file', tags: ['userdata'], description: 'Returns the publish status and share info for a userdata workflow file (publish_time null, workflow_id and share_id empty when never published).', params: fileParam, response: { 200: ref('WorkflowPublishInfo', 'Publish info (publish_time is null if never published)'), ...errors(404) } },
    async (req) => {
      const p = principal(req);
      const file = fileParamOf(req);
      const w = userdataFile(d.users, p.workspaceId, file) ? await workflows.bySource(p.workspaceId, file) : null;
      if (!w || w.share_id === null) {
        const abs = userdataFile(d.users, p.workspaceId, file);
        const st = abs ? await fs.promises.stat(abs).catch(() => null) : null;
        if (!st || !st.isFile()) throw cloudError(404, 'not_found', 'Workflow file not found');
        return { workflow_id: w?.id ?? '', share_id: '', publish_time: null, listed: false, assets: [] };
      }
      return { workflow_id: w.id, share_id: w.share_id, publish_time: w.publish_time === null ? null : new Date(Number(w.publish_time)).toISOString(), listed: Number(w.listed) === 1, assets: await d.hub.assetsOf(w.id) };
    },
  );

  cloudRoute(
    app,
    'POST',
    '/api/userdata/:file/publish',
    { operationId: 'publishUserdataFile', summary: 'Publish a userdata file to the cloud', tags: ['userdata'], description: 'Makes a userdata workflow file available via a public URL (GET /api/workflows/published/{share_id}); publishing again publishes the file as it is now under the same share id.', params: fileParam, response: { 200: { description: 'Published file URL', type: 'object', properties: { url: { type: 'string', format: 'uri', description: 'Public URL of the published file' } } }, ...errors(400, 404, 413) } },
    async (req) => {
      const p = principal(req);
      const w = await publishUserdataWorkflow(d, p.workspaceId, p.userId, fileParamOf(req));
      return { url: `${d.baseUrl(req)}/api/workflows/published/${w.share_id}` };
    },
  );
}
