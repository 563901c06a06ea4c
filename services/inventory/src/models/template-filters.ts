import { fail } from './field-problem.ts';
import { hasChildrenFilter } from './count-filters.ts';
import type { ExtraFilter, FieldDef } from './types.ts';

/**
 * What device types and module types show and filter about their component templates (a leaf: dcim.ts and
 * more-models.ts use it without importing the template models).
 */

/** Device types' `*_template_count` (represented and filtered) and the template model each counts. */
export const DEVICE_TYPE_TEMPLATE_COUNTS: ReadonlyArray<readonly [name: string, model: string]> = [
  ['console_port_template_count', 'consoleporttemplate'],
  ['console_server_port_template_count', 'consoleserverporttemplate'],
  ['power_port_template_count', 'powerporttemplate'],
  ['power_outlet_template_count', 'poweroutlettemplate'],
  ['interface_template_count', 'interfacetemplate'],
  ['front_port_template_count', 'frontporttemplate'],
  ['rear_port_template_count', 'rearporttemplate'],
  ['device_bay_template_count', 'devicebaytemplate'],
  ['module_bay_template_count', 'modulebaytemplate'],
  ['inventory_item_template_count', 'inventoryitemtemplate'],
];

/**
 * DeviceTypeFilterSet / ModuleTypeFilterSet's BooleanFilters `console_ports=true` … (has templates of that kind);
 * `pass_through_ports`: front or rear port templates. Device types also have `module_bays` and `inventory_items`
 * (`device_bays` is a filter of its own, chassis-bay-filters.ts).
 */
export function templatePresenceFilters(column: 'device_type_id' | 'module_type_id', deviceType: boolean): ExtraFilter[] {
  const has = (name: string, ...keys: string[]) => hasChildrenFilter(name, keys.map((k) => `dcim_${k}template`), column);
  return [
    has('console_ports', 'consoleport'),
    has('console_server_ports', 'consoleserverport'),
    has('power_ports', 'powerport'),
    has('power_outlets', 'poweroutlet'),
    has('interfaces', 'interface'),
    has('pass_through_ports', 'frontport', 'rearport'),
    ...(deviceType ? [has('module_bays', 'modulebay'), has('inventory_items', 'inventoryitem')] : []),
  ];
}

/**
 * NetBox's ImageField (a device type's front/rear image): the stored path, null without an image. A JSON body cannot
 * carry a file, so only null is written through the API, as DRF answers a string.
 */
export function imageField(name: string): FieldDef {
  return {
    name,
    column: name,
    kind: 'char',
    nullable: true,
    default: null,
    maxLength: 100,
    parse: () => fail('The submitted data was not a file. Check the encoding type on the form.'),
  };
}
