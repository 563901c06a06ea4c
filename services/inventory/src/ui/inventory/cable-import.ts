import { CABLE_TERMINATION_TYPES } from '../../models/cabling.ts';
import { modelForObjectType } from '../../models/registry.ts';

/**
 * NetBox's CableImportForm (4.3) for the bulk import (CSV, JSON, YAML): each end named by the termination's device
 * (`side_a_device`, by name, narrowed by `side_a_site` when given), type (`side_a_type`, `dcim.interface`) and name
 * (`side_a_name`); on a virtual chassis' master, a name not found on it is looked up among the chassis' members.
 * Power feeds are named by their power panel (`side_a_power_panel`, as NetBox's later import form) and circuit
 * terminations by their circuit's ID (`side_a_circuit`) with the term side as the name (`A` or `Z`): NetBox 4.3's
 * form cannot import either. `color` also takes NetBox's color names (`Red`). Everything is looked up through the
 * REST API (`get`), so the user's permissions and the API's filters apply; the resolved ends become the API's
 * `a_terminations` / `b_terminations`. Errors are NetBox's, per form field.
 */

export const CABLE_SIDE_FIELDS = ['site', 'device', 'power_panel', 'circuit', 'type', 'name'] as const;
const SIDES = ['a', 'b'] as const;

/** The import form's own fields, in NetBox's order (for the page's field table). */
export const CABLE_IMPORT_FIELDS: Array<{ name: string; required: boolean; help: string }> = SIDES.flatMap((s) => {
  const S = s.toUpperCase();
  return [
    { name: `side_${s}_site`, required: false, help: `Site of parent device ${S} (if any), by name` },
    { name: `side_${s}_device`, required: true, help: 'Device name (for device component terminations)' },
    { name: `side_${s}_power_panel`, required: false, help: 'Power panel name (for power feed terminations)' },
    { name: `side_${s}_circuit`, required: false, help: 'Circuit ID (for circuit terminations; the name is the term side, A or Z)' },
    { name: `side_${s}_type`, required: true, help: `Termination type: ${CABLE_TERMINATION_TYPES.join(', ')}` },
    { name: `side_${s}_name`, required: true, help: 'Termination name' },
  ];
});

/** NetBox's ColorChoices: the names the import form takes for `color`. */
const COLOR_NAMES: Record<string, string> = {
  'dark red': 'aa1409', red: 'f44336', pink: 'e91e63', rose: 'ffe4e1', fuchsia: 'ff66ff', purple: '9c27b0', 'dark purple': '673ab7',
  indigo: '3f51b5', blue: '2196f3', 'light blue': '03a9f4', cyan: '00bcd4', teal: '009688', aqua: '00ffff', 'dark green': '2f6a31',
  green: '4caf50', 'light green': '8bc34a', lime: 'cddc39', yellow: 'ffeb3b', amber: 'ffc107', orange: 'ff9800', 'dark orange': 'ff5722',
  brown: '795548', 'light grey': 'c0c0c0', grey: '9e9e9e', 'dark grey': '607d8b', black: '111111', white: 'ffffff',
};

type Get = (url: string) => Promise<{ status: number; body: any }>;
export type FieldErrors = Record<string, string[]>;

/** Whether a record uses the import form's fields for its ends (else it is the REST API's shape). */
export function usesSideFields(record: Record<string, unknown>): boolean {
  return Object.keys(record).some((k) => /^side_[ab]_/.test(k)) || (record.a_terminations === undefined && record.b_terminations === undefined);
}

const INVALID = Symbol('invalid');
/** A field's text: strings and numbers (JSON and YAML may give either); null or absent is no value; anything else is invalid. */
const text = (v: unknown): string | undefined | typeof INVALID => (typeof v === 'string' ? v.trim() : typeof v === 'number' && Number.isFinite(v) ? String(v) : v === undefined || v === null ? undefined : INVALID);
const q = (v: string) => encodeURIComponent(v);

/** One lookup by a unique attribute, with CSVModelChoiceField's errors. */
async function one(get: Get, url: string, value: string): Promise<{ obj?: any; error?: string }> {
  const r = await get(`${url}&limit=2`);
  if (r.status !== 200) return { error: `Object not found: ${value}` };
  if (r.body.count > 1) return { error: `"${value}" is not a unique value for this field; multiple objects were found` };
  if (r.body.count === 0) return { error: `Object not found: ${value}` };
  return { obj: r.body.results[0] };
}

/**
 * Resolves a record's `side_*` fields into the API's `a_terminations` / `b_terminations` and `color` names into hex,
 * in place. `id`: the cable being updated (its own terminations are not "already connected"); an update resolves an end
 * only when its fields are given. `cache` is shared by the records of one import.
 */
