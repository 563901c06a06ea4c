import { RACK_DIMENSION_UNIT, RACK_FORM_FACTOR, RACK_WIDTH } from './choices.ts';
import { checkWeightUnit, weightFields } from './dcim.ts';
import { commentsField, descriptionField, refFilters, slugField } from './tenancy.ts';
import type { FieldDef, ModelDef } from './types.ts';
import { moduleTypeProfile } from './module-type-profiles.ts';

/**
 * NetBox 4.3's rack types (`/api/dcim/rack-types/`): a manufacturer's rack model whose physical attributes a rack
 * assigned to it takes over (Rack.copy_racktype_attrs() on every save of the rack).
 */

const int = (name: string, extra: Partial<FieldDef> = {}): FieldDef => ({ name, column: name, kind: 'integer', nullable: true, default: null, min: 0, max: 32767, filter: true, ...extra });

export const rackType: ModelDef = {
  key: 'racktype',
  app: 'dcim',
  path: 'rack-types',
  table: 'dcim_racktype',
  objectType: 'dcim.racktype',
  verboseName: 'rack type',
  title: 'RackType',
  fields: [
    { name: 'manufacturer', column: 'manufacturer_id', kind: 'fk', fk: 'manufacturer', required: true },
    { name: 'model', column: 'model', kind: 'char', required: true, maxLength: 100, filter: true },
    slugField({ unique: true }),
    descriptionField,
    { name: 'form_factor', column: 'form_factor', kind: 'choice', choices: RACK_FORM_FACTOR, required: true, filter: true },
    { name: 'width', column: 'width', kind: 'choice', choices: RACK_WIDTH, default: '19', filter: true },
    { name: 'u_height', column: 'u_height', kind: 'integer', default: 42, min: 1, max: 100, filter: true },
    { name: 'starting_unit', column: 'starting_unit', kind: 'integer', default: 1, min: 1, max: 32767, filter: true },
    { name: 'desc_units', column: 'desc_units', kind: 'boolean', default: false, filter: true },
    int('outer_width'),
    int('outer_height'),
    int('outer_depth'),
    { name: 'outer_unit', column: 'outer_unit', kind: 'choice', choices: RACK_DIMENSION_UNIT, nullable: true, blank: true, default: null, filter: true },
    weightFields[0]!,
    int('max_weight', { max: 2147483647 }),
    weightFields[1]!,
    int('mounting_depth'),
    // The serializer lists `description` twice; it is shown once, in its first place.
    commentsField,
  ],
  uniqueTogether: [['manufacturer', 'model']],
  ordering: ['manufacturer', 'model'],
  search: ['model', 'description', 'comments'],
  brief: ['manufacturer', 'model', 'slug', 'description'],
  taggable: true,
  display: (r) => r.model,
  extraFilters: refFilters('manufacturer', 'manufacturer'),
  protectedBy: [{ model: 'rack', column: 'rack_type_id' }],
  // RackType.clean(): outer dimensions need a unit, a maximum weight needs a unit (and WeightMixin's weight rule first).
  clean(values, existing, errors) {
    checkWeightUnit(values, existing, errors);
    if (errors.non_field_errors?.length) return;
    const at = (c: string) => (c in values ? values[c] : existing?.[c]);
    if ((at('outer_width') || at('outer_height') || at('outer_depth')) && !at('outer_unit')) return void (errors.non_field_errors ??= []).push('Must specify a unit when setting an outer dimension');
    checkWeightUnit(values, existing, errors, true);
  },
  // RackType.save(): no outer dimension, no unit.
  derived: (merged) => (merged.outer_width || merged.outer_height || merged.outer_depth ? {} : { outer_unit: null }),
};

export const RACK_TYPE_MODELS = [rackType, moduleTypeProfile];
