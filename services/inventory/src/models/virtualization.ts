import { CLUSTER_STATUS, INTERFACE_MODE, VIRTUAL_MACHINE_STATUS } from './choices.ts';
import { commentsField, descriptionField, nameField, ref, refFilters, siteTreeFilters, slugField, tenancyFilters } from './tenancy.ts';
import { checkScope, LOCATION_SCOPE_TYPES, SCOPE_REF, scopedFilters, scopeFields } from './scopes.ts';
import type { FieldDef, ModelDef } from './types.ts';
import { countFilter, localContextFilter } from './count-filters.ts';
import { checkVirtualMachine, checkVMInterface } from './vm-rules.ts';

/** Cluster types and cluster groups: NetBox's organisational models (name, slug, description; no comments). */
function organisational(key: string, path: string, title: string, verboseName: string): ModelDef {
  return {
    key,
    app: 'virtualization',
    path,
    table: `virtualization_${key}`,
    objectType: `virtualization.${key}`,
    verboseName,
    title,
    fields: [nameField(100, { unique: true }), slugField({ unique: true }), descriptionField],
    ordering: ['name'],
    search: ['name', 'slug', 'description'],
    brief: ['name', 'slug', 'description', 'cluster_count'],
    taggable: true,
    display: (r) => r.name,
    counts: { cluster_count: { model: 'cluster', column: key === 'clustertype' ? 'type_id' : 'group_id' } },
  };
}

export const clusterType: ModelDef = { ...organisational('clustertype', 'cluster-types', 'ClusterType', 'cluster type'), protectedBy: [{ model: 'cluster', column: 'type_id' }] };

export const clusterGroup: ModelDef = { ...organisational('clustergroup', 'cluster-groups', 'ClusterGroup', 'cluster group'), setNull: [{ model: 'cluster', column: 'group_id' }] };

