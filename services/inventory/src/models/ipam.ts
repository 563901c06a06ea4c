import { IPADDRESS_STATUS } from './choices.ts';
import type { ModelDef } from './types.ts';

export const ipAddress: ModelDef = {
  key: 'ipaddress',
  app: 'ipam',
  path: 'ip-addresses',
  table: 'ipam_ipaddress',
  objectType: 'ipam.ipaddress',
  verboseName: 'IP address',
  title: 'IPAddress',
  fields: [
    { name: 'address', column: 'address', kind: 'ipaddress', required: true, filter: true },
    { name: 'status', column: 'status', kind: 'choice', choices: IPADDRESS_STATUS, default: 'active', filter: true },
    {
      name: 'assigned_object_type',
      column: 'assigned_object_type',
      kind: 'objecttype',
      nullable: true,
      default: null,
      choices: [{ value: 'dcim.interface', label: 'dcim.interface' }],
    },
    { name: 'assigned_object_id', column: 'assigned_object_id', kind: 'integer', nullable: true, min: 0, max: 2 ** 53 - 1, default: null },
    { name: 'dns_name', column: 'dns_name', kind: 'dnsname', blank: true, maxLength: 255, default: '', filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
  ],
  ordering: ['address'],
  search: ['address', 'dns_name', 'description'],
  brief: ['family', 'address', 'description'],
  taggable: true,
  display: (r) => r.address,
  extraRefs: { assigned_object: { model: 'interface', column: 'assigned_object_id', typeColumn: 'assigned_object_type', type: 'dcim.interface' } },
  clean(values, existing, errors) {
    const type = 'assigned_object_type' in values ? values.assigned_object_type : existing?.assigned_object_type ?? null;
    const id = 'assigned_object_id' in values ? values.assigned_object_id : existing?.assigned_object_id ?? null;
    if (type !== null && id === null) (errors.assigned_object_id ??= []).push('This field is required when assigned_object_type is set.');
    if (type === null && id !== null) (errors.assigned_object_type ??= []).push('This field is required when assigned_object_id is set.');
  },
  represent(row, out, refs) {
    const family = Number(row.family);
    return {
      id: out.id,
      url: out.url,
      display_url: out.display_url,
      display: out.display,
      family: { value: family, label: `IPv${family}` },
      address: out.address,
      status: out.status,
      assigned_object_type: out.assigned_object_type,
      assigned_object_id: out.assigned_object_id,
      assigned_object: refs.assigned_object ?? null,
      ...Object.fromEntries(Object.entries(out).filter(([k]) => !['id', 'url', 'display_url', 'display', 'address', 'status', 'assigned_object_type', 'assigned_object_id'].includes(k))),
    };
  },
  extraFilters: [
    { name: 'family', kind: 'int', column: 'family' },
    { name: 'interface_id', kind: 'custom' },
    { name: 'device_id', kind: 'custom' },
    { name: 'assigned_to_interface', kind: 'custom' },
  ],
};
