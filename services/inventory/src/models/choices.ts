import type { Choice } from './types.ts';

const c = (value: string, label: string): Choice => ({ value, label });

export const SITE_STATUS: Choice[] = [c('planned', 'Planned'), c('staging', 'Staging'), c('active', 'Active'), c('decommissioning', 'Decommissioning'), c('retired', 'Retired')];

export const DEVICE_STATUS: Choice[] = [
  c('offline', 'Offline'),
  c('active', 'Active'),
  c('planned', 'Planned'),
  c('staged', 'Staged'),
  c('failed', 'Failed'),
  c('inventory', 'Inventory'),
  c('decommissioning', 'Decommissioning'),
];

export const IPADDRESS_STATUS: Choice[] = [c('active', 'Active'), c('reserved', 'Reserved'), c('deprecated', 'Deprecated'), c('dhcp', 'DHCP'), c('slaac', 'SLAAC')];

/** A subset of NetBox's InterfaceTypeChoices. */
export const INTERFACE_TYPES: Choice[] = [
  c('virtual', 'Virtual'),
  c('bridge', 'Bridge'),
  c('lag', 'Link Aggregation Group (LAG)'),
  c('100base-tx', '100BASE-TX (10/100ME)'),
  c('1000base-t', '1000BASE-T (1GE)'),
  c('2.5gbase-t', '2.5GBASE-T (2.5GE)'),
  c('5gbase-t', '5GBASE-T (5GE)'),
  c('10gbase-t', '10GBASE-T (10GE)'),
  c('1000base-x-sfp', 'SFP (1GE)'),
  c('10gbase-x-sfpp', 'SFP+ (10GE)'),
  c('25gbase-x-sfp28', 'SFP28 (25GE)'),
  c('40gbase-x-qsfpp', 'QSFP+ (40GE)'),
  c('100gbase-x-qsfp28', 'QSFP28 (100GE)'),
  c('400gbase-x-qsfpdd', 'QSFP-DD (400GE)'),
  c('ieee802.11ac', 'IEEE 802.11ac'),
  c('ieee802.11ax', 'IEEE 802.11ax'),
  c('other', 'Other'),
];

export function choiceLabel(choices: Choice[], value: string): string {
  return choices.find((x) => x.value === value)?.label ?? value;
}

export const LOCATION_STATUS: Choice[] = [c('planned', 'Planned'), c('staging', 'Staging'), c('active', 'Active'), c('decommissioning', 'Decommissioning'), c('retired', 'Retired')];

export const RACK_STATUS: Choice[] = [c('reserved', 'Reserved'), c('available', 'Available'), c('planned', 'Planned'), c('active', 'Active'), c('deprecated', 'Deprecated')];

export const RACK_WIDTH: Choice[] = [c('10', '10 inches'), c('19', '19 inches'), c('21', '21 inches'), c('23', '23 inches')];

export const RACK_FORM_FACTOR: Choice[] = [
  c('2-post-frame', '2-post frame'),
  c('4-post-frame', '4-post frame'),
  c('4-post-cabinet', '4-post cabinet'),
  c('wall-frame', 'Wall-mounted frame'),
  c('wall-frame-vertical', 'Wall-mounted frame (vertical)'),
  c('wall-cabinet', 'Wall-mounted cabinet'),
  c('wall-cabinet-vertical', 'Wall-mounted cabinet (vertical)'),
];

export const RACK_AIRFLOW: Choice[] = [c('front-to-rear', 'Front to rear'), c('rear-to-front', 'Rear to front')];

export const DEVICE_AIRFLOW: Choice[] = [
  c('front-to-rear', 'Front to rear'),
  c('rear-to-front', 'Rear to front'),
  c('left-to-right', 'Left to right'),
  c('right-to-left', 'Right to left'),
  c('side-to-rear', 'Side to rear'),
  c('rear-to-side', 'Rear to side'),
  c('bottom-to-top', 'Bottom to top'),
  c('top-to-bottom', 'Top to bottom'),
  c('passive', 'Passive'),
  c('mixed', 'Mixed'),
];

/** NetBox's WeightUnitChoices and RackDimensionUnitChoices. */
export const WEIGHT_UNIT: Choice[] = [c('kg', 'Kilograms'), c('g', 'Grams'), c('lb', 'Pounds'), c('oz', 'Ounces')];
export const RACK_DIMENSION_UNIT: Choice[] = [c('mm', 'Millimeters'), c('in', 'Inches')];

export const DEVICE_FACE: Choice[] = [c('front', 'Front'), c('rear', 'Rear')];
export const SUBDEVICE_ROLE: Choice[] = [c('parent', 'Parent'), c('child', 'Child')];

export const PREFIX_STATUS: Choice[] = [c('container', 'Container'), c('active', 'Active'), c('reserved', 'Reserved'), c('deprecated', 'Deprecated')];

export const VLAN_QINQ_ROLE: Choice[] = [c('svlan', 'Service'), c('cvlan', 'Customer')];

export const VLAN_STATUS: Choice[] = [c('active', 'Active'), c('reserved', 'Reserved'), c('deprecated', 'Deprecated')];

export const IPADDRESS_ROLE: Choice[] = [
  c('loopback', 'Loopback'),
  c('secondary', 'Secondary'),
  c('anycast', 'Anycast'),
  c('vip', 'VIP'),
  c('vrrp', 'VRRP'),
  c('hsrp', 'HSRP'),
  c('glbp', 'GLBP'),
  c('carp', 'CARP'),
];

export const INTERFACE_DUPLEX: Choice[] = [c('half', 'Half'), c('full', 'Full'), c('auto', 'Auto')];

export const INTERFACE_MODE: Choice[] = [c('access', 'Access'), c('tagged', 'Tagged'), c('tagged-all', 'Tagged (All)'), c('q-in-q', 'Q-in-Q (802.1ad)')];

export const CLUSTER_STATUS: Choice[] = [c('planned', 'Planned'), c('staging', 'Staging'), c('active', 'Active'), c('decommissioning', 'Decommissioning'), c('offline', 'Offline')];

export const VIRTUAL_MACHINE_STATUS: Choice[] = [
  c('offline', 'Offline'),
  c('active', 'Active'),
  c('planned', 'Planned'),
  c('staged', 'Staged'),
  c('failed', 'Failed'),
  c('decommissioning', 'Decommissioning'),
  c('paused', 'Paused'),
];