export const cluster: ModelDef = {
  key: 'cluster',
  app: 'virtualization',
  path: 'clusters',
  table: 'virtualization_cluster',
  objectType: 'virtualization.cluster',
  verboseName: 'cluster',
  title: 'Cluster',
  fields: [
    nameField(100),
    { name: 'type', column: 'type_id', kind: 'fk', fk: 'clustertype', required: true },
    ref('group', 'clustergroup'),
    { name: 'status', column: 'status', kind: 'choice', choices: CLUSTER_STATUS, default: 'active', filter: true },
    ref('tenant', 'tenant'),
    ...scopeFields(LOCATION_SCOPE_TYPES),
    descriptionField,
    commentsField,
  ],
  scopeRef: SCOPE_REF,
  check: (ctx, values, existing, errors) => checkScope(ctx, values, existing, errors, true),
  uniqueTogether: [['group', 'name']],
  ordering: ['name'],
  search: ['name', 'description', 'comments'],
  brief: ['name', 'description', 'virtualmachine_count'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: [...refFilters('type', 'clustertype'), ...refFilters('group', 'clustergroup'), ...scopedFilters('virtualization_cluster'), ...tenancyFilters],
  protectedBy: [{ model: 'virtualmachine', column: 'cluster_id' }],
  setNull: [{ model: 'device', column: 'cluster_id' }],
  counts: {
    device_count: { model: 'device', column: 'cluster_id' },
    virtualmachine_count: { model: 'virtualmachine', column: 'cluster_id' },
    allocated_vcpus: { model: 'virtualmachine', column: 'cluster_id', sum: 'vcpus' },
    allocated_memory: { model: 'virtualmachine', column: 'cluster_id', sum: 'memory' },
    allocated_disk: { model: 'virtualmachine', column: 'cluster_id', sum: 'disk' },
  },
};

export const virtualMachine: ModelDef = {
  key: 'virtualmachine',
  app: 'virtualization',
  path: 'virtual-machines',
  table: 'virtualization_virtualmachine',
  objectType: 'virtualization.virtualmachine',
  verboseName: 'virtual machine',
  title: 'VirtualMachine',
  naturalName: true,
  fields: [
    nameField(64),
    { name: 'status', column: 'status', kind: 'choice', choices: VIRTUAL_MACHINE_STATUS, default: 'active', filter: true },
    ref('site', 'site'),
    ref('cluster', 'cluster'),
    ref('device', 'device'),
    { name: 'serial', column: 'serial', kind: 'char', blank: true, maxLength: 50, default: '', filter: true, label: 'Serial number' },
    ref('role', 'devicerole'),
    ref('tenant', 'tenant'),
    ref('platform', 'platform'),
    ref('primary_ip4', 'ipaddress', { label: 'Primary IPv4' }),
    ref('primary_ip6', 'ipaddress', { label: 'Primary IPv6' }),
    { name: 'vcpus', column: 'vcpus', kind: 'decimal', nullable: true, default: null, min: 0.01, max: 9999.99, places: 2, filter: true, label: 'vCPUs' },
    { name: 'memory', column: 'memory', kind: 'integer', nullable: true, default: null, min: 0, max: 2147483647, filter: true, label: 'Memory (MB)' },
    { name: 'disk', column: 'disk', kind: 'integer', nullable: true, default: null, min: 0, max: 2147483647, filter: true, label: 'Disk (MB)' },
    descriptionField,
    commentsField,
    ref('config_template', 'configtemplate'),
    { name: 'local_context_data', column: 'local_context_data', kind: 'json', nullable: true, default: null },
  ],
  computed: {
    primary_ip4: [['primary_ip', (_row, refs) => refs.primary_ip6 ?? refs.primary_ip4 ?? null]],
    // The local context data; config contexts are merged under it when the VM is represented (models/config-contexts.ts).
    local_context_data: [['config_context', (row) => row.local_context_data ?? {}]],
  },
  ordering: ['name', 'id'],
  search: ['name', 'description', 'comments', 'serial'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  check: checkVirtualMachine,
  extraFilters: [
    { name: 'config_template_id', kind: 'fk_id', column: 'config_template_id', model: 'configtemplate' },
    ...refFilters('cluster', 'cluster', 'name'),
    ...refFilters('cluster_type', 'clustertype', 'slug', 'cluster_id').map((f) => ({ ...f, through: [{ table: 'virtualization_cluster', column: 'type_id' }] })),
    ...refFilters('cluster_group', 'clustergroup', 'slug', 'cluster_id').map((f) => ({ ...f, through: [{ table: 'virtualization_cluster', column: 'group_id' }] })),
    ...refFilters('site', 'site'),
    ...siteTreeFilters(),
    ...refFilters('device', 'device', 'name'),
    ...refFilters('role', 'devicerole'),
    ...refFilters('platform', 'platform'),
    { name: 'primary_ip4_id', kind: 'fk_id', column: 'primary_ip4_id', model: 'ipaddress' },
    { name: 'primary_ip6_id', kind: 'fk_id', column: 'primary_ip6_id', model: 'ipaddress' },
    { name: 'primary_ip4', kind: 'fk_slug', column: 'primary_ip4_id', model: 'ipaddress', attribute: 'address' },
    { name: 'primary_ip6', kind: 'fk_slug', column: 'primary_ip6_id', model: 'ipaddress', attribute: 'address' },
    { name: 'has_primary_ip', kind: 'custom' },
    localContextFilter,
    countFilter('interface_count', 'virtualization_vminterface', 'virtual_machine_id'),
    countFilter('virtual_disk_count', 'virtualization_virtualdisk', 'virtual_machine_id'),
    ...tenancyFilters,
  ],
  cascade: [
    { model: 'vminterface', column: 'virtual_machine_id' },
    { model: 'virtualdisk', column: 'virtual_machine_id' },
    { model: 'service', column: 'parent_object_id', typeColumn: 'parent_object_type' },
  ],
  counts: {
    interface_count: { model: 'vminterface', column: 'virtual_machine_id' },
    virtual_disk_count: { model: 'virtualdisk', column: 'virtual_machine_id' },
  },
};

const vmRef: FieldDef = { name: 'virtual_machine', column: 'virtual_machine_id', kind: 'fk', fk: 'virtualmachine', required: true };

export const vmInterface: ModelDef = {
  key: 'vminterface',
  app: 'virtualization',
  path: 'interfaces',
  table: 'virtualization_vminterface',
  objectType: 'virtualization.vminterface',
  verboseName: 'interface',
  title: 'VMInterface',
  naturalName: true,
  fields: [
    vmRef,
    nameField(64),
    { name: 'enabled', column: 'enabled', kind: 'boolean', default: true, filter: true },
    ref('parent', 'vminterface', { label: 'Parent interface' }),
    ref('bridge', 'vminterface', { label: 'Bridge interface' }),
    { name: 'mtu', column: 'mtu', kind: 'integer', nullable: true, min: 1, max: 65536, default: null, filter: true, label: 'MTU' },
    descriptionField,
    { name: 'mode', column: 'mode', kind: 'choice', choices: INTERFACE_MODE, nullable: true, default: null, filter: true, label: '802.1Q Mode' },
    ref('untagged_vlan', 'vlan', { label: 'Untagged VLAN' }),
    { name: 'tagged_vlans', column: '', kind: 'm2m', fk: 'vlan', default: undefined, through: { table: 'virtualization_vminterface_tagged_vlans', column: 'vminterface_id', target: 'vlan_id' }, label: 'Tagged VLANs' },
    ref('vrf', 'vrf', { label: 'VRF' }),
  ],
  // MAC addresses are NetBox 4.2's own objects; not modelled, so an interface has none.
  unmodelled: { mac_address: null, primary_mac_address: null, mac_addresses: [], qinq_svlan: null, vlan_translation_policy: null, l2vpn_termination: null },
  uniqueTogether: [['virtual_machine', 'name']],
  ordering: ['virtual_machine', 'name'],
  search: ['name', 'description'],
  brief: ['virtual_machine', 'name', 'description'],
  taggable: true,
  display: (r) => r.name,
  check: checkVMInterface,
  extraFilters: [
    ...refFilters('virtual_machine', 'virtualmachine', 'name'),
    ...refFilters('cluster', 'cluster', 'name', 'virtual_machine_id').map((f) => ({ ...f, through: [{ table: 'virtualization_virtualmachine', column: 'cluster_id' }] })),
    { name: 'parent_id', kind: 'fk_id', column: 'parent_id', model: 'vminterface' },
    { name: 'bridge_id', kind: 'fk_id', column: 'bridge_id', model: 'vminterface' },
    ...refFilters('vrf', 'vrf', 'rd'),
    { name: 'vlan_id', kind: 'custom' },
    { name: 'vlan', kind: 'custom' },
  ],
  counts: {
    count_ipaddresses: { model: 'ipaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' },
    count_fhrp_groups: null,
  },
  cascade: [{ model: 'ipaddress', column: 'assigned_object_id', typeColumn: 'assigned_object_type' }],
  setNull: [
    { model: 'vminterface', column: 'parent_id' },
    { model: 'vminterface', column: 'bridge_id' },
  ],
};

export const virtualDisk: ModelDef = {
  key: 'virtualdisk',
  app: 'virtualization',
  path: 'virtual-disks',
  table: 'virtualization_virtualdisk',
  objectType: 'virtualization.virtualdisk',
  verboseName: 'virtual disk',
  title: 'VirtualDisk',
  naturalName: true,
  fields: [
    vmRef,
    nameField(64),
    descriptionField,
    { name: 'size', column: 'size', kind: 'integer', required: true, min: 0, max: 2147483647, filter: true, label: 'Size (MB)' },
  ],
  uniqueTogether: [['virtual_machine', 'name']],
  ordering: ['virtual_machine', 'name'],
  search: ['name', 'description'],
  brief: ['virtual_machine', 'name', 'description', 'size'],
  taggable: true,
  display: (r) => r.name,
  extraFilters: refFilters('virtual_machine', 'virtualmachine', 'name'),
};
