import { fail } from './field-problem.ts';
import { commentsField, descriptionField, nameField } from './tenancy.ts';
import type { Choice, ModelDef } from './types.ts';

const PROTOCOLS: Choice[] = [
  { value: 'tcp', label: 'TCP' },
  { value: 'udp', label: 'UDP' },
  { value: 'sctp', label: 'SCTP' },
];

const MAX_PORTS = 1000;

/** NetBox's `ports`: an ArrayField of port numbers 1–65535 (kept in the order given, as PostgreSQL's array). */
function parsePorts(v: unknown): number[] {
  if (!Array.isArray(v)) fail(`Expected a list of items but got type "${v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'object' ? 'dict' : typeof v}".`);
  const list = v as unknown[];
  if (list.length === 0) fail('This list may not be empty.');
  if (list.length > MAX_PORTS) fail(`Ensure this field has no more than ${MAX_PORTS} elements.`);
  return list.map((p, i) => {
    const n = typeof p === 'number' ? p : typeof p === 'string' && /^\s*\d{1,6}\s*$/.test(p) ? Number(p) : NaN;
    if (!Number.isInteger(n)) fail(`Item ${i + 1} in the array did not validate: A valid integer is required.`);
    if (n < 1) fail(`Item ${i + 1} in the array did not validate: Ensure this value is greater than or equal to 1.`);
    if (n > 65535) fail(`Item ${i + 1} in the array did not validate: Ensure this value is less than or equal to 65535.`);
    return n;
  });
}

/** An application service (NetBox 4.3): name, protocol and ports on a device or a virtual machine, with its IP addresses. */
export const service: ModelDef = {
  key: 'service',
  app: 'ipam',
  path: 'services',
  table: 'ipam_service',
  objectType: 'ipam.service',
  verboseName: 'application service',
  title: 'Service',
  fields: [
    {
      name: 'parent_object_type',
      column: 'parent_object_type',
      kind: 'objecttype',
      required: true,
      choices: [
        { value: 'dcim.device', label: 'dcim.device' },
        { value: 'virtualization.virtualmachine', label: 'virtualization.virtualmachine' },
      ],
    },
    { name: 'parent_object_id', column: 'parent_object_id', kind: 'integer', required: true, min: 0, max: 2 ** 53 - 1 },
    nameField(100),
    { name: 'protocol', column: 'protocol', kind: 'choice', choices: PROTOCOLS, required: true, filter: true },
    { name: 'ports', column: 'ports', kind: 'json', required: true, parse: parsePorts },
    { name: 'ipaddresses', column: '', kind: 'm2m', fk: 'ipaddress', default: undefined, through: { table: 'ipam_service_ipaddresses', column: 'service_id', target: 'ipaddress_id' }, label: 'IP addresses' },
    descriptionField,
    commentsField,
  ],
  extraRefs: {
    parent_device: { model: 'device', column: 'parent_object_id', typeColumn: 'parent_object_type', type: 'dcim.device' },
    parent_vm: { model: 'virtualmachine', column: 'parent_object_id', typeColumn: 'parent_object_type', type: 'virtualization.virtualmachine' },
  },
  represent(_row, out, refs) {
    const { id, url, display_url, display, parent_object_type, parent_object_id, ...rest } = out;
    return { id, url, display_url, display, parent_object_type, parent_object_id, parent: refs.parent_device ?? refs.parent_vm ?? null, ...rest };
  },
  ordering: ['protocol', 'ports', 'id'],
  search: ['name', 'description', 'comments'],
  brief: ['name', 'protocol', 'ports', 'description'],
  taggable: true,
  display: (r) => `${r.name} (${String(r.protocol ?? '').toUpperCase()}/${(Array.isArray(r.ports) ? r.ports : []).join(', ')})`,
  extraFilters: [
    { name: 'parent_object_type', kind: 'custom' },
    { name: 'parent_object_id', kind: 'int', column: 'parent_object_id' },
    { name: 'device_id', kind: 'custom' },
    { name: 'device', kind: 'custom' },
    { name: 'virtual_machine_id', kind: 'custom' },
    { name: 'virtual_machine', kind: 'custom' },
    { name: 'ip_address_id', kind: 'custom' },
    { name: 'ip_address', kind: 'custom' },
    { name: 'port', kind: 'custom' },
  ],
};
