import { CABLE_TERMINATION_TYPES, COMPATIBLE } from '../../models/cabling.ts';
import { modelForObjectType } from '../../models/registry.ts';
import { formList, formString, errorList, type FieldErrors, type FormBody } from '../forms.ts';
import { html, type SafeHtml } from '../html.ts';

/**
 * The cable form's ends as NetBox's UI builds them (get_cable_form): per end a termination type
 * (`a_terminations_type`, `dcim.interface`), the object that holds the terminations — a device for device
 * components (`termination_a_device`), a power panel for power feeds, a circuit for circuit terminations — and the
 * terminations themselves (`a_terminations`, ids, several allowed). The submitted ends become the API's
 * `a_terminations` / `b_terminations` lists of `{object_type, object_id}`. Without scripts, "Update choices"
 * submits the form to list the chosen holder's terminations; NetBox's add links prefill it
 * (`/dcim/cables/add/?a_terminations_type=dcim.interface&a_terminations=7&b_terminations_type=dcim.interface`).
 */

export const CABLE_ENDS = ['a', 'b'] as const;
export type CableEnd = (typeof CABLE_ENDS)[number];

/** What one end of the form holds: the type, the holder narrowing the choices, the chosen termination ids. */
export interface CableEndForm {
  type: string;
  parent: string;
  ids: string[];
}

/** The object that holds terminations of a type, with its filter and form field names (NetBox's per-type fields). */
export function holderOf(type: string): { key: string; field: string; filter: string; label: string } {
  if (type === 'dcim.powerfeed') return { key: 'powerpanel', field: 'powerpanel', filter: 'power_panel_id', label: 'Power panel' };
  if (type === 'circuits.circuittermination') return { key: 'circuit', field: 'circuit', filter: 'circuit_id', label: 'Circuit' };
  return { key: 'device', field: 'device', filter: 'device_id', label: 'Device' };
}

const validType = (t: string) => (CABLE_TERMINATION_TYPES as readonly string[]).includes(t);

/** One end as submitted (a form body or a query string). */
export function cableEndFrom(form: FormBody, end: CableEnd): CableEndForm {
  const type = formString(form, `${end}_terminations_type`).trim();
  const holder = holderOf(type);
  return {
    type,
    parent: formString(form, `termination_${end}_${holder.field}`).trim(),
    ids: formList(form, `${end}_terminations`)
      .flatMap((v) => v.split(','))
      .map((v) => v.trim())
      .filter(Boolean)
      .slice(0, 100),
  };
}

/** One end of an existing cable, from its REST representation. */
export function cableEndOf(cable: Record<string, any>, end: CableEnd): CableEndForm {
  const list: any[] = Array.isArray(cable[`${end}_terminations`]) ? cable[`${end}_terminations`] : [];
  const type = String(list[0]?.object_type ?? '');
  const holder = holderOf(type);
  const parentOf = (o: any) => o?.[holder.key === 'powerpanel' ? 'power_panel' : holder.key]?.id;
  return { type, parent: parentOf(list[0]?.object) === undefined ? '' : String(parentOf(list[0]?.object)), ids: list.filter((t) => t.object_type === type).map((t) => String(t.object_id)) };
}

/** The API's list of terminations for one end, or the form's error for it. */
export function terminationsOf(e: CableEndForm, end: CableEnd, errors: FieldErrors): Array<{ object_type: string; object_id: number }> | undefined {
  if (!e.ids.length) return [];
  if (!validType(e.type)) {
    (errors[`${end}_terminations`] ??= []).push(e.type ? `Invalid termination type: ${e.type.slice(0, 100)}` : 'Choose the type of the terminations.');
    return undefined;
  }
  const bad = e.ids.find((id) => !/^[1-9]\d{0,14}$/.test(id));
  if (bad !== undefined) {
    (errors[`${end}_terminations`] ??= []).push(`“${bad.slice(0, 50)}” is not a valid ID.`);
    return undefined;
  }
  return e.ids.map((id) => ({ object_type: e.type, object_id: Number(id) }));
}

type Api = (url: string) => Promise<{ status: number; body: any }>;

/** Options for one end's pickers: the holders (when few enough) and the holder's terminations of the chosen type. */
export interface CableEndOptions {
  holders: Array<{ value: string; label: string }> | null;
  terminations: Array<{ value: string; label: string; occupied: boolean }> | null;
}

const MAX = 500;

