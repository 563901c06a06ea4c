import type { ModelDef } from './types.ts';

/**
 * The models by key and object type, and their URLs: what the models' own code looks up (`model('device')`) while
 * registry.ts, which imports every model module, fills it in once (registerModels). Importing this leaf instead of
 * registry.ts keeps the model modules out of an import circle with the registry.
 */

let registered: ModelDef[] = [];
const byKey = new Map<string, ModelDef>();
const byType = new Map<string, ModelDef>();

/** Called by registry.ts with every model, in its order. */
export function registerModels(models: ModelDef[]): void {
  registered = models;
  byKey.clear();
  byType.clear();
  for (const m of models) {
    byKey.set(m.key, m);
    byType.set(m.objectType, m);
  }
}

/** Every registered model (registry.ts's MODELS). */
export function registeredModels(): readonly ModelDef[] {
  return registered;
}

export function model(key: string): ModelDef {
  const m = byKey.get(key);
  if (!m) throw new Error(`unknown model ${key}`);
  return m;
}

export function modelForObjectType(objectType: string): ModelDef | undefined {
  return byType.get(objectType);
}

/** The object's page in NetBox's UI (`/dcim/devices/1/`), as NetBox's `display_url`. */
export function displayUrl(base: string, m: ModelDef, id: number | string): string {
  return `${base}/${m.app}/${m.path}/${id}/`;
}

export function objectUrl(base: string, m: ModelDef, id: number | string): string {
  return `${base}/api/${m.app}/${m.path}/${id}/`;
}

/** NetBox's apps' verbose names, as its object-type pickers and messages show them ("DCIM > Device type"). */
export const APP_LABELS: Record<string, string> = {
  dcim: 'DCIM',
  ipam: 'IPAM',
  extras: 'Extras',
  tenancy: 'Tenancy',
  virtualization: 'Virtualization',
  circuits: 'Circuits',
  vpn: 'VPN',
  wireless: 'Wireless',
  core: 'Core',
  users: 'Users',
};

/** Object types of the change log that are no model of the registry: the event pipeline's own. */
const OTHER_LABELS: Record<string, string> = { 'extras.eventrule': 'Extras > Event rule', 'extras.webhook': 'Extras > Webhook' };

/** How NetBox names an object type in pickers: "DCIM > Device type", "IPAM > IP address". */
export function objectTypeLabel(objectType: string): string {
  const m = byType.get(objectType);
  if (!m) return OTHER_LABELS[objectType] ?? objectType;
  const v = m.verboseName;
  return `${APP_LABELS[m.app] ?? m.app} > ${v.charAt(0).toUpperCase()}${v.slice(1)}`;
}
