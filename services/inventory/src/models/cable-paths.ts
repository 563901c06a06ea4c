/** Cable domain functions that read other models: terminations, traces and paths (loaded lazily by cabling.ts). */
import type { WriteContext } from '../changes/write-context.ts';
import { LINK_STATUS, CABLE_LENGTH_UNITS, CABLE_TYPES } from './netbox-choices.ts';
import { INTERFACE_TYPES } from './choices.ts';
import { chunks, fetchRowsByIds, type ReadCtx } from './read.ts';
import { model, modelForObjectType, objectUrl, displayUrl } from './lookup.ts';
import { loadBriefs } from './represent.ts';
import type { ModelDef, Row } from './types.ts';
import { COMPATIBLE, ENDPOINT_TYPES, type Termination } from './cable-types.ts';

type Obj = Record<string, unknown>;
/** NetBox's NONCONNECTABLE_IFACE_TYPES: virtual and wireless interface types. */
const NONCONNECTABLE_IFACE_TYPES = new Set(['virtual', 'lag', 'bridge', 'ieee802.11a', 'ieee802.11g', 'ieee802.11n', 'ieee802.11ac', 'ieee802.11ad', 'ieee802.11ax', 'ieee802.11ay', 'ieee802.11be', 'ieee802.15.1', 'ieee802.15.4', 'other-wireless', 'gsm', 'cdma', 'lte', '4g', '5g']);
const MAX_HOPS = 64;

/** Cable checks of NetBox's Cable.clean() and CableTermination.clean(): ends exist, one type per end, compatible, not already cabled. */
export async function checkCable(ctx: ReadCtx, values: Row, existing: Row | null, errors: Record<string, string[]>): Promise<void> {
  const a: Termination[] = values.a_terminations ?? existing?.a_terminations ?? [];
  const b: Termination[] = values.b_terminations ?? existing?.b_terminations ?? [];
  if (!existing && (a.length === 0 || b.length === 0)) {
    (errors.non_field_errors ??= []).push('Must define A and B terminations when creating a new cable.');
    return;
  }
  for (const [name, ends] of [['a_terminations', a], ['b_terminations', b]] as const) {
    const types = new Set(ends.map((t) => t.object_type));
    if (types.size > 1) (errors[name] ??= []).push('Cannot connect different termination types to same end of cable.');
    for (const t of ends) {
      const m = modelForObjectType(t.object_type)!;
      const row = (await fetchRowsByIds(ctx, m, [t.object_id])).get(t.object_id);
      if (!row) {
        (errors[name] ??= []).push(`Related object not found: ${t.object_type} ${t.object_id}`);
        continue;
      }
      const other = await ctx.db.selectFrom('dcim_cabletermination').select('cable_id').where('termination_type', '=', t.object_type).where('termination_id', '=', t.object_id).executeTakeFirst();
      if (other && Number(other.cable_id) !== existing?.id) (errors[name] ??= []).push(`Duplicate termination found for ${t.object_type} ${t.object_id}: cable ${Number(other.cable_id)}`);
      if (row.mark_connected) (errors[name] ??= []).push(`Cannot attach a cable to ${t.object_type} ${t.object_id}: it is marked as connected.`);
      // CableTermination.clean(): virtual and wireless interfaces take no cable.
      if (t.object_type === 'dcim.interface' && NONCONNECTABLE_IFACE_TYPES.has(String(row.type))) {
        (errors.non_field_errors ??= []).push(`Cables cannot be terminated to ${INTERFACE_TYPES.find((c) => c.value === row.type)?.label ?? String(row.type)} interfaces`);
      }
    }
  }
  if (a.length && b.length && a[0]!.object_type === b[0]!.object_type && a.some((x) => b.some((y) => y.object_id === x.object_id))) {
    (errors.non_field_errors ??= []).push('A and B terminations cannot connect to the same object.');
  }
  if (a.length && b.length && !COMPATIBLE[a[0]!.object_type]?.includes(b[0]!.object_type)) {
    (errors.non_field_errors ??= []).push(`Incompatible termination types: ${a[0]!.object_type} and ${b[0]!.object_type}`);
  }
}

