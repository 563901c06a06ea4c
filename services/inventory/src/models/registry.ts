import { device, deviceRole, deviceType, iface, manufacturer, site } from './dcim.ts';
import { tag } from './extras.ts';
import { ipAddress } from './ipam.ts';
import type { ModelDef } from './types.ts';

export const MODELS: ModelDef[] = [site, manufacturer, deviceType, deviceRole, device, iface, ipAddress, tag];

const byKey = new Map(MODELS.map((m) => [m.key, m]));
const byType = new Map(MODELS.map((m) => [m.objectType, m]));

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
