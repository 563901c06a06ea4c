import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { HUB_LABELS, isLabel, labelsOf, profileView, ProfileExists, usernameProblem, UsernameTaken, type HubDetail, type HubRow, type HubStore, type ProfileRow } from '../domain/cloud/hub.ts';
import { assetInfos, publishToHub } from '../domain/cloud/hub-publish.ts';
import { isUuid } from '../domain/cloud/workflows.ts';
import { cloudError } from '../identity/errors.ts';
import type { Identity } from '../identity/index.ts';
import { storable } from '../identity/store.ts';
import { addContentSchemas } from '../schemas/cloud-content.ts';
import { arrayOf, badRequest, cloudRoute, errors, noContent, objectBody, principal, ref } from './cloud-common.ts';
import { optText, page, qEnum, qInt, qString, queryOf, strList, text, urlText } from './content-params.ts';
import type { WorkflowRouteDeps } from './workflows.ts';

/** Largest hub file (thumbnail, sample image or video). */
export const MAX_HUB_ASSET_BYTES = 50 * 1024 * 1024;
const UPLOAD_TTL_MS = 60 * 60_000;
const MAX_PAGE = 100;
const MAX_INDEX = 10_000;
/** Upload URLs a workspace may hold open at once. */
export const MAX_OPEN_UPLOADS = 100;
/** What hub files may be: shown inline on the service's own origin, so never HTML, SVG or script. */
const HUB_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'image/avif', 'video/mp4', 'video/webm']);

export interface HubRouteDeps extends WorkflowRouteDeps {
  db: () => Kysely<any>;
  identity: Identity;
  /** `<data-dir>/hub-assets`. */
  assetDir: string;
  /** New publications wait for an operator (pending) instead of being approved at once. */
  moderation: boolean;
}

const profileNotFound = () => cloudError(404, 'not_found', 'Hub profile not found');
const hubNotFound = () => cloudError(404, 'not_found', 'Hub workflow not found');

function iso(ms: unknown): string {
  return new Date(Number(ms)).toISOString();
}

