import { commentsField, descriptionField, nameField, refFilters } from './tenancy.ts';
import type { FieldDef, ModelDef } from './types.ts';

/**
 * NetBox 4.2+'s VLAN translation (`/api/ipam/vlan-translation-policies/`, `/vlan-translation-rules/`): a policy's rules
 * map a local VID to a remote one (each unique within the policy); interfaces and VM interfaces name a policy.
 */

const vid = (name: string, label: string): FieldDef => ({ name, column: name, kind: 'integer', required: true, min: 1, max: 4094, filter: true, label });

export const vlanTranslationPolicy: ModelDef = {
  key: 'vlantranslationpolicy',
  app: 'ipam',
  path: 'vlan-translation-policies',
  table: 'ipam_vlantranslationpolicy',
  objectType: 'ipam.vlantranslationpolicy',
  verboseName: 'VLAN translation policy',
  title: 'VLANTranslationPolicy',
  fields: [nameField(100, { unique: true }), descriptionField, commentsField],
  ordering: ['name'],
  search: ['name', 'description'],
  brief: ['name', 'description'],
  taggable: true,
  display: (r) => r.name,
  cascade: [{ model: 'vlantranslationrule', column: 'policy_id' }],
  protectedBy: [
    { model: 'interface', column: 'vlan_translation_policy_id' },
    { model: 'vminterface', column: 'vlan_translation_policy_id' },
  ],
  // `rules`: the policy's rules as NetBox's VLANTranslationRuleSerializer writes them (the policy as its id).
  async enrich(ctx, rows, out) {
    const ids = rows.map((r) => Number(r.id));
    const rules = ids.length ? await ctx.db.selectFrom('ipam_vlantranslationrule').selectAll().where('policy_id', 'in', ids).orderBy('local_vid').orderBy('id').execute() : [];
    rows.forEach((r, i) => {
      out[i]!.rules = rules
        .filter((x) => Number(x.policy_id) === Number(r.id))
        .map((x) => ({ id: Number(x.id), url: `${ctx.base}/api/ipam/vlan-translation-rules/${x.id}/`, display: `${x.local_vid} -> ${x.remote_vid} (${r.name})`, policy: Number(r.id), local_vid: Number(x.local_vid), remote_vid: Number(x.remote_vid), description: x.description }));
    });
  },
};

export const vlanTranslationRule: ModelDef = {
  key: 'vlantranslationrule',
  app: 'ipam',
  path: 'vlan-translation-rules',
  table: 'ipam_vlantranslationrule',
  objectType: 'ipam.vlantranslationrule',
  verboseName: 'VLAN translation rule',
  title: 'VLANTranslationRule',
  fields: [{ name: 'policy', column: 'policy_id', kind: 'fk', fk: 'vlantranslationpolicy', required: true }, vid('local_vid', 'Local VLAN ID'), vid('remote_vid', 'Remote VLAN ID'), descriptionField],
  uniqueTogether: [
    ['policy', 'local_vid'],
    ['policy', 'remote_vid'],
  ],
  ordering: ['policy', 'local_vid'],
  search: ['description'],
  brief: ['policy', 'local_vid', 'remote_vid', 'description'],
  taggable: true,
  displayNeeds: ['policy'],
  display: (r, refs) => `${r.local_vid} -> ${r.remote_vid} (${(refs.policy as { name?: string } | null)?.name ?? r.policy_id})`,
  // NetBox's serializer gives the policy as its id, not nested.
  represent: (row, out) => ({ ...out, policy: Number(row.policy_id) }),
  extraFilters: refFilters('policy', 'vlantranslationpolicy', 'name'),
};