/** Keeps the termination index and each terminated object's `cable`/`cable_end` in step with the cable's ends. */
export async function saveTerminations(w: WriteContext, id: number, row: Row): Promise<void> {
  await clearTerminations(w, id);
  for (const [end, list] of [['A', row.a_terminations ?? []], ['B', row.b_terminations ?? []]] as const) {
    for (const t of list as Termination[]) {
      await w.trx.insertInto('dcim_cabletermination').values({ cable_id: id, cable_end: end, termination_type: t.object_type, termination_id: t.object_id }).execute();
      const m = modelForObjectType(t.object_type)!;
      await w.trx.updateTable(m.table).set({ cable_id: id, cable_end: end }).where('id', '=', t.object_id).execute();
    }
  }
}

export async function clearTerminations(w: WriteContext, cableId: number): Promise<void> {
  const old = await w.trx.selectFrom('dcim_cabletermination').select(['termination_type', 'termination_id']).where('cable_id', '=', cableId).execute();
  for (const t of old) {
    const m = modelForObjectType(t.termination_type);
    if (m) await w.trx.updateTable(m.table).set({ cable_id: null, cable_end: null }).where('id', '=', Number(t.termination_id)).execute();
  }
  await w.trx.deleteFrom('dcim_cabletermination').where('cable_id', '=', cableId).execute();
}

/** A terminated object going away leaves its cable with one end less (NetBox deletes the CableTermination). */
export async function detachFromCable(w: WriteContext, objectType: string, row: Row): Promise<void> {
  const m = modelForObjectType(objectType)!;
  const t = await w.trx.selectFrom('dcim_cabletermination').select(['cable_id', 'cable_end']).where('termination_type', '=', m.objectType).where('termination_id', '=', row.id).executeTakeFirst();
  if (!t) return;
  await w.trx.deleteFrom('dcim_cabletermination').where('termination_type', '=', m.objectType).where('termination_id', '=', row.id).execute();
  const cableId = Number(t.cable_id);
  const column = t.cable_end === 'A' ? 'a_terminations' : 'b_terminations';
  const cable = await w.trx.selectFrom('dcim_cable').select([column]).where('id', '=', cableId).executeTakeFirst();
  if (!cable) return;
  const list = (w.dialect.parseJson(cable[column]) ?? []) as Termination[];
  const kept = list.filter((x) => !(x.object_type === m.objectType && x.object_id === row.id));
  await w.trx.updateTable('dcim_cable').set({ [column]: w.dialect.json(kept) }).where('id', '=', cableId).execute();
}

/** Briefs of objects of mixed types, keyed `type:id`. */
export async function briefsOf(ctx: ReadCtx, refs: Termination[]): Promise<Map<string, Obj>> {
  const out = new Map<string, Obj>();
  const byType = new Map<string, number[]>();
  for (const r of refs) byType.set(r.object_type, [...(byType.get(r.object_type) ?? []), r.object_id]);
  for (const [type, ids] of byType) {
    const m = modelForObjectType(type);
    if (!m) continue;
    for (const [id, b] of await loadBriefs(ctx, m, ids)) out.set(`${type}:${id}`, b);
  }
  return out;
}

interface TermRow {
  cable_id: number;
  cable_end: string;
  termination_type: string;
  termination_id: number;
}

export async function terminationsOfCables(ctx: ReadCtx, cableIds: number[]): Promise<TermRow[]> {
  const out: TermRow[] = [];
  for (const part of chunks([...new Set(cableIds)])) {
    if (!part.length) continue;
    const rows = await ctx.db.selectFrom('dcim_cabletermination').selectAll().where('cable_id', 'in', part).orderBy('id').execute();
    for (const r of rows) out.push({ cable_id: Number(r.cable_id), cable_end: r.cable_end, termination_type: r.termination_type, termination_id: Number(r.termination_id) });
  }
  return out;
}

/** The cable as a trace shows it (NetBox's TracedCableSerializer). */
async function tracedCable(ctx: ReadCtx, id: number): Promise<Obj | null> {
  const m = model('cable');
  const row = (await fetchRowsByIds(ctx, m, [id])).get(id);
  if (!row) return null;
  const choice = (list: typeof CABLE_TYPES, v: unknown) => (v === null || v === undefined ? null : { value: v, label: list.find((c) => c.value === v)?.label ?? String(v) });
  return {
    id,
    url: objectUrl(ctx.base, m, id),
    display_url: displayUrl(ctx.base, m, id),
    type: row.type ?? '',
    status: choice(LINK_STATUS, row.status),
    label: row.label,
    color: row.color,
    length: row.length,
    length_unit: choice(CABLE_LENGTH_UNITS, row.length_unit),
    description: row.description,
  };
}

