/**
 * NetBox 4.3's filter names of the networking objects (src/models/networking.ts), as netbox-filters.ts lists them for
 * the others: base names from NetBox's filtersets (names only), merged into NETBOX_FILTERS.
 */
const BASE = ['created', 'created_by_request', 'id', 'last_updated', 'modified_by_request', 'q', 'tag', 'tag_id', 'updated_by_request'];
const TENANCY = ['tenant', 'tenant_group', 'tenant_group_id', 'tenant_id'];
const CONTACTS = ['contact', 'contact_group', 'contact_role'];
const SCOPED = ['location', 'location_id', 'region', 'region_id', 'scope_type', 'site', 'site_group', 'site_group_id', 'site_id'];
const sorted = (...lists: string[][]) => [...new Set(lists.flat())].sort();

export const NETWORKING_FILTERS: Record<string, readonly string[]> = {
  macaddress: sorted(BASE, ['assigned_object_id', 'assigned_object_type', 'description', 'device', 'device_id', 'interface', 'interface_id', 'mac_address', 'virtual_machine', 'virtual_machine_id', 'vminterface', 'vminterface_id']),
  l2vpn: sorted(BASE, TENANCY, CONTACTS, ['description', 'export_target', 'export_target_id', 'identifier', 'import_target', 'import_target_id', 'name', 'slug', 'status', 'type']),
  l2vpntermination: sorted(BASE, ['assigned_object_id', 'assigned_object_type', 'device', 'device_id', 'interface', 'interface_id', 'l2vpn', 'l2vpn_id', 'region', 'region_id', 'site', 'site_id', 'virtual_machine', 'virtual_machine_id', 'vlan', 'vlan_id', 'vlan_vid', 'vminterface', 'vminterface_id']),
  wirelesslangroup: sorted(BASE, ['ancestor', 'ancestor_id', 'description', 'name', 'parent', 'parent_id', 'slug']),
  wirelesslan: sorted(BASE, TENANCY, SCOPED, ['auth_cipher', 'auth_psk', 'auth_type', 'description', 'group', 'group_id', 'interface_id', 'scope_id', 'ssid', 'status', 'vlan_id']),
  wirelesslink: sorted(BASE, TENANCY, ['auth_cipher', 'auth_psk', 'auth_type', 'description', 'distance', 'distance_unit', 'interface_a_id', 'interface_b_id', 'ssid', 'status']),
  vlantranslationpolicy: sorted(BASE, ['description', 'name']),
  vlantranslationrule: sorted(BASE, ['description', 'local_vid', 'policy', 'policy_id', 'remote_vid']),
  virtualdevicecontext: sorted(BASE, TENANCY, ['description', 'device', 'device_id', 'has_primary_ip', 'identifier', 'interface_id', 'name', 'primary_ip4', 'primary_ip4_id', 'primary_ip6', 'primary_ip6_id', 'status']),
  fhrpgroup: sorted(BASE, ['auth_key', 'auth_type', 'description', 'group_id', 'name', 'protocol', 'related_ip']),
  // ChangeLoggedModelFilterSet: no tags, no search.
  fhrpgroupassignment: sorted(['created', 'created_by_request', 'id', 'last_updated', 'modified_by_request', 'updated_by_request'], ['device', 'device_id', 'group_id', 'interface_id', 'interface_type', 'priority', 'virtual_machine', 'virtual_machine_id']),
  provideraccount: sorted(BASE, CONTACTS, ['account', 'description', 'name', 'provider', 'provider_id']),
};
