import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { requirePermission } from '../api/guards.ts';
import { notFound } from '../api/errors.ts';
import { objectId } from '../api/params.ts';
import type { ChangeSink } from '../changes/write.ts';
import { localDirectory, readLocalFiles, storeFiles, SyncError } from '../models/data-sync.ts';
import { contentOf } from '../models/synced-data.ts';
import { model } from '../models/registry.ts';
import { lockRow, updateObject } from '../models/write.ts';
import type { WriteContext } from '../changes/write-context.ts';
import { registerModelRoutes, showObjects, writeAs } from './objects.ts';

/** Objects that follow their data file (`auto_sync_enabled`) and the column the file's content goes to. */
const SYNCED: Array<[key: string, kind: 'context' | 'template', column: string]> = [
  ['configcontext', 'context', 'data'],
  ['configtemplate', 'template', 'template_code'],
];

/** After a sync: objects with auto sync whose file changed take its new content (change-logged, as NetBox's sync(save=True)). */
async function autoSync(w: WriteContext, changed: number[]): Promise<void> {
  if (!changed.length) return;
  for (const [key, kind, column] of SYNCED) {
    const m = model(key);
    const rows = await w.trx.selectFrom(m.table).select('id').where('auto_sync_enabled', '=', w.dialect.bool(true)).where('data_file_id', 'in', changed).orderBy('id').execute();
    for (const r of rows) {
      const existing = await lockRow(w, m, Number(r.id));
      if (!existing) continue;
      const file = await w.trx.selectFrom('core_datafile').select('data').where('id', '=', existing.data_file_id).executeTakeFirst();
      const content = file ? contentOf(kind, Buffer.from(file.data)) : undefined;
      // A file that no longer parses leaves the object as it was (NetBox's sync would fail the job).
      if (!content || 'error' in content) continue;
      await updateObject(w, m, existing, { values: { [column]: content.value, data_synced: new Date().toISOString() } });
    }
  }
}

/**
 * `/api/core/data-sources/` (the registry's routes) with `POST …/{id}/sync/`, and the read-only `/api/core/data-files/`.
 * NetBox enqueues a sync job; here the sync runs within the request and the answer is the data source afterwards
 * (status `completed`), or `400 {"detail": …}` with the status `failed`.
 */
export function dataSourceRoutes(app: FastifyInstance, sink: ChangeSink): void {
  const source = model('datasource');
  registerModelRoutes(app, sink, source);
  registerModelRoutes(app, sink, model('datafile'));
  app.post(
    '/api/core/data-sources/:id/sync/',
    { preHandler: requirePermission('core.datasource', 'sync'), schema: { tags: ['core'], summary: 'Synchronize a data source' } },
    async (req: FastifyRequest) => {
      const id = objectId(req.params);
      let failure: string | undefined;
      await writeAs(sink, req, async (w) => {
        const row = await lockRow(w, source, id);
        if (!row) throw notFound();
        if (row.type !== 'local') {
          failure = `The ${row.type} backend cannot sync on this server: it has no network access; only local data sources sync.`;
          return;
        }
        try {
          const { dir, root } = await localDirectory(String(row.source_url), sink.deps.config.dataSourceRoot);
          const files = await readLocalFiles(dir, root, String(row.ignore_rules ?? ''));
          const changed = await storeFiles(w.trx, w.dialect, id, files, w.now);
          // NetBox updates status and last_synced with a queryset update: no change record.
          await w.trx.updateTable('core_datasource').set({ status: 'completed', last_synced: new Date().toISOString() }).where('id', '=', id).execute();
          await autoSync(w, changed);
        } catch (err) {
          if (!(err instanceof SyncError) && !(err as NodeJS.ErrnoException)?.code) throw err;
          failure = err instanceof SyncError ? err.message : `The data source could not be read: ${String((err as NodeJS.ErrnoException).code)}`;
        }
      });
      if (failure !== undefined) {
        await sink.deps.storage.db.updateTable('core_datasource').set({ status: 'failed' }).where('id', '=', id).execute();
        throw new HttpError(400, { detail: failure });
      }
      return (await showObjects(sink, req, source, [id]))[0];
    },
  );
}
