import { device, deviceRole, deviceType, iface, location, manufacturer, platform, rack, rackRole, region, site, siteGroup } from './dcim.ts';
import { tag } from './extras.ts';
import { service } from './service.ts';
import { ipAddress, prefix, vlan, vlanGroup, vrf } from './ipam.ts';
import { tenant, tenantGroup } from './tenancy.ts';
import { cluster, clusterGroup, clusterType, virtualDisk, virtualMachine, vmInterface } from './virtualization.ts';
import type { ModelDef } from './types.ts';
import { registerModels } from './lookup.ts';
import { CABLING_MODELS } from './cabling.ts';
import { CIRCUIT_MODELS } from './circuits.ts';
import { IPAM_REGISTRY_MODELS } from './ipam-registry.ts';
import { customField } from './custom-fields.ts';
import { MORE_MODELS } from './more-models.ts';
import { JOURNAL_CONFIG_MODELS, withContactFilters } from './journal-config-models.ts';
import { CHASSIS_BAY_MODELS } from './chassis-bays.ts';
import { NETWORKING_MODELS, withNetworking } from './networking.ts';
import { COMPONENT_TEMPLATE_MODELS } from './component-templates.ts';
import { RACK_TYPE_MODELS } from './rack-types.ts';
import { withCoreFilters } from './core-filters.ts';
import { DATA_SOURCE_MODELS } from './data-sources.ts';

/** Every object type: its REST endpoints, change logging and event rules all come from here. */
export const MODELS: ModelDef[] = [
  region,
  siteGroup,
  site,
  location,
  rackRole,
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
  ...NETWORKING_MODELS,
  ...COMPONENT_TEMPLATE_MODELS,
  ...RACK_TYPE_MODELS,
  ...JOURNAL_CONFIG_MODELS,
  ...DATA_SOURCE_MODELS,
];

withNetworking(MODELS);
withContactFilters(MODELS);
withCoreFilters(MODELS);
registerModels(MODELS);

// The lookups live in lookup.ts (a leaf the model modules import); callers outside the models import them from here,
// which guarantees the registry has filled them in.
export { displayUrl, model, modelForObjectType, objectTypeLabel, objectUrl } from './lookup.ts';