export async function cableEndOptions(api: Api, e: CableEndForm): Promise<CableEndOptions> {
  if (!validType(e.type)) return { holders: null, terminations: null };
  const holder = holderOf(e.type);
  const holderModel = modelForObjectType(holder.key === 'circuit' ? 'circuits.circuit' : `dcim.${holder.key}`)!;
  const target = modelForObjectType(e.type)!;
  const h = await api(`/api/${holderModel.app}/${holderModel.path}/?brief=1&limit=${MAX}`);
  const holders = h.status === 200 && h.body.count <= MAX ? (h.body.results as any[]).map((x) => ({ value: String(x.id), label: String(x.display) })) : null;
  let terminations: CableEndOptions['terminations'] = null;
  const parent = /^[1-9]\d{0,14}$/.test(e.parent) ? e.parent : '';
  const chosen = e.ids.filter((id) => /^[1-9]\d{0,14}$/.test(id));
  const query = parent ? `${holder.filter}=${parent}` : chosen.length ? chosen.map((id) => `id=${id}`).join('&') : '';
  if (query) {
    // NetBox's picker lists physical interfaces only (kind=physical).
    const r = await api(`/api/${target.app}/${target.path}/?brief=1&${query}${e.type === 'dcim.interface' ? '&kind=physical' : ''}&limit=${MAX}`);
    if (r.status === 200 && r.body.count <= MAX) terminations = (r.body.results as any[]).map((x) => ({ value: String(x.id), label: String(x.display), occupied: !!(x.cable || x._occupied) }));
  }
  return { holders, terminations };
}

const TYPE_LABELS = (t: string) => {
  const m = modelForObjectType(t);
  return m ? `${m.verboseName.charAt(0).toUpperCase()}${m.verboseName.slice(1)}` : t;
};

/** The fieldset of one end: type, holder and terminations, with the errors the API gave for the end. */
export function cableEndControls(end: CableEnd, e: CableEndForm, opts: CableEndOptions, errors: FieldErrors, other?: CableEndForm): SafeHtml {
  const name = `${end}_terminations`;
  const holder = holderOf(e.type);
  const side = end.toUpperCase();
  // Types compatible with the other end come first, as NetBox offers them.
  const types = [...CABLE_TERMINATION_TYPES];
  const compatible = other && validType(other.type) ? new Set(COMPATIBLE[other.type] ?? []) : undefined;
  const typeSelect = html`<select id="f-${end}_terminations_type" name="${end}_terminations_type"><option value="">———</option>${types.map(
    (t) => html`<option value="${t}"${t === e.type ? html` selected` : ''}${compatible && !compatible.has(t) ? html` class="muted"` : ''}>${TYPE_LABELS(t)}</option>`,
  )}</select>`;
  const holderName = `termination_${end}_${holder.field}`;
  const holderControl = opts.holders
    ? html`<select id="f-${holderName}" name="${holderName}"><option value="">———</option>${opts.holders.map((o) => html`<option value="${o.value}"${o.value === e.parent ? html` selected` : ''}>${o.label}</option>`)}</select>`
    : html`<input id="f-${holderName}" name="${holderName}" type="text" value="${e.parent}" size="8"><div class="help">ID of the ${holder.label.toLowerCase()}</div>`;
  const termControl = opts.terminations
    ? html`<select id="f-${name}" name="${name}" multiple size="${Math.min(10, Math.max(3, opts.terminations.length))}">${opts.terminations.map(
        (o) =>
          html`<option value="${o.value}"${e.ids.includes(o.value) ? html` selected` : o.occupied ? html` disabled` : ''}>${o.label}${o.occupied && !e.ids.includes(o.value) ? ' (occupied)' : ''}</option>`,
      )}</select>`
    : html`<input id="f-${name}" name="${name}" type="text" value="${e.ids.join(', ')}"><div class="help">IDs, comma-separated (choose a ${holder.label.toLowerCase()} and update the choices to pick from a list)</div>`;
  const errs = errors[name];
  return html`<fieldset class="cable-end" data-testid="cable-end-${end}"><legend>Side ${side}</legend>
<div class="field" data-field="${end}_terminations_type"><label for="f-${end}_terminations_type">Type</label>${typeSelect}${errorList(errors[`${end}_terminations_type`])}</div>
<div class="field" data-field="${holderName}"><label for="f-${holderName}">${holder.label}</label>${holderControl}</div>
<div class="field${errs?.length ? ' has-error' : ''}" data-field="${name}"><label for="f-${name}">Terminations</label>${termControl}${errorList(errs)}</div>
</fieldset>`;
}

/** The button that submits the form only to refresh the ends' choices (no scripts needed). */
export const refreshButton = html`<button type="submit" name="_refresh" value="1" class="secondary" data-testid="refresh-choices">Update choices</button>`;
