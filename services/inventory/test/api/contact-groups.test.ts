import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { ADMIN_TOKEN, startApi, type Api } from './helpers.ts';
import { uiClient } from '../ui/ui-client.ts';

/**
 * NetBox 4.3's contact groups membership (Contact.groups) and its filters: contacts `group_id`/`group`, contact
 * assignments `group_id`/`group`, contact groups `contact_id`, and `contact_group` on every model with contacts — each
 * named group standing for its subtree (TreeNodeMultipleChoiceFilter); contact_count cumulative as NetBox's.
 */
forEachStorage('inventory API: contact groups and contact_group filters', (storage) => {
  let api: Api;
  const ok = (r: { status: number; body: any; text?: string }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('contacts carry their groups; filters by group follow the tree; objects filter by their contacts\' groups', async () => {
    const h = api.http;
    const ops = ok(await h.post('/api/tenancy/contact-groups/', { name: 'Operations', slug: 'ops' }));
    const noc = ok(await h.post('/api/tenancy/contact-groups/', { name: 'NOC', slug: 'noc', parent: ops.id }));
    const sales = ok(await h.post('/api/tenancy/contact-groups/', { name: 'Sales', slug: 'sales' }));
    const ada = ok(await h.post('/api/tenancy/contacts/', { name: 'Ada', groups: [noc.id] }));
    const bob = ok(await h.post('/api/tenancy/contacts/', { name: 'Bob', groups: [sales.id, { slug: 'ops' }] }));
    const cy = ok(await h.post('/api/tenancy/contacts/', { name: 'Cy' }));
    assert.deepEqual(Object.keys(ada).slice(0, 6), ['id', 'url', 'display_url', 'display', 'groups', 'name']);
    assert.deepEqual(Object.keys(ada.groups[0]).sort(), ['_depth', 'contact_count', 'description', 'display', 'id', 'name', 'slug', 'url']);
    assert.deepEqual(bob.groups.map((g: any) => g.slug).sort(), ['ops', 'sales']);
    assert.deepEqual(cy.groups, []);
    assert.deepEqual((await h.post('/api/tenancy/contacts/', { name: 'Dee', groups: [999999] })).status, 400);

    // contact_count: the group's contacts and its descendants' (Ada through NOC, Bob directly), each once.
    const counts = async () => Object.fromEntries(ok(await h.get('/api/tenancy/contact-groups/'), 200).results.map((g: any) => [g.slug, g.contact_count]));
    assert.deepEqual(await counts(), { noc: 1, ops: 2, sales: 1 });
    ok(await h.patch(`/api/tenancy/contacts/${ada.id}/`, { groups: [noc.id, ops.id] }), 200);
    assert.deepEqual(await counts(), { noc: 1, ops: 2, sales: 1 }, 'Ada in both counts once');
    assert.equal(ok(await h.get(`/api/tenancy/contact-groups/${ops.id}/?brief=1`), 200).contact_count, 2);

    const names = async (url: string) => ok(await h.get(url), 200).results.map((x: any) => x.name ?? x.display).sort();
    assert.deepEqual(await names(`/api/tenancy/contacts/?group_id=${ops.id}`), ['Ada', 'Bob']);
    assert.deepEqual(await names('/api/tenancy/contacts/?group=noc'), ['Ada']);
    assert.deepEqual(await names(`/api/tenancy/contacts/?group_id=${sales.id}&group_id=${noc.id}`), ['Ada', 'Bob']);
    assert.deepEqual((await h.get('/api/tenancy/contacts/?group_id=999999')).body, { group_id: ['Select a valid choice. 999999 is not one of the available choices.'] });
    assert.deepEqual((await h.get('/api/tenancy/contacts/?group=nope')).body, { group: ['Select a valid choice. nope is not one of the available choices.'] });
    assert.deepEqual(await names(`/api/tenancy/contact-groups/?contact_id=${bob.id}`), ['Operations', 'Sales']);

    // Assignments and the objects with contacts.
    const role = ok(await h.post('/api/tenancy/contact-roles/', { name: 'Owner', slug: 'owner' }));
    const sites = [];
    for (const [i, c] of [ada, bob, cy].entries()) {
      const site = ok(await h.post('/api/dcim/sites/', { name: `S${i}`, slug: `s${i}` }));
      ok(await h.post('/api/tenancy/contact-assignments/', { object_type: 'dcim.site', object_id: site.id, contact: c.id, role: role.id }));
      sites.push(site);
    }
    const tenant = ok(await h.post('/api/tenancy/tenants/', { name: 'T', slug: 't' }));
    ok(await h.post('/api/tenancy/contact-assignments/', { object_type: 'tenancy.tenant', object_id: tenant.id, contact: bob.id, role: role.id }));
    assert.deepEqual(await names(`/api/tenancy/contact-assignments/?group_id=${ops.id}`), ['Ada (Owner)', 'Bob (Owner)', 'Bob (Owner)']);
    assert.deepEqual(await names('/api/tenancy/contact-assignments/?group=sales&object_type=dcim.site'), ['Bob (Owner)']);
    assert.deepEqual(await names(`/api/dcim/sites/?contact_group=${ops.id}`), ['S0', 'S1']);
    assert.deepEqual(await names(`/api/dcim/sites/?contact_group=${sales.id}`), ['S1']);
    assert.deepEqual(await names(`/api/tenancy/tenants/?contact_group=${sales.id}`), ['T']);
    assert.deepEqual(await names(`/api/dcim/regions/?contact_group=${ops.id}`), []);
    assert.deepEqual((await h.get('/api/dcim/sites/?contact_group=999999')).body, { contact_group: ['Select a valid choice. 999999 is not one of the available choices.'] });

    // Leaving groups, and a group's deletion, update membership.
    ok(await h.patch(`/api/tenancy/contacts/${ada.id}/`, { groups: [] }), 200);
    assert.deepEqual(await counts(), { noc: 0, ops: 1, sales: 1 });
    ok(await h.delete(`/api/tenancy/contact-groups/${sales.id}/`), 204);
    assert.deepEqual(ok(await h.get(`/api/tenancy/contacts/${bob.id}/`), 200).groups.map((g: any) => g.slug), ['ops']);
  });

  it('the contact form edits the groups', async () => {
    const h = api.http;
    const g = ok(await h.post('/api/tenancy/contact-groups/', { name: 'Field', slug: 'field' }));
    const ui = uiClient(api.server.url);
    assert.equal((await ui.login(ADMIN_TOKEN)).status, 303);
    const form = await ui.get('/tenancy/contacts/add/');
    assert.equal(form.status, 200);
    assert.match(form.text, /<select id="f-groups" name="groups" multiple/);
    const saved = await ui.post('/tenancy/contacts/add/', { csrf_token: ui.csrfOf(form.text), name: 'Eve', groups: [String(g.id)] });
    assert.equal(saved.status, 303, saved.text.slice(0, 500));
    const eve = ok(await h.get('/api/tenancy/contacts/?name=Eve'), 200).results[0];
    assert.deepEqual(eve.groups.map((x: any) => x.id), [g.id]);
    const page = await ui.get(saved.location!);
    assert.match(page.text, /Field/);
  });
});