/** Hub workflows of the service (the hub is shared by every workspace). */
export function hubRoutes(app: FastifyInstance, d: HubRouteDeps): void {
  addContentSchemas(app, ['HubLabel', 'HubProfile', 'CreateHubProfileRequest', 'HubWorkflow', 'HubWorkflowList', 'PublishHubWorkflowRequest', 'HubWorkflowDetail', 'HubWorkflowIndexEntry']);
  const { hub } = d;
  const tags = ['hub'];
  const assetUrl = (req: FastifyRequest, id: string, filename: string) => `${d.baseUrl(req)}/api/hub/assets/${id}/${encodeURIComponent(filename)}`;

  const countsFor = async (rows: ProfileRow[]) => hub.workflowCounts(rows.map((r) => r.workspace_id));
  const withCount = async (p: ProfileRow) => profileView(p, (await countsFor([p])).get(p.workspace_id) ?? 0);

  /** A hub file of the caller's workspace (by upload id) or an http(s) URL, as the URL to show. */
  const mediaUrl = async (req: FastifyRequest, ws: string, v: unknown, name: string): Promise<string | undefined> => {
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v === 'string' && isUuid(v)) {
      const up = await hub.upload(v.toLowerCase());
      if (!up || up.workspace_id !== ws || up.uploaded_at === null) badRequest(`${name} names no uploaded hub file of this workspace`);
      return assetUrl(req, up.id, up.filename);
    }
    return urlText(v, name);
  };

  const hubView = async (r: HubRow, opts: { content: boolean; author?: ProfileRow | null }): Promise<Record<string, unknown>> => {
    const detail = JSON.parse(r.detail) as HubDetail;
    const author = opts.author !== undefined ? opts.author : await hub.profileOf(r.workspace_id);
    const out: Record<string, unknown> = {
      share_id: r.share_id,
      workflow_id: r.workflow_id,
      name: r.name,
      description: r.description,
      status: r.status,
      ...(author ? { author: profileView(author) } : {}),
      labels: labelsOf(JSON.parse(r.labels)),
      tags: detail.tags,
      models: detail.models,
      custom_nodes: detail.custom_nodes,
      ...(detail.thumbnail_type ? { thumbnail_type: detail.thumbnail_type } : {}),
      ...(detail.thumbnail_url ? { thumbnail_url: detail.thumbnail_url } : {}),
      ...(detail.thumbnail_comparison_url ? { thumbnail_comparison_url: detail.thumbnail_comparison_url } : {}),
      ...(detail.tutorial_url ? { tutorial_url: detail.tutorial_url } : {}),
      sample_image_urls: detail.sample_image_urls,
      assets: detail.assets,
      likes: Number(r.likes),
      views: Number(r.views),
      forks: Number(r.forks),
      publish_time: iso(r.publish_time),
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    };
    if (opts.content) out.content = JSON.parse(r.workflow_json);
    return out;
  };

  // ---- labels

  cloudRoute(app, 'GET', '/api/hub/labels', { operationId: 'listHubLabels', summary: 'List available hub labels', tags, description: 'Returns the list of labels/categories available for tagging hub content (a tag of a published workflow that is a label id becomes one of its labels).', response: { 200: arrayOf('HubLabel', 'Label list') } }, async () => HUB_LABELS, 'public');

  // ---- profiles

  cloudRoute(
    app,
    'GET',
    '/api/hub/profiles',
    { operationId: 'listHubProfiles', summary: 'List hub user profiles', tags, description: 'Returns a paginated list of public hub user profiles, by username; `search` matches a substring of the username or display name.', querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE }, offset: { type: 'integer', minimum: 0 }, search: { type: 'string', maxLength: 200 } } }, response: { 200: { description: 'Profile list', type: 'object', properties: { profiles: { type: 'array', items: { $ref: 'HubProfile#' } }, total: { type: 'integer' }, has_more: { type: 'boolean' } } }, ...errors(400) } },
    async (req) => {
      const q = queryOf(req.query);
      const limit = qInt(q, 'limit', 1, MAX_PAGE, 20);
      const offset = qInt(q, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
      const { rows, total } = await hub.listProfiles({ search: qString(q, 'search'), limit, offset });
      const counts = await countsFor(rows);
      return { profiles: rows.map((r) => profileView(r, counts.get(r.workspace_id) ?? 0)), ...page(rows, total, offset) };
    },
    'public',
  );

  cloudRoute(
    app,
    'POST',
    '/api/hub/profiles',
    { operationId: 'createHubProfile', summary: 'Create a Hub profile', tags, description: 'Creates the hub profile of a workspace the caller belongs to (one per workspace). The username (3-39 of letters, digits, "-", "_"; unique regardless of case) is immutable after creation. `avatar_token` is an uploaded hub file id or an http(s) URL.', body: { $ref: 'CreateHubProfileRequest#' }, response: { 201: ref('HubProfile', 'Hub profile created'), ...errors(400, 404, 409) } },
    async (req, reply) => {
      const p = principal(req);
      const b = objectBody(req);
      if (typeof b.workspace_id !== 'string' || !storable(b.workspace_id, 100)) badRequest('workspace_id must be a string');
      const e = usernameProblem(b.username);
      if (e) badRequest(e);
      const fields = { username: b.username as string, display_name: optText(b.display_name, 'display_name', 100), bio: optText(b.description, 'description', 1000), links: strList(b.website_urls, 'website_urls', 10, 2048).map((u, i) => urlText(u, `website_urls[${i}]`)) };
      const m = await d.identity.membership(p.userId, b.workspace_id);
      if (!m) throw cloudError(404, 'not_found', 'Workspace not found');
      const avatar = await mediaUrl(req, m.id, b.avatar_token, 'avatar_token');
      try {
        const row = await hub.createProfile(m.id, p.userId, { ...fields, avatar_url: avatar });
        return reply.code(201).send(profileView(row, 0));
      } catch (err) {
        if (err instanceof ProfileExists) throw cloudError(409, 'profile_exists', 'This workspace already has a hub profile');
        if (err instanceof UsernameTaken) throw cloudError(409, 'username_taken', 'This username is already taken');
        throw err;
      }
    },
  );

  cloudRoute(
    app,
    'GET',
    '/api/hub/profiles/check',
    { operationId: 'checkHubProfileUsername', summary: 'Check if a hub username is available', tags, description: 'Returns whether the given username is available for registration (false when taken, reserved or not a valid username).', querystring: { type: 'object', required: ['username'], properties: { username: { type: 'string' } } }, response: { 200: { description: 'Availability result', type: 'object', properties: { available: { type: 'boolean' }, username: { type: 'string' } } }, ...errors(400) } },
    async (req) => {
      const username = qString(queryOf(req.query), 'username', 100);
      if (username === undefined) badRequest('username is required');
      return { available: await hub.usernameAvailable(username), username };
    },
    'public',
  );

  cloudRoute(app, 'GET', '/api/hub/profiles/me', { operationId: 'getMyHubProfile', summary: "Get the authenticated user's hub profile", tags, description: 'Returns the hub profile of the current workspace (404 when it has none).', response: { 200: ref('HubProfile', 'Profile'), ...errors(404) } }, async (req) => {
    const prof = await hub.profileOf(principal(req).workspaceId);
    if (!prof) throw profileNotFound();
    return withCount(prof);
  });

  cloudRoute(
    app,
    'PUT',
    '/api/hub/profiles/me',
    { operationId: 'updateMyHubProfile', summary: "Update the authenticated user's hub profile", tags, description: 'Updates display_name, bio, avatar_url and links of the current workspace’s hub profile; creates it when there is none and a username is given. The username cannot change (409).', body: { type: 'object', properties: { username: { type: 'string' }, display_name: { type: 'string' }, bio: { type: 'string' }, avatar_url: { type: 'string', format: 'uri' }, links: { type: 'array', items: { type: 'string', format: 'uri' } } } }, response: { 200: ref('HubProfile', 'Updated profile'), ...errors(400, 404, 409) } },
    async (req) => {
      const p = principal(req);
      const b = objectBody(req);
      const patch = {
        display_name: optText(b.display_name, 'display_name', 100),
        bio: optText(b.bio, 'bio', 1000),
        avatar_url: b.avatar_url === undefined || b.avatar_url === null ? undefined : await mediaUrl(req, p.workspaceId, b.avatar_url, 'avatar_url'),
        links: b.links === undefined ? undefined : strList(b.links, 'links', 10, 2048).map((u, i) => urlText(u, `links[${i}]`)),
      };
      let prof = await hub.profileOf(p.workspaceId);
      if (!prof) {
        if (b.username === undefined) throw profileNotFound();
        const e = usernameProblem(b.username);
        if (e) badRequest(e);
        try {
          return profileView(await hub.createProfile(p.workspaceId, p.userId, { username: b.username as string, ...patch, links: patch.links ?? [] }), 0);
        } catch (err) {
          if (err instanceof UsernameTaken) throw cloudError(409, 'username_taken', 'This username is already taken');
          if (!(err instanceof ProfileExists)) throw err;
          // A concurrent PUT created it: this one updates it, as it would a moment later.
          prof = await hub.profileOf(p.workspaceId);
          if (!prof) throw cloudError(409, 'profile_exists', 'This workspace already has a hub profile');
        }
      }
      if (b.username !== undefined && b.username !== prof.username) throw cloudError(409, 'username_immutable', 'The username of a hub profile cannot be changed');
      return withCount(await hub.updateProfile(prof, patch));
    },
  );

  cloudRoute(app, 'GET', '/api/hub/profiles/:username', { operationId: 'getHubProfile', summary: 'Get a hub profile by username', tags, description: 'Returns the public hub profile for the given username (any case).', params: { type: 'object', required: ['username'], properties: { username: { type: 'string' } } }, response: { 200: ref('HubProfile', 'Profile'), ...errors(404) } }, async (req) => {
    const prof = await hub.profileByUsername((req.params as { username: string }).username, true);
    if (!prof) throw profileNotFound();
    return withCount(prof);
  }, 'public');

  // ---- published workflows

  const listQuery = { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE }, offset: { type: 'integer', minimum: 0 }, sort: { type: 'string', enum: ['created_at', 'updated_at', 'likes', 'views', 'forks', 'name'] }, order: { type: 'string', enum: ['asc', 'desc'] }, search: { type: 'string', maxLength: 200 }, labels: { type: 'string', description: 'Label ids, comma-separated (any of them)' } } };
  cloudRoute(
    app,
    'GET',
    '/api/hub/workflows',
    { operationId: 'listHubWorkflows', summary: 'List published hub workflows', tags, description: 'Returns a paginated list of approved hub workflows (without their graphs). `search` matches name or description; `labels` keeps those with any of the label ids; `sort` is created_at, updated_at (default), likes, views, forks or name.', querystring: listQuery, response: { 200: ref('HubWorkflowList', 'Hub workflow list'), ...errors(400) } },
    async (req) => {
      const q = queryOf(req.query);
      const sort = qEnum(q, 'sort', ['created_at', 'updated_at', 'likes', 'views', 'forks', 'name'] as const, 'updated_at');
      const order = qEnum(q, 'order', ['asc', 'desc'] as const, sort === 'name' ? 'asc' : 'desc');
      const limit = qInt(q, 'limit', 1, MAX_PAGE, 20);
      const offset = qInt(q, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
      const labelText = qString(q, 'labels', 1000);
      const labels = labelText?.split(',').map((s) => s.trim()).filter(Boolean);
      if (labels?.some((l) => !isLabel(l))) badRequest('labels must be label ids from GET /api/hub/labels');
      const { rows, total } = await hub.list({ search: qString(q, 'search'), labels, sort, order, limit, offset });
      const authors = await hub.profilesOf(rows.map((r) => r.workspace_id));
      return { workflows: await Promise.all(rows.map((r) => hubView(r, { content: false, author: authors.get(r.workspace_id) ?? null }))), ...page(rows, total, offset) };
    },
    'public',
  );

  cloudRoute(app, 'GET', '/api/hub/workflows/index', { operationId: 'getHubWorkflowIndex', summary: 'Get the hub workflow index', tags, description: `Returns the lightweight index of approved hub workflows (newest change first, at most ${MAX_INDEX}) for client-side search and navigation.`, response: { 200: arrayOf('HubWorkflowIndexEntry', 'Workflow index') } }, async () => {
    const rows = await hub.index(MAX_INDEX);
    const authors = await hub.profilesOf(rows.map((r) => r.workspace_id));
    return rows.map((r) => {
      const a = authors.get(r.workspace_id);
      return { share_id: r.share_id, name: r.name, ...(a ? { author_username: a.username } : {}), labels: JSON.parse(r.labels), likes: Number(r.likes), updated_at: iso(r.updated_at) };
    });
  }, 'public');

  cloudRoute(
    app,
    'POST',
    '/api/hub/workflows',
    {
      operationId: 'publishHubWorkflow',
      summary: 'Publish a workflow to the hub',
      tags,
      description: `Publishes (or republishes, keeping its share id) a workflow of the current workspace to the hub under the workspace's hub profile (\`username\`). \`workflow_filename\` is a user data file (e.g. workflows/my.json) or the id of a saved workflow; \`asset_ids\` are assets of the workspace; thumbnails and samples are uploaded hub file ids or http(s) URLs. The entry is approved at once, or pending until an operator reviews it when the server runs with --hub-moderation.`,
      body: { $ref: 'PublishHubWorkflowRequest#' },
      response: { 200: ref('HubWorkflowDetail', 'Workflow published to hub'), ...errors(400, 404, 413) },
    },
    async (req) => {
      const p = principal(req);
      const b = objectBody(req);
      const username = text(b.username, 'username', 100);
      const name = text(b.name, 'name', 255);
      const file = text(b.workflow_filename, 'workflow_filename', 1000);
      if (!Array.isArray(b.asset_ids)) badRequest('asset_ids must be an array of asset ids');
      const assetIds = strList(b.asset_ids, 'asset_ids', 50, 100);
      const description = optText(b.description, 'description', 5000) ?? '';
      const tagList = strList(b.tags, 'tags', 20, 50);
      const models = strList(b.models, 'models', 100, 300);
      const customNodes = strList(b.custom_nodes, 'custom_nodes', 100, 300);
      const tutorial = b.tutorial_url === undefined || b.tutorial_url === null || b.tutorial_url === '' ? undefined : urlText(b.tutorial_url, 'tutorial_url');
      let metadata: Record<string, unknown> | undefined;
      if (b.metadata !== undefined && b.metadata !== null) {
        if (typeof b.metadata !== 'object' || Array.isArray(b.metadata)) badRequest('metadata must be a JSON object');
        if (Buffer.byteLength(JSON.stringify(b.metadata)) > 64 * 1024) badRequest('metadata must be at most 65536 bytes of JSON');
        metadata = b.metadata as Record<string, unknown>;
      }
      const thumbType = b.thumbnail_type;
      if (thumbType !== undefined && thumbType !== null && thumbType !== 'image' && thumbType !== 'video' && thumbType !== 'image_comparison') badRequest('thumbnail_type must be one of: image, video, image_comparison');
      const samples = strList(b.sample_image_tokens_or_urls, 'sample_image_tokens_or_urls', 10, 2048);

      const prof = await hub.profileOf(p.workspaceId);
      if (!prof || prof.username_norm !== username.toLowerCase()) throw cloudError(404, 'not_found', 'Hub profile not found: create the workspace’s hub profile first and publish under its username');
      const thumbnail = await mediaUrl(req, p.workspaceId, b.thumbnail_token_or_url, 'thumbnail_token_or_url');
      const comparison = await mediaUrl(req, p.workspaceId, b.thumbnail_comparison_token_or_url, 'thumbnail_comparison_token_or_url');
      const sampleUrls: string[] = [];
      for (const [i, s] of samples.entries()) sampleUrls.push((await mediaUrl(req, p.workspaceId, s, `sample_image_tokens_or_urls[${i}]`))!);
      const assets = await assetInfos(d.db, p.workspaceId, assetIds);

      const detail: HubDetail = { tags: tagList, models, custom_nodes: customNodes, tutorial_url: tutorial, metadata, thumbnail_type: (thumbType as string | undefined) ?? undefined, thumbnail_url: thumbnail, thumbnail_comparison_url: comparison, sample_image_urls: sampleUrls, assets };
      const { row, workflow: w, content, status } = await publishToHub(d, { workspaceId: p.workspaceId, userId: p.userId, file, name, description, detail, moderation: d.moderation });
      return {
        share_id: row.share_id,
        workflow_id: w.id,
        name,
        status,
        description,
        tags: tagList,
        models,
        custom_nodes: customNodes,
        ...(thumbType ? { thumbnail_type: thumbType } : {}),
        ...(thumbnail ? { thumbnail_url: thumbnail } : {}),
        ...(comparison ? { thumbnail_comparison_url: comparison } : {}),
        ...(tutorial ? { tutorial_url: tutorial } : {}),
        ...(metadata ? { metadata } : {}),
        sample_image_urls: sampleUrls,
        publish_time: iso(row.publish_time),
        workflow_json: content,
        assets,
        profile: await withCount(prof),
      };
    },
  );

  cloudRoute(app, 'GET', '/api/hub/workflows/:share_id', { operationId: 'getHubWorkflow', summary: 'Get a published hub workflow by share ID', tags, description: 'Returns the full details of a hub workflow, with its graph (`content`). Entries not approved are visible only to their own workspace.', params: { type: 'object', required: ['share_id'], properties: { share_id: { type: 'string' } } }, response: { 200: ref('HubWorkflow', 'Hub workflow'), ...errors(404) } }, async (req) => {
    const r = await hub.byShareId((req.params as { share_id: string }).share_id);
    if (!r || (r.status !== 'approved' && r.status !== 'deprecated' && r.workspace_id !== req.principal?.workspaceId)) throw hubNotFound();
    if (r.workspace_id !== req.principal?.workspaceId) await hub.countView(r.share_id);
    return hubView(r, { content: true });
  }, 'public');

  cloudRoute(app, 'DELETE', '/api/hub/workflows/:share_id', { operationId: 'deleteHubWorkflow', summary: 'Unpublish a workflow from the hub', tags, description: 'Removes a workflow of the current workspace from the hub (its share link stays until the workflow is deleted).', params: { type: 'object', required: ['share_id'], properties: { share_id: { type: 'string' } } }, response: { 204: { description: 'Successfully unpublished' }, ...errors(404) } }, async (req, reply) => {
    const p = principal(req);
    const r = await hub.byShareId((req.params as { share_id: string }).share_id);
    if (!r || r.workspace_id !== p.workspaceId) throw hubNotFound();
    const removed = await hub.remove(r.share_id);
    await d.workflows.setListed(r.workflow_id, false);
    if (!removed) throw hubNotFound();
    return noContent(reply);
  });

  // ---- hub files: single-use pre-signed upload URLs

  cloudRoute(
    app,
    'POST',
    '/api/hub/assets/upload-url',
    { operationId: 'getHubAssetUploadUrl', summary: 'Get a pre-signed upload URL for a hub asset', tags, description: `Returns a single-use URL (valid one hour) to PUT the file's bytes to, with the declared Content-Type, no credentials needed; and the public URL it is served at afterwards. Types: ${[...HUB_TYPES].join(', ')}; at most ${MAX_HUB_ASSET_BYTES} bytes. The upload id (\`upload_id\`) can stand for the file in thumbnail, sample and avatar fields.`, body: { type: 'object', required: ['filename', 'content_type'], properties: { filename: { type: 'string', maxLength: 255 }, content_type: { type: 'string' }, size: { type: 'integer', format: 'int64' } } }, response: { 200: { description: 'Upload URL', type: 'object', properties: { upload_url: { type: 'string', format: 'uri' }, asset_url: { type: 'string', format: 'uri' }, upload_id: { type: 'string' }, expires_at: { type: 'string', format: 'date-time' } } }, ...errors(400, 429) } },
    async (req) => {
      const p = principal(req);
      const b = objectBody(req);
      const filename = text(b.filename, 'filename', 255);
      if (/[/\\]/.test(filename) || filename === '.' || filename === '..') badRequest('filename must be a file name without folders');
      if (typeof b.content_type !== 'string' || !HUB_TYPES.has(b.content_type.toLowerCase())) badRequest(`content_type must be one of: ${[...HUB_TYPES].join(', ')}`);
      let size: number | undefined;
      if (b.size !== undefined && b.size !== null) {
        if (typeof b.size !== 'number' || !Number.isSafeInteger(b.size) || b.size < 1) badRequest('size must be a positive integer');
        if (b.size > MAX_HUB_ASSET_BYTES) badRequest(`size must be at most ${MAX_HUB_ASSET_BYTES} bytes`);
        size = b.size;
      }
      const made = await hub.createUpload(p.workspaceId, { filename, content_type: (b.content_type as string).toLowerCase(), size }, UPLOAD_TTL_MS, MAX_OPEN_UPLOADS);
      if (!made) throw cloudError(429, 'too_many_uploads', `At most ${MAX_OPEN_UPLOADS} upload URLs may be open at once; use or let some expire`);
      const { row, token } = made;
      return { upload_url: `${d.baseUrl(req)}/api/hub/assets/upload/${row.id}?token=${token}`, asset_url: assetUrl(req, row.id, filename), upload_id: row.id, expires_at: iso(row.expires_at) };
    },
  );

  const fileOf = (id: string) => path.join(d.assetDir, id);
  /** The upload a PUT names, when its token matches and it is still open; else the CloudError. */
  const openUpload = async (req: FastifyRequest) => {
    const id = (req.params as { upload_id: string }).upload_id;
    const token = qString(queryOf(req.query), 'token', 100);
    const up = await hub.upload(id);
    if (!up) throw cloudError(404, 'not_found', 'Upload not found');
    if (token === undefined || !hub.tokenMatches(up, token)) throw cloudError(403, 'invalid_upload_token', 'The upload URL is not valid');
    if (up.uploaded_at !== null) throw cloudError(409, 'already_uploaded', 'This upload URL was already used');
    if (Number(up.expires_at) <= Date.now()) throw cloudError(403, 'upload_expired', 'The upload URL has expired');
    return up;
  };

  app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_HUB_ASSET_BYTES }, (_req, body, done) => done(null, body));
    // A declared length over the limit is refused before any byte is read, with the CloudError shape.
    raw.addHook('onRequest', async (req) => {
      const len = Number(req.headers['content-length']);
      if (Number.isFinite(len) && len > MAX_HUB_ASSET_BYTES) throw cloudError(413, 'payload_too_large', `A hub file is at most ${MAX_HUB_ASSET_BYTES} bytes`, { max_bytes: MAX_HUB_ASSET_BYTES });
      // The URL's token is its credential: checked before a byte of the body is read, so no one without it
      // makes the server buffer up to the limit.
      await openUpload(req);
    });
    cloudRoute(
      raw,
      'PUT',
      '/api/hub/assets/upload/:upload_id',
      { operationId: 'uploadHubAsset', summary: 'Upload the bytes of a hub asset', tags, description: 'The pre-signed upload URL from POST /api/hub/assets/upload-url: the body is the file, Content-Type the declared type. Single use; expires after an hour.', params: { type: 'object', required: ['upload_id'], properties: { upload_id: { type: 'string' } } }, querystring: { type: 'object', required: ['token'], properties: { token: { type: 'string' } } }, consumes: [...HUB_TYPES], response: { 200: { description: 'Uploaded', type: 'object', properties: { asset_url: { type: 'string' }, size: { type: 'integer' } } }, ...errors(400, 403, 404, 409, 413) } },
      async (req) => {
        const up = await openUpload(req);
        const ct = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (ct !== up.content_type) badRequest(`Content-Type must be ${up.content_type}, as declared`);
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        if (body.length === 0) badRequest('The body is empty');
        if (up.size !== null && body.length !== Number(up.size)) badRequest(`The body has ${body.length} bytes; ${up.size} were declared`);
        await fs.promises.mkdir(d.assetDir, { recursive: true });
        // Unique per request: concurrent PUTs of one URL each write their own file, and the claim below picks one.
        const tmp = `${fileOf(up.id)}.${randomUUID()}.part`;
        await fs.promises.writeFile(tmp, body, { flag: 'wx' });
        if (!(await hub.completeUpload(up.id, body.length))) {
          await fs.promises.rm(tmp, { force: true });
          throw cloudError(409, 'already_uploaded', 'This upload URL was already used');
        }
        await fs.promises.rename(tmp, fileOf(up.id));
        return { asset_url: assetUrl(req, up.id, up.filename), size: body.length };
      },
      'public',
      { bodyLimit: MAX_HUB_ASSET_BYTES },
    );
  });

  cloudRoute(
    app,
    'GET',
    '/api/hub/assets/:upload_id/:filename',
    { operationId: 'getHubAsset', summary: 'A hub asset', tags, description: 'The bytes of an uploaded hub file (public, immutable).', params: { type: 'object', required: ['upload_id', 'filename'], properties: { upload_id: { type: 'string' }, filename: { type: 'string' } } }, response: { 200: { description: 'The file' }, ...errors(404) } },
    async (req, reply: FastifyReply) => {
      const up = await hub.upload((req.params as { upload_id: string }).upload_id);
      const st = up && up.uploaded_at !== null ? await fs.promises.stat(fileOf(up.id)).catch(() => null) : null;
      if (!up || !st?.isFile()) throw cloudError(404, 'not_found', 'Hub asset not found');
      const stream = fs.createReadStream(fileOf(up.id));
      return reply
        .headers({
          'content-type': up.content_type,
          'content-length': String(st.size),
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
          'cache-control': 'public, max-age=31536000, immutable',
        })
        .send(stream);
    },
    'public',
  );
}

