import { device, deviceRole, deviceType, iface, location, manufacturer, platform, rack, region, site, siteGroup } from './dcim.ts';
import { tag } from './extras.ts';
import { service } from './service.ts';
import { ipAddress, prefix, vlan, vlanGroup, vrf } from './ipam.ts';
import { tenant, tenantGroup } from './tenancy.ts';
import { cluster, clusterGroup, clusterType, virtualDisk, virtualMachine, vmInterface } from './virtualization.ts';
import type { ModelDef } from './types.ts';
import { CABLING_MODELS } from './cabling.ts';
import { CIRCUIT_MODELS } from './circuits.ts';
import { IPAM_REGISTRY_MODELS } from './ipam-registry.ts';
import { customField } from './custom-fields.ts';
import { MORE_MODELS } from './more-models.ts';
import { JOURNAL_CONFIG_MODELS, withContactFilters } from './journal-config-models.ts';
import { CHASSIS_BAY_MODELS } from './chassis-bays.ts';

/** Every object type: its REST endpoints, change logging and event rules all come from here. */
export const MODELS: ModelDef[] = [
  region,
  siteGroup,
  site,
  location,
  rack,
  manufacturer,
  deviceType,
  deviceRole,
  platform,
  device,
  iface,
  vrf,
  prefix,
  vlanGroup,
  vlan,
  ipAddress,
  tenantGroup,
  tenant,
  tag,
  clusterType,
  clusterGroup,
  cluster,
  virtualMachine,
  vmInterface,
  virtualDisk,
  service,
  ...CABLING_MODELS,
  ...CIRCUIT_MODELS,
  ...IPAM_REGISTRY_MODELS,
  customField,
  ...MORE_MODELS,
  ...CHASSIS_BAY_MODELS,
  ...JOURNAL_CONFIG_MODELS,
];

withContactFilters(MODELS);

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

/** NetBox's app labels as its object-type pickers show them. */
const APP_LABELS: Record<string, string> = { dcim: 'DCIM', ipam: 'IPAM', extras: 'Extras', tenancy: 'Tenancy', virtualization: 'Virtualization', circuits: 'Circuits' };

/** How NetBox names an object type in pickers: "DCIM > Device type", "IPAM > IP address". */
export function objectTypeLabel(objectType: string): string {
  const m = byType.get(objectType);
  if (!m) return objectType;
  const v = m.verboseName;
  return `${APP_LABELS[m.app] ?? m.app} > ${v.charAt(0).toUpperCase()}${v.slice(1)}`;
}
