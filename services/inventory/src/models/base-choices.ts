import iata from './data/iata.json' with { type: 'json' };
import iso3166 from './data/iso-3166.json' with { type: 'json' };
import type { Choice } from './types.ts';

/**
 * NetBox's predefined choice lists for custom field choice sets (`base_choices`, CustomFieldChoiceSetBaseChoices):
 * IATA airport codes and ISO 3166 country codes, the same `[value, label]` pairs NetBox 4.3 ships (data files under
 * `data/`, their sources and licences inside). UN/LOCODE (about 100,000 codes) is not shipped: choosing it is refused.
 */
export const BASE_CHOICE_SETS: Choice[] = [
  { value: 'IATA', label: 'IATA (Airport codes)' },
  { value: 'ISO_3166', label: 'ISO 3166 (Country codes)' },
  { value: 'UN_LOCODE', label: 'UN/LOCODE (Location codes)' },
];

export const NOT_SHIPPED = new Set(['UN_LOCODE']);

const DATA: Record<string, { choices: string[][] }> = { IATA: iata, ISO_3166: iso3166 };
const built = new Map<string, ReadonlyArray<readonly [string, string]>>();

/** The pairs of a base list (`AAA`, `AAA (Anaa, PF)`), in NetBox's order; empty for an unknown or unshipped one. */
export function baseChoices(name: unknown): ReadonlyArray<readonly [string, string]> {
  if (typeof name !== 'string' || !(name in DATA)) return [];
  let list = built.get(name);
  if (!list) {
    list = Object.freeze(DATA[name]!.choices.map(([code, place]) => Object.freeze([code!, `${code} (${place})`] as const)));
    built.set(name, list);
  }
  return list;
}
