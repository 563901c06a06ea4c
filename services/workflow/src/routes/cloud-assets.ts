import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { AssetError } from '../domain/assets/errors.ts';
import type { AssetService, Viewer } from '../domain/assets/service.ts';
import { assetInfo, assetsFromJob, downloadToInput, exportZip, importPublished, isUuid, maskLayers, remoteMetadata, reserveExportName, settleExportName } from '../domain/cloud/cloud-assets.ts';
import { OutboundRefused, type OutboundConfig } from '../domain/cloud/outbound.ts';
import type { TaskRunner } from '../domain/cloud/tasks.ts';
import { safeRelative } from '../files/paths.ts';
import { cloudError } from '../identity/errors.ts';
import type { WsHub } from '../ws/hub.ts';
import { badRequest, cloudRoute, errors, objectBody, principal, ref, type Handler } from './cloud-common.ts';
import { param, qString, query, wellFormed } from './cloud-params.ts';

export interface CloudAssetDeps {
  db: () => Kysely<any>;
  assets?: AssetService;
  tasks: TaskRunner;
  hub: WsHub;
  outbound: OutboundConfig;
  /** The input folder a request's workspace reads (where downloads land and the mask editor saves). */
  inputDir(req: FastifyRequest): string;
  /** Files landed in the caller's input folder: LoadImage's list in object_info is rendered again. */
  inputChanged(req: FastifyRequest): void;
  exportsDir: string;
}

const MAX_ITEMS = 500;

/** The service's own errors as CloudError bodies (these routes are the hosted runtime's). */
function cloudErrors(h: Handler): Handler {
  return async (req, reply) => {
    try {
      return await h(req, reply);
    } catch (err) {
      if (err instanceof AssetError) throw cloudError(err.status, err.code.toLowerCase(), err.message, err.details);
      if (err instanceof OutboundRefused) throw cloudError(400, 'invalid_url', err.message);
      if ((err as { name?: string }).name === 'UnsafePathError') throw cloudError(400, 'invalid_path', (err as Error).message);
      throw err;
    }
  };
}

function idList(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || v.length === 0) badRequest(`${field} must be a non-empty list of asset ids`, { field });
  if (v.length > MAX_ITEMS) badRequest(`${field} holds at most ${MAX_ITEMS} ids`, { field });
  for (const id of v) if (!isUuid(id)) badRequest(`${field} must hold asset ids (UUIDs)`, { field });
  return [...new Set((v as string[]).map((s) => s.toLowerCase()))];
}

/** The optional Idempotency-Key header: a retried request gets the task the first one created. */
function idempotencyKey(req: FastifyRequest): string | undefined {
  const h = req.headers['idempotency-key'];
  if (h === undefined) return undefined;
  if (typeof h !== 'string' || h.length === 0 || h.length > 200 || !wellFormed(h)) badRequest('Idempotency-Key must be 1 to 200 printable characters', { field: 'Idempotency-Key' });
  return h;
}

/** `export_name`: a plain file name ending in .zip. */
function exportName(v: unknown): string {
  if (v === undefined || v === null || v === '') return `assets-${new Date().toISOString().replace(/[:.]/g, '-')}.zip`;
  if (typeof v !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._ -]{0,99}$/.test(v)) badRequest('export_name must be 1-100 letters, digits, spaces, dots, dashes or underscores', { field: 'export_name' });
  return v.toLowerCase().endsWith('.zip') ? v : `${v}.zip`;
}

