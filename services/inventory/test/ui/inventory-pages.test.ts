import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { uiClient } from './ui-client.ts';
import { MODELS } from '../../src/models/registry.ts';

const ADMIN = 'ui-inventory-admin-token-0123456789abcd';

/**
 * The inventory's own pages at NetBox's URLs, over HTTP without a browser: the login guard, lists with
 * filters and sorting, object pages at `display_url`, forms with the API's errors, delete with confirmation,
 * CSV import, bulk edit and delete, the change log, search, read-only users, CSRF and escaping.
 */
forEachStorage('inventory UI pages (NetBox URLs)', (storage) => {
  let srv: TestServer;
  let api: ReturnType<typeof client>;
  let ui: ReturnType<typeof uiClient>;
  let readOnlyToken: string;

  before(async () => {
    srv = await startTestServer('inventory_ui_pages', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN } });
    api = client(srv.url, { authorization: `Token ${ADMIN}` });
    ui = uiClient(srv.url);
    assert.equal((await ui.login(ADMIN)).status, 303);
    const user = await api.post('/api/users/users/', { username: 'viewer', password: 'a-long-password-1234' });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const tok = await api.post('/api/users/tokens/', { user: user.body.id, write_enabled: false });
    assert.equal(tok.status, 201, JSON.stringify(tok.body));
    readOnlyToken = tok.body.key;
  });
  after(() => srv?.close());

  it('sends anonymous visitors to the login page and back', async () => {
    const anon = uiClient(srv.url);
    const r = await anon.get('/dcim/sites/?status=active');
    assert.equal(r.status, 303);
    assert.equal(r.location, `/ui/login?next=${encodeURIComponent('/dcim/sites/?status=active')}`);
    const login = await anon.get(r.location!);
    const back = await anon.post('/ui/login', { csrf_token: anon.csrfOf(login.text), token: ADMIN, next: '/dcim/sites/?status=active' });
    assert.equal(back.location, '/dcim/sites/?status=active');
  });

  it('creates a site from the form, shows the API error next to the field, and its page is the display_url', async () => {
    const form = await ui.get('/dcim/sites/add/');
    assert.equal(form.status, 200);
    const csrf = ui.csrfOf(form.text);
    const bad = await ui.post('/dcim/sites/add/', { csrf_token: csrf, name: 'HQ', slug: 'not a slug!', status: 'active' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /data-field="slug"[\s\S]*?<ul class="errors"><li>Enter a valid/);
    assert.match(bad.text, /value="HQ"/, 'keeps what was typed');
    const ok = await ui.post('/dcim/sites/add/', { csrf_token: csrf, name: 'HQ', slug: 'hq', status: 'planned', description: '<b>x</b>' });
    assert.equal(ok.status, 303, ok.text.slice(0, 500));
    const site = (await api.get('/api/dcim/sites/?slug=hq')).body.results[0];
    assert.equal(new URL(site.display_url).pathname, ok.location);
    const page = await ui.get(ok.location!);
    assert.equal(page.status, 200);
    assert.match(page.text, /<h1>HQ<\/h1>/);
    assert.match(page.text, /Planned/);
    assert.ok(page.text.includes('&lt;b&gt;x&lt;/b&gt;') && !page.text.includes('<b>x</b>'), 'escaped');
    assert.match(page.text, /data-testid="related"/);
  });

  it('lists with API filters, sort and paging; a bad filter is shown, not a server error', async () => {
    for (const n of ['a1', 'a2', 'a3']) assert.equal((await api.post('/api/dcim/sites/', { name: n, slug: n, status: n === 'a2' ? 'retired' : 'active' })).status, 201);
    const all = await ui.get('/dcim/sites/?per_page=2&sort=-name');
    assert.equal(all.status, 200);
    assert.match(all.text, /Page 1 of 2 · 4 sites/);
    assert.ok(all.text.indexOf('>HQ<') < all.text.indexOf('>a3<') || !all.text.includes('>a1<'));
    const retired = await ui.get('/dcim/sites/?status=retired');
    assert.match(retired.text, />a2</);
    assert.ok(!retired.text.includes('>a1<'));
    const bad = await ui.get('/dcim/sites/?region_id=999999');
    assert.equal(bad.status, 400);
    assert.match(bad.text, /region_id: Select a valid choice/);
    const cols = await ui.get('/dcim/sites/?columns=name&columns=facility');
    assert.match(cols.text, />Facility</);
    assert.ok(!cols.text.includes('>Tenant</a></th>'), 'the chosen columns only');
  });

  it('imports from CSV (related objects by name), edits and deletes in bulk, with confirmation; the change log shows diffs', async () => {
    const mfr = (await api.post('/api/dcim/manufacturers/', { name: 'Acme', slug: 'acme' })).body;
    const type = (await api.post('/api/dcim/device-types/', { manufacturer: mfr.id, model: 'X1', slug: 'x1' })).body;
    const role = (await api.post('/api/dcim/device-roles/', { name: 'Leaf', slug: 'leaf' })).body;
    const dev = await api.post('/api/dcim/devices/', { name: 'sw1', site: (await api.get('/api/dcim/sites/?slug=hq')).body.results[0].id, device_type: type.id, role: role.id });
    assert.equal(dev.status, 201);
    const page = await ui.get('/dcim/interfaces/import/');
    const csrf = ui.csrfOf(page.text);
    const broken = await ui.post('/dcim/interfaces/import/', { csrf_token: csrf, format: 'csv', data: 'device,name,type\nsw1,eth0,no-such-type\n' });
    assert.equal(broken.status, 400);
    assert.match(broken.text, /Record 1 type: /);
    assert.equal((await api.get('/api/dcim/interfaces/')).body.count, 0, 'nothing imported when a record fails');
    const rows = Array.from({ length: 10 }, (_, i) => `sw1,eth${i},1000base-t,"desc, ${i}"`).join('\n');
    const imported = await ui.post('/dcim/interfaces/import/', { csrf_token: csrf, format: 'csv', data: `device,name,type,description\n${rows}\n` });
    assert.equal(imported.status, 303, imported.text.slice(0, 800));
    const ifaces = (await api.get('/api/dcim/interfaces/?limit=100')).body;
    assert.equal(ifaces.count, 10);
    assert.equal(ifaces.results.find((i: any) => i.name === 'eth3').description, 'desc, 3');
    const ids = ifaces.results.slice(0, 4).map((i: any) => String(i.id));
    const editForm = await ui.post('/dcim/interfaces/edit/', { csrf_token: csrf, pk: ids });
    assert.equal(editForm.status, 200);
    const applied = await ui.post('/dcim/interfaces/edit/', { csrf_token: csrf, pk: ids, _apply: 'true', mtu: '9000', enabled: 'false' });
    assert.equal(applied.status, 303, applied.text.slice(0, 800));
    const after = (await api.get('/api/dcim/interfaces/?mtu=9000')).body;
    assert.equal(after.count, 4);
    assert.ok(after.results.every((i: any) => i.enabled === false));
    const log = await ui.get(`/dcim/interfaces/${ids[0]}/changelog/`);
    assert.equal(log.status, 200);
    assert.match(log.text, /<strong>mtu<\/strong>: <del>null<\/del> → <ins>9000<\/ins>/);
    const confirm = await ui.post('/dcim/interfaces/delete/', { csrf_token: csrf, pk: ids.slice(0, 2) });
    assert.match(confirm.text, /Are you sure you want to delete these 2 interfaces/);
    assert.equal((await api.get('/api/dcim/interfaces/')).body.count, 10, 'nothing deleted before confirming');
    const deleted = await ui.post('/dcim/interfaces/delete/', { csrf_token: csrf, pk: ids.slice(0, 2), _confirm: 'true' });
    assert.equal(deleted.status, 303);
    assert.equal((await api.get('/api/dcim/interfaces/')).body.count, 8);
    // One object: confirmation page, then the delete; a protected object says why.
    const site = (await api.get('/api/dcim/sites/?slug=hq')).body.results[0];
    const ask = await ui.get(`/dcim/sites/${site.id}/delete/`);
    assert.match(ask.text, /Are you sure you want to delete site <strong>HQ<\/strong>/);
    const refused = await ui.post(`/dcim/sites/${site.id}/delete/`, { csrf_token: csrf, confirm: 'true' });
    assert.equal(refused.status, 303);
    const shown = await ui.get(refused.location!);
    assert.match(shown.text, /Unable to delete object/);
  });

  it('answers hostile list queries and ids on every model page with a 4xx page or a result, never a 5xx', async () => {
    const hostile = ['q=%00', 'name=%ED%A0%80', 'id=99999999999999999999', 'site_id=null', 'tenant_id__n=null', 'name__regex=(a%2B)%2B%24', 'sort=__proto__', 'per_page=99999999999', 'page=-1', 'columns=constructor', `q=${'a'.repeat(5000)}`];
    for (const m of MODELS) {
      for (const h of hostile) {
        const r = await ui.get(`/${m.app}/${m.path}/?${h}`);
        assert.ok(r.status < 500, `/${m.app}/${m.path}/?${h.slice(0, 40)}: ${r.status}`);
      }
      for (const id of ['0', '99999999999999999999', 'abc', '1e3']) {
        const r = await ui.get(`/${m.app}/${m.path}/${id}/`);
        assert.ok(r.status === 404, `/${m.app}/${m.path}/${id}/: ${r.status}`);
      }
    }
    const search = await ui.get('/search/?q=%00');
    assert.ok(search.status < 500);
  });

  it("lists every change at NetBox's /core/changelog/ with the API's filters; a change's page (its display_url) shows both snapshots", async () => {
    const list = await ui.get('/core/changelog/?changed_object_type=dcim.site&action=create');
    assert.equal(list.status, 200);
    assert.match(list.text, /data-testid="changelog-list"/);
    assert.match(list.text, /<td>Created<\/td><td>DCIM &gt; Site<\/td><td><a href="\/dcim\/sites\/\d+\/">HQ<\/a>/);
    assert.doesNotMatch(list.text, /<td>Updated<\/td>/);
    const upd = (await api.get('/api/core/object-changes/?changed_object_type=dcim.interface&action=update&limit=1')).body.results[0];
    assert.equal(new URL(upd.display_url).pathname, `/core/changelog/${upd.id}/`);
    const page = await ui.get(`/core/changelog/${upd.id}/`);
    assert.equal(page.status, 200);
    assert.match(page.text, /data-testid="prechange-data"[\s\S]*<tr class="changed"><th>mtu<\/th><td><del>null<\/del>/);
    assert.match(page.text, /data-testid="postchange-data"[\s\S]*<tr class="changed"><th>mtu<\/th><td><ins>9000<\/ins>/);
    assert.match(page.text, /data-testid="related-changes"/, 'the bulk edit changed four interfaces in one request');
    const bad = await ui.get('/core/changelog/?time_after=yesterday&per_page=99999999999');
    assert.equal(bad.status, 400);
    assert.match(bad.text, /time_after: Enter a valid date\/time\./);
    for (const id of ['0', '99999999999999999999', 'abc']) assert.equal((await ui.get(`/core/changelog/${id}/`)).status, 404);
    for (const h of ['q=%00', 'changed_object_id=99999999999999999999', 'action=__proto__', 'request_id=%ED%A0%80', 'user_id=null', 'page=-1', `q=${'a'.repeat(5000)}`, 'ordering=__proto__']) {
      const r = await ui.get(`/core/changelog/?${h}`);
      assert.ok(r.status < 500, `/core/changelog/?${h.slice(0, 40)}: ${r.status}`);
    }
    assert.equal((await uiClient(srv.url).get('/core/changelog/')).status, 303, 'login first');
  });

  it("manages the user's own API tokens at NetBox's /user/api-tokens/: create (key shown once), revoke with confirmation; a read-only session may only look", async () => {
    const list = await ui.get('/user/api-tokens/');
    assert.equal(list.status, 200);
    assert.match(list.text, /<code>\*{10}abcd<\/code> <span class="muted">\(this session\)<\/span>/);
    const csrf = ui.csrfOf(list.text);
    const bad = await ui.post('/user/api-tokens/add/', { csrf_token: csrf, _submitted: '1', expires: 'soon', description: 'x' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /data-field="expires"[\s\S]*?Enter a valid date\/time\./);
    assert.match((await ui.post('/user/api-tokens/add/', { csrf_token: csrf, _submitted: '1', expires: '2001-01-01' })).text, /The expiry must be in the future\./);
    const made = await ui.post('/user/api-tokens/add/', { csrf_token: csrf, _submitted: '1', expires: '2999-01-01 00:00', description: 'ci <b>' });
    assert.equal(made.status, 201, made.text.slice(0, 500));
    const key = /data-testid="new-key">([0-9a-f]{40})</.exec(made.text)![1]!;
    assert.match(made.text, /Read only, expires/);
    assert.ok(made.text.includes('ci &lt;b&gt;'));
    const own = client(srv.url, { authorization: `Token ${key}` });
    assert.equal((await own.get('/api/dcim/sites/')).status, 200);
    assert.equal((await own.post('/api/dcim/sites/', { name: 'no', slug: 'no' })).status, 403, 'read-only as asked');
    const row = (await api.get('/api/users/tokens/?limit=100')).body.results.find((t: any) => t.display.endsWith(key.slice(-4)));
    assert.equal(row.description, 'ci <b>');
    assert.equal(new Date(row.expires).toISOString(), '2999-01-01T00:00:00.000Z', 'read as UTC');
    assert.match((await ui.get(`/user/api-tokens/${row.id}/delete/`)).text, /Are you sure you want to revoke token <code>\*{10}/);
    const revoked = await ui.post(`/user/api-tokens/${row.id}/delete/`, { csrf_token: csrf, confirm: 'true' });
    assert.equal(revoked.status, 303);
    assert.deepEqual((await own.get('/api/dcim/sites/')).body, { detail: 'Invalid token' });
    assert.equal((await ui.post(`/user/api-tokens/${row.id}/delete/`, { csrf_token: csrf, confirm: 'true' })).status, 404);
    assert.equal((await ui.post('/user/api-tokens/add/', { _submitted: '1' })).status, 403, 'CSRF');

    // A session opened with a read-only token sees its user's tokens only, and may not create or revoke.
    const viewer = uiClient(srv.url);
    assert.equal((await viewer.login(readOnlyToken)).status, 303);
    const theirs = await viewer.get('/user/api-tokens/');
    assert.equal(theirs.status, 200);
    assert.equal([...theirs.text.matchAll(/data-token="/g)].length, 1);
    const vcsrf = viewer.csrfOf(theirs.text);
    const refused = await viewer.post('/user/api-tokens/add/', { csrf_token: vcsrf, _submitted: '1', write_enabled: 'on' });
    assert.equal(refused.status, 403);
    assert.match(refused.text, /read-only token/);
    const adminTokenId = (await api.get('/api/users/tokens/?limit=100')).body.results.find((t: any) => t.user.username === 'admin').id;
    assert.equal((await viewer.get(`/user/api-tokens/${adminTokenId}/delete/`)).status, 404, "another user's token");
  });

  it('searches across models; read-only users see pages without write actions and cannot post; CSRF is checked', async () => {
    const found = await ui.get('/search/?q=sw1');
    assert.match(found.text, /Devices<\/a> <span class="muted">\(1\)/);
    // NetBox's lookups and object types.
    assert.match((await ui.get('/search/?q=SW1&lookup=iexact')).text, /Devices<\/a> <span class="muted">\(1\)/);
    const typed = await ui.get('/search/?q=e&lookup=istartswith&obj_types=dcim.interface&obj_types=dcim.device');
    assert.match(typed.text, /Interfaces<\/a> <span class="muted">\(8\)/);
    assert.doesNotMatch(typed.text, /Sites<\/a>/);
    assert.match((await ui.get(`/search/?q=${encodeURIComponent('^sw[0-9]$')}&lookup=iregex&obj_types=dcim.device`)).text, /Devices<\/a> <span class="muted">\(1\)/);
    assert.match((await ui.get('/search/?q=9&lookup=iendswith&obj_types=dcim.interface')).text, /<li><a href="\/dcim\/interfaces\/\d+\/">eth9<\/a><\/li>/);
    for (const [qs, msg] of [['q=(&lookup=iregex', /q: Invalid regular expression/], ['q=x&lookup=nope', /lookup: Select a valid choice/], ['q=x&obj_types=dcim.nope', /obj_types: Select a valid choice/]] as const) {
      const r = await ui.get(`/search/?${qs}`);
      assert.equal(r.status, 400, qs);
      assert.match(r.text, msg);
    }
    const ro = uiClient(srv.url);
    assert.equal((await ro.login(readOnlyToken)).status, 303);
    const list = await ro.get('/dcim/sites/');
    assert.equal(list.status, 200);
    assert.ok(!list.text.includes('data-testid="add"'));
    const add = await ro.get('/dcim/sites/add/');
    assert.equal(add.status, 403);
    assert.match(add.text, /may not change objects/);
    // Without the admin flag, the admin pages are refused too (person-paths.browser.test.ts walks this in Chromium).
    for (const p of ['/ui/background-queues/', '/ui/event-rules/add', '/ui/webhooks/add']) {
      const refused = await ro.get(p);
      assert.equal(refused.status, 403, p);
      assert.match(refused.text, /Only administrators/, p);
    }
    const post = await ro.post('/dcim/sites/add/', { csrf_token: ro.csrfOf(list.text), name: 'x', slug: 'x' });
    assert.equal(post.status, 403);
    const forged = await ui.post('/dcim/sites/add/', { csrf_token: 'wrong', name: 'y', slug: 'y' });
    assert.equal(forged.status, 403);
    assert.equal((await api.get('/api/dcim/sites/?slug=y')).body.count, 0);
    const missing = await ui.get('/dcim/sites/999999/');
    assert.equal(missing.status, 404);
    const nothing = await ui.get('/dcim/no-such-things/');
    assert.equal(nothing.status, 404);
    // The admin pages ask before deleting a webhook, too.
    const wh = await api.post('/api/extras/webhooks/', { name: 'w <1>', payload_url: 'http://127.0.0.1:9/hook' });
    assert.equal(wh.status, 201, wh.text);
    const detail = await ui.get(`/ui/webhooks/${wh.body.id}/`);
    assert.match(detail.text, new RegExp(`href="/ui/webhooks/${wh.body.id}/delete"`));
    const ask = await ui.post(`/ui/webhooks/${wh.body.id}/delete`, { csrf_token: ui.csrfOf(detail.text) });
    assert.equal(ask.status, 200);
    assert.match(ask.text, /Are you sure you want to delete webhook <strong>w &lt;1&gt;<\/strong>/);
    assert.equal((await api.get(`/api/extras/webhooks/${wh.body.id}/`)).status, 200, 'not deleted before confirming');
    const gone = await ui.post(`/ui/webhooks/${wh.body.id}/delete`, { csrf_token: ui.csrfOf(detail.text), confirm: 'true' });
    assert.equal(gone.status, 303);
    assert.equal((await api.get(`/api/extras/webhooks/${wh.body.id}/`)).status, 404);
    // Pages are not API operations: none of them is in the OpenAPI document (built from the routes, never read from
    // the storage, and costly to build: SQLite only).
    if (storage === 'sqlite') {
      const doc = (await api.get('/openapi.json')).body;
      assert.ok(!Object.keys(doc.paths).some((p) => /^\/(dcim|ipam|tenancy|virtualization|extras|search)\//.test(p)), 'no HTML page in /openapi.json');
    }
  });
});
