import type { ModelDef } from './types.ts';

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
  ],
  ordering: ['name'],
  search: ['name', 'slug', 'description'],
  brief: ['name', 'slug', 'color', 'description'],
  // NetBox's Tag has neither tags nor custom fields of its own.
  taggable: false,
  display: (r) => r.name,
};