export interface TraceSegment {
  near: Termination[];
  cable: number | null;
  far: Termination[];
}

/**
 * Follows cables from one object, across pass-through ports (a front port continues at its rear port and
 * a single-position rear port at its front port; a multi-position rear port at the front port of the
 * position the path entered by) and circuits (one termination continues at the other side's).
 */
export async function traceSegments(ctx: ReadCtx, start: Termination): Promise<TraceSegment[]> {
  const out: TraceSegment[] = [];
  let near: Termination[] = [start];
  const positions: number[] = [];
  const seen = new Set<string>();
  for (let hop = 0; hop < MAX_HOPS && near.length; hop++) {
    const key = near.map((n) => `${n.object_type}:${n.object_id}`).join(',');
    if (seen.has(key)) break;
    seen.add(key);
    const first = near[0]!;
    const t = await ctx.db.selectFrom('dcim_cabletermination').select(['cable_id', 'cable_end']).where('termination_type', '=', first.object_type).where('termination_id', '=', first.object_id).executeTakeFirst();
    if (!t) {
      out.push({ near, cable: null, far: [] });
      break;
    }
    const cableId = Number(t.cable_id);
    const far = (await terminationsOfCables(ctx, [cableId])).filter((x) => x.cable_end !== t.cable_end).map((x) => ({ object_type: x.termination_type, object_id: x.termination_id }));
    out.push({ near, cable: cableId, far });
    if (!far.length) break;
    near = await continueFrom(ctx, far, positions);
  }
  return out;
}

/** Where a path goes on after reaching `far` (pass-through ports, circuits), or nothing at an endpoint. */
async function continueFrom(ctx: ReadCtx, far: Termination[], positions: number[]): Promise<Termination[]> {
  const type = far[0]!.object_type;
  const ids = far.map((f) => f.object_id);
  if (type === 'dcim.frontport') {
    const rows = await ctx.db.selectFrom('dcim_frontport').select(['rear_port_id', 'rear_port_position']).where('id', 'in', ids).execute();
    if (rows.length === 1) positions.push(Number(rows[0]!.rear_port_position));
    return [...new Set(rows.map((r) => Number(r.rear_port_id)))].map((id) => ({ object_type: 'dcim.rearport', object_id: id }));
  }
  if (type === 'dcim.rearport') {
    if (far.length !== 1) return [];
    const rear = await ctx.db.selectFrom('dcim_rearport').select('positions').where('id', '=', far[0]!.object_id).executeTakeFirst();
    let q = ctx.db.selectFrom('dcim_frontport').select('id').where('rear_port_id', '=', far[0]!.object_id);
    if (Number(rear?.positions ?? 1) > 1) {
      const p = positions.pop();
      if (p === undefined) return [];
      q = q.where('rear_port_position', '=', p);
    }
    return (await q.orderBy('id').execute()).map((r) => ({ object_type: 'dcim.frontport', object_id: Number(r.id) }));
  }
  if (type === 'circuits.circuittermination') {
    if (far.length !== 1) return [];
    const term = await ctx.db.selectFrom('circuits_circuittermination').select(['circuit_id', 'term_side']).where('id', '=', far[0]!.object_id).executeTakeFirst();
    if (!term) return [];
    const other = await ctx.db.selectFrom('circuits_circuittermination').select('id').where('circuit_id', '=', term.circuit_id).where('term_side', '!=', term.term_side).executeTakeFirst();
    return other ? [{ object_type: 'circuits.circuittermination', object_id: Number(other.id) }] : [];
  }
  return [];
}

/** NetBox's `/trace/` body: `[[near ends], cable, [far ends]]` per segment, nested representations. */
export async function traceView(ctx: ReadCtx, start: Termination): Promise<unknown[]> {
  const segments = await traceSegments(ctx, start);
  const briefs = await briefsOf(ctx, segments.flatMap((s) => [...s.near, ...s.far]));
  const out: unknown[] = [];
  for (const s of segments) {
    out.push([s.near.map((n) => briefs.get(`${n.object_type}:${n.object_id}`)).filter(Boolean), s.cable === null ? null : await tracedCable(ctx, s.cable), s.far.map((n) => briefs.get(`${n.object_type}:${n.object_id}`)).filter(Boolean)]);
  }
  return out;
}

