import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { startApi, seedBasics, type Api } from './helpers.ts';
import { uiClient } from '../ui/ui-client.ts';

const DENIED = { detail: 'You do not have permission to perform this action.' };

/**
 * NetBox's object permissions (issue 24): `/api/users/permissions/`, every inventory API route and UI page checking them,
 * the earlier rules for accounts without any permission, and the admin's permission pages.
 */
forEachStorage('inventory object permissions', (storage) => {
  let api: Api;
  let seed: Awaited<ReturnType<typeof seedBasics>>;
  const users: Record<string, { id: number; key: string }> = {};

  async function userWithToken(username: string, canWrite = false, writeEnabled = true) {
    const u = await api.http.post('/api/users/users/', { username, password: 'pw-123456', can_write: canWrite });
    assert.equal(u.status, 201, JSON.stringify(u.body));
    const t = await api.http.post('/api/users/tokens/', { user: u.body.id, write_enabled: writeEnabled });
    assert.equal(t.status, 201, JSON.stringify(t.body));
    return (users[username] = { id: u.body.id, key: t.body.key });
  }

  before(async () => {
    api = await startApi(storage);
    seed = await seedBasics(api);
    await userWithToken('legacy'); // no permissions: the earlier rules (views everything, cannot write)
    await userWithToken('sites'); // view/add/change sites only
    await userWithToken('ro', false, false); // permission to change sites, but a read-only token
  });
  after(() => api.close());

  it('manages permissions in NetBox shape and validates them', async () => {
    let r = await api.http.post('/api/users/permissions/', { name: 'Site editors', object_types: ['dcim.site'], actions: ['view', 'add', 'change'], users: [users.sites!.id, users.ro!.id] });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const p = r.body;
    assert.deepEqual(Object.keys(p).sort(), ['actions', 'constraints', 'description', 'display', 'display_url', 'enabled', 'groups', 'id', 'name', 'object_types', 'url', 'users'].sort());
    assert.equal(p.enabled, true);
    assert.equal(p.constraints, null);
    assert.deepEqual(p.groups, []);
    assert.deepEqual(p.object_types, ['dcim.site']);
    assert.match(p.url, /\/api\/users\/permissions\/\d+\/$/);
    assert.match(p.display_url, /\/users\/permissions\/\d+\/$/);
    assert.deepEqual(p.users.map((u: any) => u.username).sort(), ['ro', 'sites']);
    assert.deepEqual(Object.keys(p.users[0]).sort(), ['display', 'id', 'url', 'username']);
    r = await api.http.get(`/api/users/permissions/?user_id=${users.sites!.id}&brief=1`);
    assert.equal(r.body.count, 1);
    assert.equal(r.body.results[0].users, undefined);
    r = await api.http.post('/api/users/permissions/', { name: '', object_types: ['dcim.nothing', 'bad'], actions: [], users: [99999], groups: [1], constraints: { site: 1 } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.body, {
      name: ['This field may not be blank.'],
      object_types: ['Invalid content type: dcim.nothing', "Invalid value. Specify a content type as '<app_label>.<model_name>'."],
      actions: ['This list may not be empty.'],
      constraints: ['Constraints are not supported by this service: leave them empty.'],
      groups: ['Invalid pk "1" - object does not exist.'],
      users: ['Invalid pk "99999" - object does not exist.'],
    });
    r = await api.http.post('/api/users/permissions/', {});
    assert.deepEqual(r.body, { name: ['This field is required.'], object_types: ['This field is required.'], actions: ['This field is required.'] });
    // Only superusers manage them.
    assert.deepEqual([(await api.as(users.legacy!.key).get('/api/users/permissions/')).status], [403]);
    // A user's `permissions`: the assigned ones, brief.
    r = await api.http.get(`/api/users/users/${users.sites!.id}/`);
    assert.deepEqual(r.body.permissions.map((x: any) => [x.id, x.name, x.actions]), [[p.id, 'Site editors', ['view', 'add', 'change']]]);
    r = await api.http.patch(`/api/users/permissions/${p.id}/`, { description: 'Sites team' });
    assert.equal(r.body.description, 'Sites team');
    assert.equal(r.body.users.length, 2);
  });

  it('enforces view, add, change and delete on the API as NetBox answers', async () => {
    const sites = api.as(users.sites!.key);
    assert.equal((await sites.get('/api/dcim/sites/')).status, 200);
    assert.equal((await sites.get(`/api/dcim/sites/${seed.site.id}/`)).status, 200);
    // No view permission on devices, manufacturers, prefixes: 403 with DRF's detail on lists, details and writes.
    for (const url of ['/api/dcim/devices/', `/api/dcim/manufacturers/${seed.mfr.id}/`, '/api/ipam/prefixes/', '/api/core/object-changes/']) {
      const r = await sites.get(url);
      assert.deepEqual([url, r.status, r.body], [url, 403, DENIED]);
    }
    let r = await sites.post('/api/dcim/sites/', { name: 'Perm site', slug: 'perm-site' });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const id = r.body.id;
    r = await sites.patch(`/api/dcim/sites/${id}/`, { description: 'changed' });
    assert.equal(r.status, 200);
    r = await sites.patch('/api/dcim/sites/', [{ id, description: 'bulk' }]);
    assert.equal(r.status, 200);
    // No delete permission.
    assert.deepEqual([(await sites.delete(`/api/dcim/sites/${id}/`)).status], [403]);
    assert.deepEqual((await sites.delete('/api/dcim/sites/', [{ id }])).body, DENIED);
    assert.deepEqual([(await sites.post('/api/dcim/manufacturers/', { name: 'M', slug: 'm' })).status], [403]);
    // Available IPs: the IP address permission (403), the prefix's visibility (404).
    const prefix = (await api.http.post('/api/ipam/prefixes/', { prefix: '10.9.0.0/29' })).body;
    assert.equal((await sites.get(`/api/ipam/prefixes/${prefix.id}/available-ips/`)).status, 403);
    // A read-only token: the permission does not make it write.
    const ro = api.as(users.ro!.key);
    assert.equal((await ro.get('/api/dcim/sites/')).status, 200);
    assert.deepEqual((await ro.patch(`/api/dcim/sites/${id}/`, { description: 'x' })).body, DENIED);
    // Accounts without any permission keep the earlier rules; superusers everything.
    const legacy = api.as(users.legacy!.key);
    assert.equal((await legacy.get('/api/dcim/devices/')).status, 200);
    assert.equal((await legacy.post('/api/dcim/sites/', { name: 'L', slug: 'l' })).status, 403);
    assert.equal((await api.http.delete(`/api/dcim/sites/${id}/`)).status, 204);
  });

  it('applies changes to permissions at once: disabled, removed, granted to more types', async () => {
    const sites = api.as(users.sites!.key);
    const p = (await api.http.get(`/api/users/permissions/?user_id=${users.sites!.id}`)).body.results[0];
    let r = await api.http.patch(`/api/users/permissions/${p.id}/`, { enabled: false });
    assert.equal(r.body.enabled, false);
    // Disabled: the user still has permissions assigned, so nothing is granted (not the earlier rules).
    assert.equal((await sites.get('/api/dcim/sites/')).status, 403);
    await api.http.patch(`/api/users/permissions/${p.id}/`, { enabled: true, object_types: ['dcim.site', 'dcim.device', 'core.objectchange'] });
    assert.equal((await sites.get('/api/dcim/devices/')).status, 200);
    assert.equal((await sites.get('/api/core/object-changes/')).status, 200);
  });

  it('checks the UI pages, menu and buttons, and lets the admin manage permissions there', async () => {
    const perm = (await api.http.get(`/api/users/permissions/?user_id=${users.sites!.id}`)).body.results[0];
    await api.http.patch(`/api/users/permissions/${perm.id}/`, { object_types: ['dcim.site', 'dcim.device'] });
    const ui = uiClient(api.server.url);
    assert.equal((await ui.login(users.sites!.key)).status, 303);
    let page = await ui.get('/dcim/sites/');
    assert.equal(page.status, 200);
    const menu = /data-testid="inventory-menu">([\s\S]*?)<\/div>/.exec(page.text)![1]!;
    assert.match(menu, /href="\/dcim\/sites\/"/);
    assert.match(menu, /href="\/dcim\/devices\/"/);
    assert.doesNotMatch(menu, /href="\/dcim\/manufacturers\/"/);
    assert.doesNotMatch(menu, /IPAM/);
    assert.doesNotMatch(page.text, /href="\/core\/changelog\/"/, 'no Change log link without its permission');
    assert.match(page.text, /data-testid="add"/);
    assert.match(page.text, /data-testid="bulk-edit"/);
    assert.doesNotMatch(page.text, /data-testid="bulk-delete"/);
    page = await ui.get(`/dcim/sites/${seed.site.id}/`);
    assert.equal(page.status, 200);
    assert.match(page.text, /data-testid="edit"/);
    assert.doesNotMatch(page.text, /data-testid="delete"/);
    for (const url of ['/core/changelog/', '/dcim/manufacturers/', `/dcim/manufacturers/${seed.mfr.id}/`, '/ipam/prefixes/', `/dcim/sites/${seed.site.id}/delete/`, '/ipam/prefixes/add/']) {
      page = await ui.get(url);
      assert.equal(page.status, 403, url);
      assert.match(page.text, /You do not have permission to/);
    }
    page = await ui.post('/dcim/manufacturers/add/', { csrf_token: ui.csrfOf((await ui.get('/dcim/sites/')).text), name: 'X', slug: 'x' });
    assert.equal(page.status, 403);
    assert.equal((await api.http.get('/api/dcim/manufacturers/?slug=x')).body.count, 0);
    assert.equal((await ui.get('/users/permissions/')).status, 403);

    // The admin grants manufacturers through the permission pages.
    const admin = uiClient(api.server.url);
    await admin.login((await api.http.post('/api/users/tokens/', { description: 'ui' })).body.key);
    page = await admin.get('/users/permissions/');
    assert.equal(page.status, 200);
    assert.match(page.text, /Site editors/);
    page = await admin.get('/users/permissions/add/');
    assert.equal(page.status, 200);
    const csrf = admin.csrfOf(page.text);
    let r = await admin.post('/users/permissions/add/', { csrf_token: csrf, _submitted: '1', name: '', actions: [], object_types: [] });
    assert.equal(r.status, 400);
    assert.match(r.text, /This field may not be blank/);
    r = await admin.post('/users/permissions/add/', { csrf_token: csrf, _submitted: '1', name: 'Makers', enabled: 'on', actions: ['view'], object_types: ['dcim.manufacturer'], users: [String(users.sites!.id)] });
    assert.equal(r.status, 303, r.text);
    const shown = await admin.get(r.location!);
    assert.match(shown.text, /Manufacturer \(dcim.manufacturer\)/);
    page = await ui.get('/dcim/manufacturers/');
    assert.equal(page.status, 200);
    assert.doesNotMatch(page.text, /data-testid="add"/);
    const id = /\/users\/permissions\/(\d+)\//.exec(r.location!)![1];
    r = await admin.post(`/users/permissions/${id}/delete/`, { csrf_token: csrf, confirm: 'true' });
    assert.equal(r.status, 303);
    assert.equal((await ui.get('/dcim/manufacturers/')).status, 403);
  });
});
