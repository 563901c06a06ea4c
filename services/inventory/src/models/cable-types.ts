/**
 * What a cable may connect (NetBox's cable termination models and their compatibility) and which objects end a path:
 * a leaf that cabling.ts (the models) and cable-paths.ts (tracing) both read.
 */

/** Object types a cable end may attach to (NetBox's CABLE_TERMINATION_MODELS this service models). */
export const CABLE_TERMINATION_TYPES = [
  'circuits.circuittermination',
  'dcim.consoleport',
  'dcim.consoleserverport',
  'dcim.frontport',
  'dcim.interface',
  'dcim.powerfeed',
  'dcim.poweroutlet',
  'dcim.powerport',
  'dcim.rearport',
] as const;

/** NetBox's COMPATIBLE_TERMINATION_TYPES: what may sit at the other end of a cable. */
export const COMPATIBLE: Record<string, string[]> = {
  'circuits.circuittermination': ['dcim.interface', 'dcim.frontport', 'dcim.rearport', 'circuits.circuittermination'],
  'dcim.consoleport': ['dcim.consoleserverport', 'dcim.frontport', 'dcim.rearport'],
  'dcim.consoleserverport': ['dcim.consoleport', 'dcim.frontport', 'dcim.rearport'],
  'dcim.powerport': ['dcim.poweroutlet', 'dcim.powerfeed'],
  'dcim.powerfeed': ['dcim.powerport'],
  'dcim.poweroutlet': ['dcim.powerport'],
  'dcim.interface': ['dcim.interface', 'circuits.circuittermination', 'dcim.frontport', 'dcim.rearport'],
  'dcim.frontport': ['dcim.consoleport', 'dcim.consoleserverport', 'dcim.interface', 'dcim.frontport', 'dcim.rearport', 'circuits.circuittermination'],
  'dcim.rearport': ['dcim.consoleport', 'dcim.consoleserverport', 'dcim.interface', 'dcim.frontport', 'dcim.rearport', 'circuits.circuittermination'],
};

/** Path endpoints: a trace from one ends at another (pass-through ports and circuits are crossed). */
export const ENDPOINT_TYPES = new Set(['dcim.interface', 'dcim.consoleport', 'dcim.consoleserverport', 'dcim.powerport', 'dcim.poweroutlet', 'dcim.powerfeed']);

/** One end of a cable as stored: `{object_type, object_id}`. */
export interface Termination {
  object_type: string;
  object_id: number;
}
