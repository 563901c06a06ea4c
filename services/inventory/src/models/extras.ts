import type { ModelDef } from './types.ts';
import { parseTagObjectTypes } from './tag-rules.ts';

export const tag: ModelDef = {
  key: 'tag',
  app: 'extras',
  path: 'tags',
  table: 'extras_tag',
  objectType: 'extras.tag',
  verboseName: 'tag',
  title: 'Tag',
  fields: [
    { name: 'name', column: 'name', kind: 'char', required: true, maxLength: 100, unique: true, filter: true },
    { name: 'slug', column: 'slug', kind: 'slug', required: true, maxLength: 100, unique: true, filter: true },
    { name: 'color', column: 'color', kind: 'color', default: '9e9e9e', filter: true },
    { name: 'description', column: 'description', kind: 'char', blank: true, maxLength: 200, default: '', filter: true },
    // NetBox 4.x: tags are ordered by weight, and may be restricted to some object types (empty: any; see tag-rules.ts).
    { name: 'weight', column: 'weight', kind: 'integer', default: 1000, min: 0, max: 32767, filter: true },
    { name: 'object_types', column: 'object_types', kind: 'json', default: [], parse: parseTagObjectTypes },
  ],
  ordering: ['weight', 'name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'color', 'description'],
  // NetBox's Tag has neither tags nor custom fields of its own.
  taggable: false,
  display: (r) => r.name,
};