export const key = (t: Termination) => `${t.object_type}:${t.object_id}`;

/**
 * NetBox's `/paths/` of a pass-through port or circuit termination: every cable path from an endpoint that
 * crosses it, as `{path: [[nodes], [cable], [nodes], …], is_active, is_complete, is_split}`. Paths are
 * computed when asked (NetBox stores them): the endpoints around the port are found by walking the cabling.
 */
export async function pathsView(ctx: ReadCtx, through: Termination): Promise<unknown[]> {
  const endpoints: Termination[] = [];
  const visited = new Set<string>([key(through)]);
  const queue: Termination[] = [through];
  while (queue.length && visited.size < 500) {
    const node = queue.shift()!;
    if (ENDPOINT_TYPES.has(node.object_type)) {
      endpoints.push(node);
      continue;
    }
    for (const next of await neighbours(ctx, node)) {
      if (visited.has(key(next))) continue;
      visited.add(key(next));
      queue.push(next);
    }
  }
  const out: unknown[] = [];
  for (const origin of endpoints.sort((x, y) => key(x).localeCompare(key(y)))) {
    const segments = await traceSegments(ctx, origin);
    const nodes = segments.flatMap((s) => [...s.near, ...s.far]);
    if (!nodes.some((n) => key(n) === key(through))) continue;
    const briefs = await briefsOf(ctx, nodes);
    const cables = await briefsOf(ctx, segments.filter((s) => s.cable !== null).map((s) => ({ object_type: 'dcim.cable', object_id: s.cable! })));
    const path: unknown[] = [];
    for (const s of segments) {
      path.push(s.near.map((n) => briefs.get(key(n))).filter(Boolean));
      if (s.cable !== null) path.push([cables.get(`dcim.cable:${s.cable}`)].filter(Boolean));
      if (s.far.length) path.push(s.far.map((n) => briefs.get(key(n))).filter(Boolean));
    }
    const last = segments[segments.length - 1];
    const complete = !!last && last.far.length > 0 && ENDPOINT_TYPES.has(last.far[0]!.object_type);
    out.push({ path, is_active: complete && (await allConnected(ctx, segments)), is_complete: complete, is_split: !!last && last.far.length > 0 && !complete && (await continueFrom(ctx, last.far, [])).length === 0 && !ENDPOINT_TYPES.has(last.far[0]!.object_type) && last.far[0]!.object_type !== 'circuits.circuittermination' });
  }
  return out;
}

export async function allConnected(ctx: ReadCtx, segments: TraceSegment[]): Promise<boolean> {
  const ids = segments.map((s) => s.cable).filter((c): c is number => c !== null);
  if (!ids.length) return false;
  const rows = await ctx.db.selectFrom('dcim_cable').select('status').where('id', 'in', ids).execute();
  return rows.every((r) => r.status === 'connected');
}

/** Objects joined to one by a cable, a front/rear port mapping or a circuit. */
async function neighbours(ctx: ReadCtx, node: Termination): Promise<Termination[]> {
  const out: Termination[] = [];
  const t = await ctx.db.selectFrom('dcim_cabletermination').select(['cable_id', 'cable_end']).where('termination_type', '=', node.object_type).where('termination_id', '=', node.object_id).executeTakeFirst();
  if (t) for (const x of await terminationsOfCables(ctx, [Number(t.cable_id)])) if (x.cable_end !== t.cable_end) out.push({ object_type: x.termination_type, object_id: x.termination_id });
  if (node.object_type === 'dcim.frontport') {
    const r = await ctx.db.selectFrom('dcim_frontport').select('rear_port_id').where('id', '=', node.object_id).executeTakeFirst();
    if (r) out.push({ object_type: 'dcim.rearport', object_id: Number(r.rear_port_id) });
  } else if (node.object_type === 'dcim.rearport') {
    for (const r of await ctx.db.selectFrom('dcim_frontport').select('id').where('rear_port_id', '=', node.object_id).limit(1024).execute()) out.push({ object_type: 'dcim.frontport', object_id: Number(r.id) });
  } else if (node.object_type === 'circuits.circuittermination') {
    out.push(...(await continueFrom(ctx, [node], [])));
  }
  return out;
}

