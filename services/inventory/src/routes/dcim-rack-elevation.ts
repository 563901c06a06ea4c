import type { FastifyInstance } from 'fastify';
import { requirePermission } from '../api/guards.ts';
import { notFound, validationError } from '../api/errors.ts';
import { baseUrl, pageOf, paginated } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import type { ChangeSink } from '../changes/write.ts';
import { fetchRow, type ReadCtx } from '../models/read.ts';
import { loadBriefs } from '../models/represent.ts';
import { model } from '../models/registry.ts';

const FACES: Record<string, string> = { front: 'Front', rear: 'Rear' };

/**
 * `/api/dcim/racks/<id>/elevation/`: the rack's units, top down (bottom up with desc_units), each with
 * the device occupying it. Device types count as full depth, so a device fills both faces.
 */
export function rackElevationRoutes(app: FastifyInstance, sink: ChangeSink): void {
  app.get('/api/dcim/racks/:id/elevation/', { preHandler: requirePermission('dcim.rack', 'view'), config: { shaped: true }, schema: { tags: ['dcim'], summary: 'Rack units and the devices in them' } }, async (req) => {
    const ctx: ReadCtx = { db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base: baseUrl(req) };
    const rack = await fetchRow(ctx, model('rack'), objectId(req.params));
    if (!rack) throw notFound();
    const q = req.query as Record<string, unknown>;
    const face = typeof q.face === 'string' ? q.face : 'front';
    if (!(face in FACES)) throw validationError({ face: [`"${face.slice(0, 50)}" is not a valid choice.`] });
    const devices = await ctx.db
      .selectFrom('dcim_device as d')
      .innerJoin('dcim_devicetype as t', 't.id', 'd.device_type_id')
      .select(['d.id', 'd.position', 't.u_height'])
      .where('d.rack_id', '=', rack.id)
      .where('d.position', 'is not', null)
      .execute();
    const briefs = await loadBriefs(ctx, model('device'), devices.map((d) => Number(d.id)));
    const byUnit = new Map<number, Record<string, unknown>>();
    for (const d of devices) {
      const pos = Number(d.position);
      const h = Math.max(Math.ceil(Number(d.u_height)), 1);
      for (let u = Math.floor(pos); u < pos + h; u++) byUnit.set(u, briefs.get(Number(d.id))!);
    }
    const bottom = Number(rack.starting_unit);
    const units = Array.from({ length: Number(rack.u_height) }, (_, i) => bottom + i);
    if (!rack.desc_units) units.reverse();
    const rows = units.map((u) => ({ id: u, name: `U${u}`, face: { value: face, label: FACES[face] }, device: byUnit.get(u) ?? null, occupied: byUnit.has(u) }));
    const page = pageOf(q);
    return paginated(req, page, rows.length, rows.slice(page.offset, page.offset + page.limit));
  });
}
