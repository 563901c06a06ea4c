import path from 'node:path';
import sharp from '../files/sharp.ts';
import type { FastifyInstance } from 'fastify';
import type { ModelFolders } from '../domain/models.ts';
import { dual } from './common.ts';
import { sendError } from './replies.ts';

const folderParam = { type: 'object', properties: { folder: { type: 'string' } } } as const;

/** /models, /models/{folder}, /experiment/models*, /embeddings: what `<data-dir>/models/*` holds, as the reference lists it. */
export function modelRoutes(app: FastifyInstance, models: ModelFolders): void {
  dual(app, 'GET', '/embeddings', { operationId: 'getEmbeddings', tags: ['node'] }, () =>
    models.filenames('embeddings').map((f) => f.slice(0, f.length - path.extname(f).length)),
  );

  dual(app, 'GET', '/models', { operationId: 'getModelTypes', tags: ['model'] }, () => [...models.folders().keys()]);

  dual(app, 'GET', '/models/:folder', { operationId: 'getModelsByFolder', tags: ['model'], params: folderParam }, (req, reply) => {
    const folder = (req.params as { folder: string }).folder;
    if (!models.folders().has(folder)) return sendError(reply, 404, `Unknown model folder: ${folder}`);
    return models.filenames(folder);
  }, { validate: false });

  dual(app, 'GET', '/experiment/models', { operationId: 'getExperimentModels', tags: ['model'] }, () => models.experimentFolders());

  dual(app, 'GET', '/experiment/models/:folder', { operationId: 'getExperimentModelsByFolder', tags: ['model'], params: folderParam }, (req, reply) => {
    const folder = (req.params as { folder: string }).folder;
    if (!models.folders().has(folder)) return sendError(reply, 404, `Unknown model folder: ${folder}`);
    return models.fileList(folder);
  }, { validate: false });

  dual(
    app,
    'GET',
    '/experiment/models/preview/:folder/:path_index/*',
    {
      operationId: 'getModelPreview',
      tags: ['model'],
      params: { type: 'object', properties: { folder: { type: 'string' }, path_index: { type: 'integer' }, '*': { type: 'string', description: 'The model file name (may hold subfolders)' } } },
    },
    async (req, reply) => {
      const p = req.params as { folder: string; path_index: string; '*': string };
      if (!models.folders().has(p.folder)) return sendError(reply, 404, `Unknown model folder: ${p.folder}`);
      if (!/^\d{1,6}$/.test(p.path_index)) return sendError(reply, 404, 'Preview not found');
      const src = await models.preview(p.folder, Number(p.path_index), p['*'] ?? '');
      if (src === undefined) return sendError(reply, 404, 'Preview not found');
      try {
        const webp = await sharp(src, { limitInputPixels: 16384 * 16384 }).webp().toBuffer();
        return reply.type('image/webp').send(webp);
      } catch {
        return sendError(reply, 404, 'Preview not found');
      }
    },
    { validate: false },
  );
}
