import type { FastifyInstance } from 'fastify';
import { HttpError } from '@svc/kernel';
import { requirePermission, requireViewOr404 } from '../api/guards.ts';
import { notFound, validationError } from '../api/errors.ts';
import { baseUrl, pageOf } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import type { ChangeSink } from '../changes/write.ts';
import { fetchRow, type ReadCtx } from '../models/read.ts';
import { loadBriefs } from '../models/represent.ts';
import { model } from '../models/registry.ts';
import type { Row } from '../models/types.ts';
import { validateInput, type Errors } from '../models/validate.ts';
import { availableVids, parseVidRanges } from '../models/vid-ranges.ts';
import { lockRow, readCtxOf } from '../models/write.ts';
import { asList, createOne, showObjects, writeAs } from './objects.ts';

const groupModel = () => model('vlangroup');
/** The fields of NetBox's CreateAvailableVLANSerializer (the rest are set by the allocation or by the VLAN create). */
const CREATE_FIELDS = new Set(['non_field_errors', 'name', 'site', 'tenant', 'status', 'role', 'description', 'tags', 'custom_fields']);
const vlanModel = () => model('vlan');

/** Free VIDs of a group: its ranges minus the VIDs its VLANs use, in order. */
async function freeVids(ctx: ReadCtx, group: Row, limit: number): Promise<number[]> {
  const used = new Set((await ctx.db.selectFrom('ipam_vlan').select('vid').where('group_id', '=', group.id).execute()).map((r) => Number(r.vid)));
  return availableVids(parseVidRanges(group.vid_ranges), used, limit);
}

/**
 * `/api/ipam/vlan-groups/<id>/available-vlans/` (NetBox's AvailableVLANsView). GET lists `{vid, group}` for the
 * free VIDs of the group's ranges (`?limit=`, 50 by default); POST `{…}` or `[{…}, …]` creates VLANs at the next
 * free VIDs. The group's row is locked in the write transaction (PostgreSQL `FOR UPDATE`, SQLite's single
 * writer), so concurrent allocations — from one process or several — never get the same VID.
 */
export function availableVlanRoutes(app: FastifyInstance, sink: ChangeSink): void {
  const path = '/api/ipam/vlan-groups/:id/available-vlans/';
  const tags = ['ipam'];

  app.get(path, { preHandler: [requirePermission('ipam.vlan'), requireViewOr404('ipam.vlangroup')], config: { shaped: true }, schema: { tags, summary: 'Available VLAN IDs of a VLAN group' } }, async (req) => {
    const ctx: ReadCtx = { db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base: baseUrl(req) };
    const g = await fetchRow(ctx, groupModel(), objectId(req.params));
    if (!g) throw notFound();
    const { limit } = pageOf(req.query as Record<string, unknown>);
    const brief = (await loadBriefs(ctx, groupModel(), [g.id])).get(g.id) ?? null;
    return (await freeVids(ctx, g, limit)).map((vid) => ({ vid, group: brief }));
  });

  app.post(path, { preHandler: [requirePermission('ipam.vlan'), requireViewOr404('ipam.vlangroup')], config: { shaped: true }, schema: { tags, summary: 'Create VLANs at the next free VLAN IDs of a VLAN group' } }, async (req, reply) => {
    const id = objectId(req.params);
    const many = Array.isArray(req.body);
    const items = many ? asList(req.body, sink.deps.config.maxBulk) : [req.body ?? {}];
    // NetBox validates the request as a list first (CreateAvailableVLANSerializer, many=True: the VLAN's fields without vid and
    // group), so these errors are a list even for one object, and come before the 409.
    const ctx: ReadCtx = { db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base: '' };
    const first: Errors[] = [];
    for (const item of items) {
      const v = await validateInput(ctx, vlanModel(), item !== null && typeof item === 'object' && !Array.isArray(item) ? { ...item, vid: 1, group: null } : item, null, false);
      first.push(v.ok ? {} : Object.fromEntries(Object.entries(v.errors).filter(([k]) => CREATE_FIELDS.has(k))));
    }
    if (first.some((e) => Object.keys(e).length)) throw validationError(first);
    const [created, w] = await writeAs(sink, req, async (w) => {
      const g = await lockRow(w, groupModel(), id);
      if (!g) throw notFound();
      const free = await freeVids(readCtxOf(w), g, items.length);
      if (free.length < items.length) throw new HttpError(409, { detail: 'Insufficient resources are available to satisfy the request' });
      const ids: number[] = [];
      const errors: Errors[] = [];
      for (const [i, item] of items.entries()) {
        const r = await createOne(w, vlanModel(), { ...(item as Record<string, unknown>), vid: free[i], group: g.id });
        errors.push(r.errors ?? {});
        if (r.id !== undefined) ids.push(r.id);
      }
      if (errors.some((e) => Object.keys(e).length)) throw validationError(many ? errors : errors[0]!);
      return ids;
    });
    const shown = await showObjects(sink, req, vlanModel(), created, w.representations);
    reply.code(201);
    return many ? shown : shown[0];
  });
}
