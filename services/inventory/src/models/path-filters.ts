import { sql, type RawBuilder } from 'kysely';
import { ENDPOINT_TYPES } from './cable-types.ts';
import { chunks } from './read.ts';
import type { ExtraFilter, ModelDef, ReadCtx } from './types.ts';

/** The path endpoints NetBox's PathEndpointFilterSet gives `connected` (they have a `_path`). */
export const PATH_ENDPOINT_MODELS = ['interface', 'consoleport', 'consoleserverport', 'powerport', 'poweroutlet', 'powerfeed'];

/**
 * Ids of the objects of `m` whose cable path is active (NetBox's `_path__is_active`). NetBox gives every endpoint with a
 * link a path and marks it active unless some link on it is not `connected` — complete or not (a path that stops at an
 * uncabled rear port is active too). NetBox stores paths; the service computes them, so a cable straight to another
 * endpoint (or to nothing) is decided from its own status and only paths through pass-through ports or circuits are
 * traced. An interface's wireless link is a one-link path (no cable on a wirelessly linked interface).
 */
async function activePathIds(ctx: ReadCtx, m: ModelDef): Promise<number[]> {
  const { terminationsOfCables, traceSegments, allConnected } = await import('./cable-paths.ts');
  const rows = await ctx.db.selectFrom(m.table).select(['id', 'cable_id', 'cable_end']).where('cable_id', 'is not', null).execute();
  const cableIds = [...new Set(rows.map((r) => Number(r.cable_id)))];
  const status = new Map<number, string>();
  for (const part of chunks(cableIds)) {
    if (part.length) for (const c of await ctx.db.selectFrom('dcim_cable').select(['id', 'status']).where('id', 'in', part).execute()) status.set(Number(c.id), String(c.status));
  }
  const ends = new Map<string, string[]>();
  for (const t of await terminationsOfCables(ctx, cableIds)) {
    const k = `${t.cable_id}:${t.cable_end}`;
    ends.set(k, [...(ends.get(k) ?? []), t.termination_type]);
  }
  const out: number[] = [];
  for (const r of rows) {
    const cable = Number(r.cable_id);
    // A cable that is not connected makes the path inactive, wherever it leads.
    if (status.get(cable) !== 'connected') continue;
    const far = ends.get(`${cable}:${r.cable_end === 'A' ? 'B' : 'A'}`) ?? [];
    if (!far.length || ENDPOINT_TYPES.has(far[0]!)) {
      out.push(Number(r.id));
      continue;
    }
    const segments = await traceSegments(ctx, { object_type: m.objectType, object_id: Number(r.id) });
    if (await allConnected(ctx, segments)) out.push(Number(r.id));
  }
  if (m.key === 'interface') {
    const linked = await ctx.db
      .selectFrom('dcim_interface as i')
      .innerJoin('wireless_wirelesslink as l', 'l.id', 'i.wireless_link_id')
      .select('i.id')
      .where('i.cable_id', 'is', null)
      .where('l.status', '=', 'connected')
      .execute();
    for (const r of linked) out.push(Number(r.id));
  }
  return out;
}

/** `connected` (PathEndpointFilterSet): true, the path is active; false, there is none or it is not active. */
export function connectedFilter(m: ModelDef): ExtraFilter {
  return {
    name: 'connected',
    kind: 'custom',
    where: async (ctx, vals, errors) => {
      const conds: RawBuilder<unknown>[] = [];
      // Computed once however many values are given (`connected=true&connected=true…` costs one pass).
      let active: RawBuilder<unknown> | undefined;
      for (const v of vals) {
        const t = v.trim().toLowerCase();
        if (t === '' || t === 'null' || t === 'none' || t === 'unknown') continue;
        const b = ['true', '1', 't', 'yes', 'on'].includes(t) ? true : ['false', '0', 'f', 'no', 'off'].includes(t) ? false : undefined;
        if (b === undefined) {
          (errors.connected ??= []).push('Select a valid choice. That choice is not one of the available choices.');
          return undefined;
        }
        if (!active) {
          const ids = await activePathIds(ctx, m);
          // The ids are integers read from the database: listed literally, so no bound-parameter limit applies.
          active = ids.length ? sql`${sql.ref(`${m.table}.id`)} in (${sql.raw(ids.map((id) => String(Math.trunc(id))).join(','))})` : sql`1 = 0`;
        }
        conds.push(b ? active : sql`not (${active})`);
      }
      return conds.length ? sql`(${sql.join(conds, sql` and `)})` : undefined;
    },
  };
}

/** Python's round(): to the nearest integer, ties to the even one (what NetBox stores as `available_power`). */
function pyRound(x: number): number {
  const r = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 ? 2 * Math.round(x / 2) : r;
}

/** NetBox's PowerFeed.available_power: |voltage| × amperage × max utilisation (%), × 1.732 for three-phase, rounded. */
export function availablePower(row: Record<string, unknown>): number {
  const kva = Math.abs(Number(row.voltage)) * Number(row.amperage) * (Number(row.max_utilization) / 100);
  return pyRound(row.phase === 'three-phase' ? kva * 1.732 : kva);
}

/**
 * The same number in SQL, with the same double-precision steps; SQLite's round() takes ties away from zero,
 * so an odd result of a tie is brought back to the even neighbour (PostgreSQL's already is even).
 */
export function availablePowerSql(table: string): RawBuilder<unknown> {
  const c = (x: string) => sql.ref(`${table}.${x}`);
  const kva = sql`(cast(abs(${c('voltage')}) * ${c('amperage')} as double precision) * (cast(${c('max_utilization')} as double precision) / 100))`;
  const r = sql`(case when ${c('phase')} = 'three-phase' then ${kva} * cast(1.732 as double precision) else ${kva} end)`;
  return sql`(round(${r}) - (case when round(${r}) - ${r} = 0.5 and cast(round(${r}) as bigint) % 2 = 1 then 1 else 0 end))`;
}
