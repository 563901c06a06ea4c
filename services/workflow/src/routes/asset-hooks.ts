import type { FastifyRequest } from 'fastify';
import { canonicalHash } from '../domain/assets/content.ts';
import type { AssetService, Viewer } from '../domain/assets/service.ts';
import type { RouteCtx } from './context.ts';

/**
 * The assets side of the file routes: an upload answer gains the reference's
 * `asset` object ({id, name, asset_hash, size, mime_type, tags}, plus `hash`),
 * and /view resolves `blake3:<hex>` names to stored content the caller has an
 * asset of. Registration failures never fail the upload itself.
 */
export function assetFileHooks(assets: AssetService, ctx: RouteCtx, log: { warn(o: object, m: string): void }) {
  const viewer = (req: FastifyRequest): Viewer => {
    const owner = ctx.owner(req);
    return { owner, owners: ctx.scope(req) === undefined ? [owner] : [...new Set(['', owner])] };
  };
  return {
    uploadPlaced: (w: { hash: string; size: number; head: Buffer; stamp: string }) => assets.holdWrite(w),
    uploadAnswerExtras: async (file: { type: 'input' | 'output' | 'temp'; subfolder: string; name: string; size: number; hash?: string; head?: Buffer; stamp?: string }, req: FastifyRequest): Promise<Record<string, unknown> | undefined> => {
      try {
        // An upload hashed as it arrived: its hash, size and head stand for the file, which is not read again.
        const known = file.hash && file.head && file.stamp ? { hash: file.hash, size: file.size, head: file.head, stamp: file.stamp } : undefined;
        const r = await assets.registerFile({ type: file.type, subfolder: file.subfolder, filename: file.name, owner: ctx.owner(req), known });
        if (!r) return undefined;
        return { asset: { id: r.row.id, name: r.row.name, hash: r.row.hash, asset_hash: r.row.hash, size: r.row.size, mime_type: r.row.mime_type, tags: r.tags } };
      } catch (err) {
        log.warn({ err, file: file.name }, 'uploaded file could not be registered as an asset');
        return undefined;
      }
    },
    resolveHashName: async (name: string, req: FastifyRequest): Promise<{ path: string; filename: string } | undefined> => {
      const hash = canonicalHash(name);
      return hash ? assets.fileForHash(viewer(req), hash) : undefined;
    },
  };
}
