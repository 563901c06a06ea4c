import { commentsField, descriptionField, refFilters } from './tenancy.ts';
import type { ExtraFilter, ModelDef } from './types.ts';

/**
 * NetBox's provider accounts (`/api/circuits/provider-accounts/`): a provider's account, unique per provider, with an
 * optional name (unique per provider when given); circuits and virtual circuits may name one (networking.ts adds the field).
 */
export const providerAccount: ModelDef = {
  key: 'provideraccount',
  app: 'circuits',
  path: 'provider-accounts',
  table: 'circuits_provideraccount',
  objectType: 'circuits.provideraccount',
  verboseName: 'provider account',
  title: 'ProviderAccount',
  fields: [
    { name: 'provider', column: 'provider_id', kind: 'fk', fk: 'provider', required: true },
    { name: 'name', column: 'name', kind: 'char', blank: true, maxLength: 100, default: '', filter: true },
    { name: 'account', column: 'account', kind: 'char', required: true, maxLength: 100, filter: true, label: 'Account ID' },
    descriptionField,
    commentsField,
  ],
  uniqueTogether: [['provider', 'account']],
  ordering: ['provider', 'account'],
  search: ['account', 'name', 'description', 'comments'],
  brief: ['name', 'account', 'description'],
  taggable: true,
  // ProviderAccount.__str__: the account, with its name in brackets when it has one.
  display: (r) => (r.name ? `${r.account} (${r.name})` : r.account),
  extraFilters: refFilters('provider', 'provider'),
  protectedBy: [
    { model: 'circuit', column: 'provider_account_id' },
    { model: 'virtualcircuit', column: 'provider_account_id' },
  ],
  // The conditional constraint circuits_provideraccount_unique_provider_name: a name, when given, once per provider.
  async check(ctx, values, existing, errors) {
    const name = 'name' in values ? values.name : existing?.name;
    const provider = 'provider_id' in values ? values.provider_id : existing?.provider_id;
    if (!name || provider === undefined || provider === null) return;
    let q = ctx.db.selectFrom('circuits_provideraccount').select('id').where('provider_id', '=', provider).where('name', '=', name);
    if (existing) q = q.where('id', '<>', existing.id);
    if (await q.executeTakeFirst()) (errors.non_field_errors ??= []).push('The fields provider, name must make a unique set.');
  },
};

/** `provider_account_id` / `provider_account` (by account) of circuits, reached through `through` when not on the row. */
export function providerAccountFilters(column = 'provider_account_id', through?: ExtraFilter['through']): ExtraFilter[] {
  return refFilters('provider_account', 'provideraccount', 'account', column).map((f) => ({ ...f, ...(through ? { through } : {}) }));
}
