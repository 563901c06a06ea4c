import { fail } from './field-problem.ts';
import { commentsField, descriptionField, nameField } from './tenancy.ts';
import type { ModelDef } from './types.ts';

/**
 * NetBox 4.3's module type profiles (`/api/dcim/module-type-profiles/`): a named JSON schema for the attributes of
 * the module types that use it. The schema passes NetBox's own sanity check (an object that defines properties);
 * module types' `attributes` are not modelled (only null is accepted).
 */
function parseSchema(v: unknown): unknown {
  if (!v || typeof v !== 'object' || Array.isArray(v)) fail('Invalid JSON schema definition');
  if (JSON.stringify(v).length > 100_000) fail('Ensure this value has at most 100000 characters.');
  const props = (v as Record<string, unknown>).properties;
  if (!props || (typeof props === 'object' && Object.keys(props).length === 0)) fail('JSON schema must define properties');
  if (typeof props !== 'object' || Array.isArray(props)) fail('Invalid JSON schema definition: properties must be an object');
  return v;
}

export const moduleTypeProfile: ModelDef = {
  key: 'moduletypeprofile',
  app: 'dcim',
  path: 'module-type-profiles',
  table: 'dcim_moduletypeprofile',
  objectType: 'dcim.moduletypeprofile',
  docsTag: 'dcim-modules',
  verboseName: 'module type profile',
  title: 'ModuleTypeProfile',
  fields: [nameField(100, { unique: true }), descriptionField, { name: 'schema', column: 'schema', kind: 'json', nullable: true, default: null, parse: parseSchema }, commentsField],
  ordering: ['name'],
  search: ['name', 'description', 'comments'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  protectedBy: [{ model: 'moduletype', column: 'profile_id' }],
};

export const MODULE_TYPE_PROFILE_MODELS = [moduleTypeProfile];
