import type { ReadCtx, Row } from './types.ts';

/** Rack.RACKTYPE_FIELDS: what a rack copies from its rack type (columns of both tables). A leaf: dcim.ts's rack uses it. */
export const RACK_TYPE_COLUMNS = ['form_factor', 'width', 'u_height', 'starting_unit', 'desc_units', 'outer_width', 'outer_height', 'outer_depth', 'outer_unit', 'mounting_depth', 'weight', 'weight_unit', 'max_weight'];

/** Rack.save()'s copy_racktype_attrs(): a rack with a type takes its physical attributes (into the values written). */
export async function copyRackTypeAttributes(ctx: ReadCtx, values: Row, existing: Row | null): Promise<void> {
  const typeId = 'rack_type_id' in values ? values.rack_type_id : existing?.rack_type_id;
  if (typeId === null || typeId === undefined) return;
  const t = await ctx.db.selectFrom('dcim_racktype').select(RACK_TYPE_COLUMNS).where('id', '=', typeId).executeTakeFirst();
  if (!t) return;
  for (const c of RACK_TYPE_COLUMNS) {
    const v = t[c];
    values[c] = c === 'desc_units' ? v === true || Number(v) === 1 : c === 'weight' && v !== null ? Number(v) : v;
  }
}
