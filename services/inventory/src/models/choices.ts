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
