import { fail } from './field-problem.ts';
import type { FieldDef } from './types.ts';

/** A VLAN group's VID ranges, inclusive `[lower, upper]` pairs as NetBox's IntegerRangeSerializer shows them. */
export type VidRange = [number, number];

export const VLAN_VID_MIN = 1;
export const VLAN_VID_MAX = 4094;

/** The stored value as ranges (anything malformed reads as none). */
export function parseVidRanges(v: unknown): VidRange[] {
  if (!Array.isArray(v)) return [];
  return v.filter((r): r is VidRange => Array.isArray(r) && r.length === 2 && Number.isInteger(r[0]) && Number.isInteger(r[1]));
}

/** NetBox's ranges_to_string: "1-99,200-299". */
export function rangesToString(ranges: VidRange[]): string {
  return ranges.map(([lo, hi]) => `${lo}-${hi}`).join(',');
}

/** How many VIDs the ranges hold (VLANGroup._total_vlan_ids). */
export function totalVids(ranges: VidRange[]): number {
  return ranges.reduce((n, [lo, hi]) => n + Math.max(0, hi - lo + 1), 0);
}

/** IntegerRangeSerializer's input rules, then VLANGroup.clean()'s range checks; stored sorted by lower bound. */
function parseInput(v: unknown): VidRange[] {
  if (!Array.isArray(v)) fail(`Expected a list of items but got type "${v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'object' ? 'dict' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? (Number.isInteger(v) ? 'int' : 'float') : typeof v}".`);
  const list = v as unknown[];
  if (list.length > 4094) fail('Ensure this field has no more than 4094 elements.');
  const out: VidRange[] = [];
  for (const r of list) {
    if (!Array.isArray(r) || r.length !== 2) fail('Ranges must be specified in the form (lower, upper).');
    const [lo, hi] = r as unknown[];
    if (typeof lo !== 'number' || typeof hi !== 'number' || !Number.isSafeInteger(lo) || !Number.isSafeInteger(hi)) fail('Range boundaries must be defined as integers.');
    out.push([lo as number, hi as number]);
  }
  for (const [lo, hi] of out) {
    if (lo < VLAN_VID_MIN) fail(`Starting VLAN ID in range (${lo}) cannot be less than ${VLAN_VID_MIN}`);
    if (hi > VLAN_VID_MAX) fail(`Ending VLAN ID in range (${hi}) cannot exceed ${VLAN_VID_MAX}`);
    if (lo > hi) fail(`Ending VLAN ID in range must be greater than or equal to the starting VLAN ID (${lo}-${hi})`);
  }
  out.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < out.length; i++) if (out[i - 1]![1] >= out[i]![0]) fail('Ranges cannot overlap.');
  return out;
}

/** `vid_ranges` of VLAN groups (NetBox 4.3; default the whole 1–4094). */
export const vidRangesField: FieldDef = {
  name: 'vid_ranges',
  column: 'vid_ranges',
  kind: 'json',
  default: [[VLAN_VID_MIN, VLAN_VID_MAX]],
  label: 'VLAN ID ranges',
  parse: parseInput,
};

/**
 * The VIDs of the ranges that no VLAN of the group uses, in order, at most `limit`
 * (VLANGroup.get_available_vids()).
 */
export function availableVids(ranges: VidRange[], used: Set<number>, limit: number): number[] {
  const out: number[] = [];
  for (const [lo, hi] of ranges) {
    for (let vid = lo; vid <= hi && out.length < limit; vid++) if (!used.has(vid)) out.push(vid);
    if (out.length >= limit) break;
  }
  return out;
}