/** Cloud asset operations: import of published assets, remote metadata, downloads and exports as tasks, assets of a job, mask layers. */
export function cloudAssetRoutes(app: FastifyInstance, d: CloudAssetDeps): void {
  const svc = (): AssetService => {
    if (!d.assets) throw cloudError(503, 'service_disabled', 'Assets system is disabled. Start the server without --disable-assets to use this feature.');
    return d.assets;
  };
  const viewer = (req: FastifyRequest): Viewer => {
    const owner = principal(req).workspaceId;
    return { owner, owners: ['', owner] };
  };
  const ownerDir = (owner: string) => path.join(d.exportsDir, createHash('sha256').update(owner).digest('hex').slice(0, 32));

  cloudRoute(
    app,
    'POST',
    '/api/assets/import',
    {
      operationId: 'importPublishedAssets',
      tags: ['assets'],
      description: "Imports the specified published assets into the caller's asset library. New DB records reference the same storage objects; no file copying occurs. Assets the caller already owns (by hash) are returned as they are.",
      body: { $ref: 'ImportPublishedAssetsRequest#' },
      response: { 200: ref('ImportPublishedAssetsResponse'), ...errors(400) },
    },
    cloudErrors(async (req) => {
      const b = objectBody(req);
      const ids = idList(b.published_asset_ids, 'published_asset_ids');
      let shareId: string | undefined;
      if (b.share_id !== undefined && b.share_id !== null && b.share_id !== '') {
        if (typeof b.share_id !== 'string' || b.share_id.length > 200 || !wellFormed(b.share_id)) badRequest('share_id must be a string', { field: 'share_id' });
        shareId = b.share_id as string;
      }
      const created = await importPublished(svc(), viewer(req), ids, shareId);
      return { assets: created.map(assetInfo) };
    }),
  );

  cloudRoute(
    app,
    'GET',
    '/api/assets/remote-metadata',
    {
      operationId: 'getAssetRemoteMetadata',
      tags: ['assets'],
      description: 'Fetches and returns metadata (content type, size, filename) for a remote URL without downloading the full content: only its headers and first bytes are read, through an outbound guard that refuses private, loopback and link-local destinations unless the operator allows them (--outbound-allow).',
      querystring: { type: 'object', required: ['url'], properties: { url: { type: 'string' } } },
      response: { 200: ref('RemoteAssetMetadata'), ...errors(400) },
    },
    cloudErrors(async (req) => {
      principal(req);
      const url = qString(query(req), 'url', 4096);
      if (!url) badRequest('url is required', { field: 'url' });
      return remoteMetadata(d.outbound, url);
    }),
  );

  const accepted = (reply: FastifyReply, taskId: string, status: string, message: string) => reply.code(202).send({ task_id: taskId, status, message });

  cloudRoute(
    app,
    'POST',
    '/api/assets/download',
    {
      operationId: 'downloadAssets',
      tags: ['assets'],
      description: "Initiates a download of one or more assets to the cloud runtime environment (its input folder, where loader nodes read). Returns a task ID for tracking download progress via WebSocket (asset_download messages) or /api/tasks/{task_id}.",
      body: { type: 'object', required: ['assets'], properties: { assets: { type: 'array', items: { $ref: 'AssetDownloadRequest#' } } } },
      response: { 202: ref('TaskAccepted', 'Accepted'), ...errors(400) },
    },
    cloudErrors(async (req, reply) => {
      const s = svc();
      const v = viewer(req);
      const b = objectBody(req);
      if (!Array.isArray(b.assets) || b.assets.length === 0 || b.assets.length > MAX_ITEMS) badRequest(`assets must be a list of 1 to ${MAX_ITEMS} items`, { field: 'assets' });
      const items = (b.assets as unknown[]).map((it, i) => {
        if (!it || typeof it !== 'object' || Array.isArray(it)) badRequest(`assets[${i}] must be an object`, { field: `assets[${i}]` });
        const o = it as Record<string, unknown>;
        if (!isUuid(o.asset_id)) badRequest(`assets[${i}].asset_id must be an asset id (UUID)`, { field: `assets[${i}].asset_id` });
        let target: string | undefined;
        if (o.target_path !== undefined && o.target_path !== null && o.target_path !== '') {
          if (typeof o.target_path !== 'string' || o.target_path.length > 1024 || !wellFormed(o.target_path) || o.target_path.split(/[\\/]/).some((p) => p === '..')) badRequest(`assets[${i}].target_path must be a relative path`, { field: `assets[${i}].target_path` });
          target = o.target_path as string;
          try {
            safeRelative(d.inputDir(req), target.replace(/^\/+/, ''));
          } catch (err) {
            badRequest(`assets[${i}].target_path: ${(err as Error).message}`, { field: `assets[${i}].target_path` });
          }
        }
        return { assetId: (o.asset_id as string).toLowerCase(), targetPath: target };
      });
      // Every asset must be the caller's to read before the task starts.
      for (const it of items) {
        try {
          await s.visible(v, it.assetId);
        } catch {
          badRequest(`Asset ${it.assetId} not found`, { asset_id: it.assetId });
        }
      }
      const inputDir = d.inputDir(req);
      const task = await d.tasks.start({ owner: v.owner, taskName: 'asset_download', wsType: 'asset_download', idempotencyKey: idempotencyKey(req), payload: { assets: items.map((i) => ({ asset_id: i.assetId, target_path: i.targetPath ?? null })) } }, (progress) =>
        downloadToInput(s, v, inputDir, items, (done, total, file) => progress({ progress: done / total, completed: done, total, ...file })).finally(() => d.inputChanged(req)),
      );
      return accepted(reply, task.id, task.status, `Downloading ${items.length} asset${items.length === 1 ? '' : 's'}`);
    }),
  );

  cloudRoute(
    app,
    'POST',
    '/api/assets/export',
    {
      operationId: 'exportAssets',
      tags: ['assets'],
      description: 'Initiates a bulk export of assets into a zip archive. Returns a task ID for tracking progress via WebSocket (asset_export messages) or /api/tasks/{task_id}. When complete, the export can be downloaded via the exports endpoint.',
      body: { type: 'object', required: ['asset_ids'], properties: { asset_ids: { type: 'array', items: { type: 'string' } }, export_name: { type: 'string' } } },
      response: { 202: ref('TaskAccepted', 'Accepted'), ...errors(400) },
    },
    cloudErrors(async (req, reply) => {
      const s = svc();
      const v = viewer(req);
      const b = objectBody(req);
      const ids = idList(b.asset_ids, 'asset_ids');
      let name = exportName(b.export_name);
      for (const id of ids) {
        try {
          await s.visible(v, id);
        } catch {
          badRequest(`Asset ${id} not found`, { asset_id: id });
        }
      }
      const key = idempotencyKey(req);
      name = await reserveExportName(d.db(), v.owner, name);
      const file = path.join(ownerDir(v.owner), name);
      let settled = false;
      const task = await d.tasks
        .start({ owner: v.owner, taskName: 'asset_export', wsType: 'asset_export', idempotencyKey: key, payload: { asset_ids: ids, export_name: name } }, async (progress) => {
          const r = await exportZip(s, v, ids, file, (done, total) => progress({ progress: done / total, completed: done, total, export_name: name }));
          await d.db().updateTable('cloud_asset_exports').set({ file, size: r.size }).where('owner', '=', v.owner).where('name', '=', name).execute();
          return { export_name: name, url: `/api/assets/exports/${encodeURIComponent(name)}`, size: r.size, files: r.files };
        }, async (id) => {
          settled = true;
          await settleExportName(d.db(), v.owner, name, id);
        })
        .finally(async () => {
          if (!settled) await settleExportName(d.db(), v.owner, name, null);
        });
      return accepted(reply, task.id, task.status, `Exporting ${ids.length} asset${ids.length === 1 ? '' : 's'} to ${(task.payload.export_name as string) ?? name}`);
    }),
  );

  cloudRoute(
    app,
    'GET',
    '/api/assets/exports/:exportName',
    { operationId: 'getAssetExport', tags: ['assets'], description: 'Returns the archive file for a completed asset export.', params: { type: 'object', required: ['exportName'], properties: { exportName: { type: 'string' } } }, response: { 200: { description: 'The zip archive', type: 'string', format: 'binary' }, ...errors(404) } },
    cloudErrors(async (req, reply) => {
      const owner = principal(req).workspaceId;
      const name = param(req, 'exportName');
      const row = wellFormed(name) ? await d.db().selectFrom('cloud_asset_exports').selectAll().where('owner', '=', owner).where('name', '=', name).executeTakeFirst() : undefined;
      const st = row?.file ? await fs.promises.stat(row.file as string).catch(() => undefined) : undefined;
      if (!row || !st) throw cloudError(404, 'not_found', 'Export not found (or not finished yet)');
      return reply
        .type('application/zip')
        .header('Content-Length', String(st.size))
        .header('Content-Disposition', `attachment; filename="${name.replace(/"/g, '_')}"`)
        .header('Cache-Control', 'private, no-cache')
        .send(fs.createReadStream(row.file as string));
    }),
  );

  cloudRoute(
    app,
    'POST',
    '/api/assets/from-workflow',
    {
      operationId: 'createAssetsFromWorkflow',
      tags: ['assets'],
      description: 'Registers output files from a workflow execution as assets in the asset database.',
      body: { type: 'object', required: ['prompt_id'], properties: { prompt_id: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } } },
      response: { 200: { description: 'OK', type: 'object', properties: { assets: { type: 'array', items: { type: 'object', additionalProperties: true } } } }, ...errors(400, 404) },
    },
    cloudErrors(async (req) => {
      const s = svc();
      const v = viewer(req);
      const b = objectBody(req);
      if (typeof b.prompt_id !== 'string' || !isUuid(b.prompt_id)) badRequest('prompt_id must be a prompt id (UUID)', { field: 'prompt_id' });
      let tags: string[] = [];
      if (b.tags !== undefined && b.tags !== null) {
        if (!Array.isArray(b.tags) || b.tags.length > 128 || b.tags.some((t) => typeof t !== 'string' || t.trim() === '' || t.length > 256 || !wellFormed(t))) badRequest('tags must be a list of non-empty strings', { field: 'tags' });
        tags = [...new Set((b.tags as string[]).map((t) => t.trim().toLowerCase()))];
      }
      const created = await assetsFromJob(s, v, (b.prompt_id as string).toLowerCase(), tags);
      if (!created) throw cloudError(404, 'not_found', 'Job not found');
      return { assets: await s.presentMany(created.map((c) => c.row)) };
    }),
  );

  cloudRoute(
    app,
    'GET',
    '/api/files/mask-layers',
    {
      operationId: 'getMaskLayers',
      tags: ['files'],
      description: 'Given a mask file (any of the 4 layers), returns all related mask layer filenames. Used by the mask editor to load the paint, mask, and painted layers when reopening a previously edited mask.',
      querystring: { type: 'object', required: ['filename'], properties: { filename: { type: 'string' } } },
      response: { 200: { description: 'OK', type: 'object', properties: { mask: { type: 'string' }, paint: { type: 'string' }, painted: { type: 'string' }, painted_masked: { type: 'string' } } }, ...errors(404) },
    },
    cloudErrors(async (req) => {
      principal(req);
      const filename = qString(query(req), 'filename', 1024);
      if (!filename) badRequest('filename is required', { field: 'filename' });
      const layers = await maskLayers(d.inputDir(req), filename);
      if (!layers) throw cloudError(404, 'not_found', 'Mask layers not found');
      return layers;
    }),
  );
}