export async function resolveCableRecord(record: Record<string, unknown>, id: number | undefined, get: Get, cache: Map<string, Promise<{ obj?: any; error?: string }>>): Promise<FieldErrors> {
  const errors: FieldErrors = {};
  const add = (field: string, msg: string) => void (errors[field] ??= []).push(msg);
  const required = (field: string) => void (errors[field] ? undefined : add(field, 'This field is required.'));
  const cached = (url: string, value: string) => {
    let p = cache.get(url);
    if (!p) cache.set(url, (p = one(get, url, value)));
    return p;
  };
  for (const s of SIDES) {
    const S = s.toUpperCase();
    const raw: Record<string, string | undefined> = {};
    for (const f of CABLE_SIDE_FIELDS) {
      const key = `side_${s}_${f}`;
      const v = text(record[key]);
      delete record[key];
      if (v === INVALID) add(key, 'Enter a valid value.');
      else raw[f] = v === '' ? undefined : v;
    }
    if (id !== undefined && !Object.values(raw).some((v) => v !== undefined)) continue;
    if (id === undefined && !Object.values(raw).some((v) => v !== undefined) && record[`${s}_terminations`] !== undefined) continue;
    // side_<s>_type: a content type among the cable termination models.
    let type: string | undefined;
    if (raw.type === undefined) required(`side_${s}_type`);
    else if (raw.type.split('.').length !== 2) add(`side_${s}_type`, 'Object type must be specified as "<app>.<model>"');
    else if (!(CABLE_TERMINATION_TYPES as readonly string[]).includes(raw.type.toLowerCase())) add(`side_${s}_type`, 'Invalid object type');
    else type = raw.type.toLowerCase();
    if (raw.name === undefined) required(`side_${s}_name`);
    // The holder: a power panel for power feeds, a circuit for circuit terminations, else a device (narrowed by the site).
    const holderField = type === 'dcim.powerfeed' ? 'power_panel' : type === 'circuits.circuittermination' ? 'circuit' : 'device';
    let site: any;
    let siteMissing = false;
    if (raw.site !== undefined) {
      const r = await cached(`/api/dcim/sites/?name=${q(raw.site)}`, raw.site);
      if (r.error) {
        add(`side_${s}_site`, r.error);
        siteMissing = true;
      } else site = r.obj;
    }
    const holderName = raw[holderField];
    if (holderName === undefined) {
      required(`side_${s}_${holderField}`);
      continue;
    }
    const holderUrl =
      holderField === 'circuit'
        ? `/api/circuits/circuits/?cid=${q(holderName)}`
        : `/api/dcim/${holderField === 'device' ? 'devices' : 'power-panels'}/?name=${q(holderName)}${site ? `&site_id=${site.id}` : ''}`;
    const holder = siteMissing && holderField !== 'circuit' ? { error: `Object not found: ${holderName}` } : await cached(holderUrl, holderName);
    if (holder.error) {
      add(`side_${s}_${holderField}`, holder.error);
      continue;
    }
    if (!type || raw.name === undefined) continue;
    const m = modelForObjectType(type)!;
    const list = `/api/${m.app}/${m.path}/`;
    const find = async (filter: string) => {
      const r = await get(`${list}?${filter}&limit=2`);
      return r.status === 200 && r.body.count === 1 ? r.body.results[0] : undefined;
    };
    let term: any;
    if (holderField === 'power_panel') term = await find(`power_panel_id=${holder.obj.id}&name=${q(raw.name)}`);
    else if (holderField === 'circuit') term = /^[az]$/i.test(raw.name) ? await find(`circuit_id=${holder.obj.id}&term_side=${raw.name.toUpperCase()}`) : undefined;
    else {
      term = await find(`device_id=${holder.obj.id}&name=${q(raw.name)}`);
      // NetBox: on a virtual chassis' master, a name not on the master itself is looked up among the members.
      const vc = holder.obj.virtual_chassis;
      if (!term && vc?.id) {
        const chassis = await get(`/api/dcim/virtual-chassis/${vc.id}/`);
        if (chassis.status === 200 && chassis.body.master?.id === holder.obj.id) {
          const members = await get(`/api/dcim/devices/?virtual_chassis_id=${vc.id}&limit=100&brief=1`);
          const ids = members.status === 200 ? (members.body.results as any[]).map((d) => `device_id=${d.id}`).join('&') : '';
          if (ids) term = await find(`${ids}&name=${q(raw.name)}`);
        }
      }
    }
    const holderText = String(holder.obj.display ?? holderName);
    if (!term) {
      add(`side_${s}_name`, `${S} side termination not found: ${holderText} ${raw.name}`);
      continue;
    }
    if (term.cable && term.cable.id !== id) {
      add(`side_${s}_name`, `Side ${S}: ${holderText} ${term.display ?? raw.name} is already connected`);
      continue;
    }
    record[`${s}_terminations`] = [{ object_type: type, object_id: term.id }];
  }
  // NetBox's _clean_color: a color name becomes its hex code; anything else longer than six characters is refused.
  if (typeof record.color === 'string') {
    const c = record.color.trim().toLowerCase();
    const hex = COLOR_NAMES[c] ?? c;
    if (hex.length > 6) add('color', `${record.color} did not match any used color name and was longer than six characters: invalid hex.`);
    else record.color = hex;
  }
  // Django reports a form's errors in the order of its fields.
  const order = [...SIDES.flatMap((s) => CABLE_SIDE_FIELDS.map((f) => `side_${s}_${f}`)), 'color'];
  return Object.fromEntries(Object.entries(errors).sort(([x], [y]) => order.indexOf(x) - order.indexOf(y)));
}
