import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startApi, type Api } from './helpers.ts';

/** Custom field choice sets, select/multiselect custom fields and the `unique` flag (issue 24), over HTTP. */
forEachStorage('inventory API: custom field choice sets and unique custom fields', (storage) => {
  let api: Api;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('choice sets: shape, validation, filters; select and multiselect fields check values against them', async () => {
    const h = api.http;
    const set = ok(await h.post('/api/extras/custom-field-choice-sets/', { name: 'Tiers', extra_choices: [['gold', 'Gold'], ['bronze', 'Bronze'], ['silver', 'Silver']], order_alphabetically: true }));
    assert.deepEqual(Object.keys(set), ['id', 'url', 'display_url', 'display', 'name', 'description', 'base_choices', 'extra_choices', 'order_alphabetically', 'choices_count', 'created', 'last_updated']);
    assert.equal(set.choices_count, 3);
    assert.equal(set.base_choices, null);
    // Ordered alphabetically: stored sorted by value, as NetBox's save().
    assert.deepEqual(set.extra_choices, [['bronze', 'Bronze'], ['gold', 'Gold'], ['silver', 'Silver']]);
    const brief = ok(await h.get(`/api/extras/custom-field-choice-sets/${set.id}/?brief=true`), 200);
    assert.equal(brief.choices_count, 3);
    for (const [body, errors] of [
      [{ name: 'Empty' }, { non_field_errors: ['Must define base or extra choices.'] }],
      [{ name: 'Odd', extra_choices: [['a']] }, { extra_choices: ['Ensure this field has at least 2 elements.'] }],
      [{ name: 'Flat', extra_choices: ['a', 'b'] }, { extra_choices: ['Expected a list of items but got type "str".'] }],
      [{ name: 'Dup', extra_choices: [['a', 'A'], ['a', 'B']] }, { extra_choices: ['Duplicate value "a" found in extra choices.'] }],
      [{ name: 'Base', base_choices: 'IATA3', extra_choices: [['a', 'A']] }, { base_choices: ['"IATA3" is not a valid choice.'] }],
      [{ name: 'Loc', base_choices: 'UN_LOCODE' }, { base_choices: ['This service does not ship the UN_LOCODE list; choose IATA or ISO_3166, or give extra choices.'] }],
      [{ name: 'Tiers', extra_choices: [['a', 'A']] }, { name: ['custom field choice set with this name already exists.'] }],
    ] as const) {
      const r = await h.post('/api/extras/custom-field-choice-sets/', body);
      assert.equal(r.status, 400);
      assert.deepEqual(r.body, errors);
    }
    ok(await h.post('/api/extras/custom-field-choice-sets/', { name: 'Colors', extra_choices: [['red', 'Red']] }));
    const names = async (q: string) => ok(await h.get(`/api/extras/custom-field-choice-sets/?${q}`), 200).results.map((s: any) => s.name);
    assert.deepEqual(await names('choice=silver'), ['Tiers']);
    assert.deepEqual(await names('choice=red&choice=gold'), ['Colors', 'Tiers']);
    assert.deepEqual(await names('q=col'), ['Colors']);
    assert.deepEqual(await names('base_choices=IATA'), []);

    // Selection fields need a set; other types may not have one.
    assert.deepEqual((await h.post('/api/extras/custom-fields/', { name: 'tier', type: 'select', object_types: ['dcim.site'] })).body, { choice_set: ['Selection fields must specify a set of choices.'] });
    assert.deepEqual((await h.post('/api/extras/custom-fields/', { name: 'tier', type: 'text', choice_set: set.id, object_types: ['dcim.site'] })).body, { choice_set: ['Choices may be set only on selection fields.'] });
    const tier = ok(await h.post('/api/extras/custom-fields/', { name: 'tier', type: 'select', choice_set: set.id, object_types: ['dcim.site'] }));
    assert.equal(tier.choice_set.id, set.id);
    assert.deepEqual(tier.type, { value: 'select', label: 'Selection' });
    ok(await h.post('/api/extras/custom-fields/', { name: 'tiers', type: 'multiselect', choice_set: set.id, object_types: ['dcim.site'] }));
    assert.deepEqual(ok(await h.get(`/api/extras/custom-fields/?choice_set_id=${set.id}&ordering=name`), 200).results.map((f: any) => f.name), ['tier', 'tiers']);
    assert.deepEqual(ok(await h.get('/api/extras/custom-fields/?choice_set=Tiers&ordering=name'), 200).results.map((f: any) => f.name), ['tier', 'tiers']);
    assert.deepEqual((await h.get('/api/extras/custom-fields/?choice_set=Nope')).body, { choice_set: ['Select a valid choice. Nope is not one of the available choices.'] });
    const site = ok(await h.post('/api/dcim/sites/', { name: 'S1', slug: 's1', custom_fields: { tier: 'gold', tiers: ['silver', 'bronze'] } }));
    assert.deepEqual(site.custom_fields, { tier: 'gold', tiers: ['silver', 'bronze'] });
    assert.deepEqual((await h.post('/api/dcim/sites/', { name: 'S2', slug: 's2', custom_fields: { tier: 'platinum' } })).body, {
      custom_fields: ["Invalid value for custom field 'tier': Invalid choice (platinum) for choice set Tiers."],
    });
    assert.deepEqual((await h.post('/api/dcim/sites/', { name: 'S2', slug: 's2', custom_fields: { tiers: ['gold', 'lead'] } })).body, {
      custom_fields: ["Invalid value for custom field 'tiers': Invalid choice(s) (['gold', 'lead']) for choice set Tiers."],
    });
    assert.deepEqual(ok(await h.get('/api/dcim/sites/?cf_tier=gold'), 200).results.map((s: any) => s.name), ['S1']);
    ok(await h.post('/api/dcim/sites/', { name: 'S3', slug: 's3', custom_fields: { tiers: ['gold'] } }));
    assert.deepEqual(ok(await h.get('/api/dcim/sites/?cf_tiers=silver'), 200).results.map((s: any) => s.name), ['S1']);
    assert.deepEqual(ok(await h.get('/api/dcim/sites/?cf_tiers=gold&ordering=name'), 200).results.map((s: any) => s.name), ['S3']);
    assert.deepEqual(ok(await h.get('/api/dcim/sites/?cf_tiers__n=gold&ordering=name'), 200).results.map((s: any) => s.name), ['S1']);
    assert.deepEqual(ok(await h.get('/api/dcim/sites/?cf_tiers=null&ordering=name'), 200).results.map((s: any) => s.name), []);
    // A set in use is protected.
    assert.equal((await h.delete(`/api/extras/custom-field-choice-sets/${set.id}/`)).status, 409);
    // Changes are change-logged like any object's.
    const log = ok(await h.get(`/api/core/object-changes/?changed_object_type=extras.customfieldchoiceset&changed_object_id=${set.id}`), 200);
    assert.equal(log.count, 1);
    // NetBox's CustomFieldChoiceSet.clean(): a choice still held by an object (select or multiselect) is not removed.
    const url = `/api/extras/custom-field-choice-sets/${set.id}/`;
    assert.deepEqual(await h.patch(url, { extra_choices: [['gold', 'Gold'], ['silver', 'Silver']] }).then((r) => [r.status, r.body]), [400, { non_field_errors: ['Cannot remove choice bronze as there are DCIM | site objects which reference it.'] }]);
    assert.deepEqual((await h.patch(url, { extra_choices: [['bronze', 'Bronze'], ['silver', 'Silver']] })).body, { non_field_errors: ['Cannot remove choice gold as there are DCIM | site objects which reference it.'] });
    assert.deepEqual(ok(await h.patch(url, { extra_choices: [['bronze', 'Bronze'], ['gold', 'Gold'], ['silver', 'Silver'], ['tin', 'Tin']] }), 200).choices_count, 4);
    assert.deepEqual(ok(await h.patch(url, { extra_choices: [['bronze', 'Bronze'], ['gold', 'Gold!'], ['silver', 'Silver']] }), 200).extra_choices, [['bronze', 'Bronze'], ['gold', 'Gold!'], ['silver', 'Silver']], 'an unused choice goes; a label may change');
    ok(await h.patch(`/api/dcim/sites/${site.id}/`, { custom_fields: { tiers: ['silver'] } }), 200);
    assert.deepEqual(ok(await h.put(url, { name: 'Tiers', extra_choices: [['gold', 'Gold'], ['silver', 'Silver']], order_alphabetically: true }), 200).choices_count, 2, 'bronze is free once no site holds it');
  });

  it('unique custom fields refuse a second object with the value, sequentially and when requests race', async () => {
    const h = api.http;
    ok(await h.post('/api/extras/custom-fields/', { name: 'serial_ref', type: 'text', unique: true, object_types: ['dcim.manufacturer'] }));
    const a = ok(await h.post('/api/dcim/manufacturers/', { name: 'M1', slug: 'm1', custom_fields: { serial_ref: 'X1' } }));
    assert.deepEqual((await h.post('/api/dcim/manufacturers/', { name: 'M2', slug: 'm2', custom_fields: { serial_ref: 'X1' } })).body, {
      non_field_errors: ["Custom field 'serial_ref' must have a unique value."],
    });
    // Empty values never clash; an object keeps its own value on update; a freed value can be taken.
    ok(await h.post('/api/dcim/manufacturers/', { name: 'M3', slug: 'm3' }));
    ok(await h.post('/api/dcim/manufacturers/', { name: 'M4', slug: 'm4' }));
    ok(await h.patch(`/api/dcim/manufacturers/${a.id}/`, { custom_fields: { serial_ref: 'X1' }, description: 'same' }), 200);
    ok(await h.patch(`/api/dcim/manufacturers/${a.id}/`, { custom_fields: { serial_ref: 'X2' } }), 200);
    const b = ok(await h.post('/api/dcim/manufacturers/', { name: 'M5', slug: 'm5', custom_fields: { serial_ref: 'X1' } }));
    ok(await h.delete(`/api/dcim/manufacturers/${b.id}/`), 204);
    ok(await h.post('/api/dcim/manufacturers/', { name: 'M6', slug: 'm6', custom_fields: { serial_ref: 'X1' } }));
    // Racing writers: exactly one of each pair wins, the others get NetBox's message (never a 5xx).
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        [0, 1, 2, 3].map((i) => h.post('/api/dcim/manufacturers/', { name: `R${round}-${i}`, slug: `r${round}-${i}`, custom_fields: { serial_ref: `race-${round}` } })),
      );
      assert.deepEqual(results.map((r) => r.status).sort(), [201, 400, 400, 400], JSON.stringify(results.map((r) => r.body)));
      for (const r of results.filter((x) => x.status === 400)) assert.deepEqual(r.body, { non_field_errors: ["Custom field 'serial_ref' must have a unique value."] });
    }
    // Marking an existing field unique indexes the values already stored.
    ok(await h.post('/api/extras/custom-fields/', { name: 'asset', type: 'text', object_types: ['dcim.manufacturer'] }));
    const m7 = ok(await h.post('/api/dcim/manufacturers/', { name: 'M7', slug: 'm7', custom_fields: { asset: 'A-1' } }));
    const field = ok(await h.get('/api/extras/custom-fields/?name=asset'), 200).results[0];
    ok(await h.patch(`/api/extras/custom-fields/${field.id}/`, { unique: true }), 200);
    assert.deepEqual((await h.post('/api/dcim/manufacturers/', { name: 'M8', slug: 'm8', custom_fields: { asset: 'A-1' } })).body, {
      non_field_errors: ["Custom field 'asset' must have a unique value."],
    });
    assert.equal(m7.custom_fields.asset, 'A-1');
  });

  it("base choices: NetBox's IATA and ISO 3166 lists, before the extra choices; the choices endpoint; custom field values checked against them", async () => {
    const h = api.http;
    const airports = ok(await h.post('/api/extras/custom-field-choice-sets/', { name: 'Airports', base_choices: 'IATA', extra_choices: [['ZZ1', 'Private strip']] }));
    assert.deepEqual(airports.base_choices, { value: 'IATA', label: 'IATA (Airport codes)' });
    assert.equal(airports.choices_count, 9766);
    assert.deepEqual(airports.extra_choices, [['ZZ1', 'Private strip']]);
    const countries = ok(await h.post('/api/extras/custom-field-choice-sets/', { name: 'Countries', base_choices: 'ISO_3166', order_alphabetically: true }));
    assert.equal(countries.choices_count, 249);
    assert.deepEqual(countries.extra_choices, []);
    assert.equal(ok(await h.get(`/api/extras/custom-field-choice-sets/${countries.id}/?brief=1`), 200).choices_count, 249);
    const names = async (q: string) => ok(await h.get(`/api/extras/custom-field-choice-sets/?${q}`), 200).results.map((s: any) => s.name);
    assert.deepEqual(await names('base_choices=IATA'), ['Airports']);
    assert.deepEqual(await names('base_choices=ISO_3166&base_choices=IATA'), ['Airports', 'Countries']);

    // GET …/choices/: {id, display}, paginated, ?q= over value and label.
    const page = ok(await h.get(`/api/extras/custom-field-choice-sets/${airports.id}/choices/?limit=2`), 200);
    assert.equal(page.count, 9766);
    assert.deepEqual(page.results, [{ id: 'AAA', display: 'AAA (Anaa, PF)' }, { id: 'AAB', display: 'AAB (Arrabury Airport, Queensland, AU)' }]);
    assert.match(page.next, /\/choices\/\?limit=2&offset=2$/);
    const de = ok(await h.get(`/api/extras/custom-field-choice-sets/${countries.id}/choices/?q=germ`), 200);
    assert.deepEqual(de.results, [{ id: 'DE', display: 'DE (Germany)' }]);
    const extra = ok(await h.get(`/api/extras/custom-field-choice-sets/${airports.id}/choices/?q=private%20strip`), 200);
    assert.deepEqual(extra.results, [{ id: 'ZZ1', display: 'Private strip' }]);
    assert.equal((await h.get('/api/extras/custom-field-choice-sets/999999/choices/')).status, 404);

    // Values of select fields come from the base list too; a set with a base list needs no extra choices.
    ok(await h.post('/api/extras/custom-fields/', { name: 'airport', type: 'select', choice_set: airports.id, object_types: ['dcim.site'] }));
    ok(await h.post('/api/extras/custom-fields/', { name: 'countries', type: 'multiselect', choice_set: countries.id, object_types: ['dcim.site'] }));
    const site = ok(await h.post('/api/dcim/sites/', { name: 'AMS', slug: 'ams', custom_fields: { airport: 'AMS', countries: ['NL', 'DE'] } }));
    assert.deepEqual([site.custom_fields.airport, site.custom_fields.countries], ['AMS', ['NL', 'DE']]);
    ok(await h.patch(`/api/dcim/sites/${site.id}/`, { custom_fields: { airport: 'ZZ1' } }), 200);
    assert.deepEqual((await h.patch(`/api/dcim/sites/${site.id}/`, { custom_fields: { airport: 'QQQQ' } })).body, {
      custom_fields: ["Invalid value for custom field 'airport': Invalid choice (QQQQ) for choice set Airports."],
    });
    assert.equal((await h.patch(`/api/dcim/sites/${site.id}/`, { custom_fields: { countries: ['XX'] } })).status, 400);
    // Dropping the base list of a set without extra choices is NetBox's error.
    assert.deepEqual((await h.patch(`/api/extras/custom-field-choice-sets/${countries.id}/`, { base_choices: null })).body, { non_field_errors: ['Must define base or extra choices.'] });
  });
});
