import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { uiClient } from './ui-client.ts';

const ADMIN = 'ui-journal-admin-token-0123456789abcdefg';

/** The journal tab of object pages (add an entry from the page) and the pages of issue 24's extras models, over HTTP. */
forEachStorage('inventory UI: journal tab and extras pages', (storage) => {
  let srv: TestServer;
  let api: ReturnType<typeof client>;
  let ui: ReturnType<typeof uiClient>;
  let readOnlyToken: string;

  before(async () => {
    srv = await startTestServer('inventory_ui_journal', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN } });
    api = client(srv.url, { authorization: `Token ${ADMIN}` });
    ui = uiClient(srv.url);
    assert.equal((await ui.login(ADMIN)).status, 303);
    const user = await api.post('/api/users/users/', { username: 'viewer', password: 'a-long-password-1234' });
    const tok = await api.post('/api/users/tokens/', { user: user.body.id, write_enabled: false });
    readOnlyToken = tok.body.key;
  });
  after(() => srv?.close());

  it('shows the journal tab, adds an entry from the page (escaped), refuses an empty one with the API message', async () => {
    const site = (await api.post('/api/dcim/sites/', { name: 'J', slug: 'j' })).body;
    const page = await ui.get(`/dcim/sites/${site.id}/`);
    assert.equal(page.status, 200);
    assert.match(page.text, new RegExp(`href="/dcim/sites/${site.id}/journal/"[^>]*data-testid="journal-tab"`));
    const journal = await ui.get(`/dcim/sites/${site.id}/journal/`);
    assert.equal(journal.status, 200);
    assert.match(journal.text, /No journal entries\./);
    const csrf = ui.csrfOf(journal.text);
    const empty = await ui.post(`/dcim/sites/${site.id}/journal/`, { csrf_token: csrf, kind: 'info', comments: '' });
    assert.equal(empty.status, 400);
    assert.match(empty.text, /data-testid="journal-error">comments: This field may not be blank\./);
    const added = await ui.post(`/dcim/sites/${site.id}/journal/`, { csrf_token: csrf, kind: 'danger', comments: 'Power <b>lost</b>' });
    assert.equal(added.status, 303, added.text.slice(0, 300));
    assert.equal(added.location, `/dcim/sites/${site.id}/journal/`);
    const after = await ui.get(added.location!);
    assert.ok(after.text.includes('Power &lt;b&gt;lost&lt;/b&gt;'));
    assert.match(after.text, />Danger</);
    const entries = (await api.get(`/api/extras/journal-entries/?assigned_object_type=dcim.site&assigned_object_id=${site.id}`)).body;
    assert.equal(entries.count, 1);
    assert.deepEqual(entries.results[0].kind.value, 'danger');
    // Without CSRF the form is refused.
    assert.equal((await ui.post(`/dcim/sites/${site.id}/journal/`, { kind: 'info', comments: 'x' })).status, 403);
    // A read-only user sees the entries but no form, and may not post.
    const ro = uiClient(srv.url);
    assert.equal((await ro.login(readOnlyToken)).status, 303);
    const roPage = await ro.get(`/dcim/sites/${site.id}/journal/`);
    assert.equal(roPage.status, 200);
    assert.ok(!roPage.text.includes('data-testid="journal-form"'));
    assert.equal((await ro.post(`/dcim/sites/${site.id}/journal/`, { csrf_token: ro.csrfOf(roPage.text), kind: 'info', comments: 'x' })).status, 403);
    assert.equal((await ui.get('/dcim/sites/999999/journal/')).status, 404);
  });

  it('shows the render config tab of a device: its context data and the rendered template, or the API error', async () => {
    const site = (await api.post('/api/dcim/sites/', { name: 'RC', slug: 'rc' })).body;
    const mfr = (await api.post('/api/dcim/manufacturers/', { name: 'RCM', slug: 'rcm' })).body;
    const type = (await api.post('/api/dcim/device-types/', { manufacturer: mfr.id, model: 'RCT', slug: 'rct' })).body;
    const role = (await api.post('/api/dcim/device-roles/', { name: 'RCR', slug: 'rcr' })).body;
    const dev = (await api.post('/api/dcim/devices/', { name: 'rc1', site: site.id, device_type: type.id, role: role.id, local_context_data: { motd: '<hi>' } })).body;
    const none = await ui.get(`/dcim/devices/${dev.id}/render-config/`);
    assert.equal(none.status, 200);
    assert.match(none.text, /data-testid="render-error">error: No config template found for this device\./);
    assert.ok(none.text.includes('&quot;motd&quot;: &quot;&lt;hi&gt;&quot;') || none.text.includes('"motd": "&lt;hi&gt;"'), 'context shown, escaped');
    const tpl = (await api.post('/api/extras/config-templates/', { name: 'rc', template_code: 'motd {{ motd }} on {{ device.name }}' })).body;
    await api.patch(`/api/dcim/devices/${dev.id}/`, { config_template: tpl.id });
    const page = await ui.get(`/dcim/devices/${dev.id}/render-config/`);
    assert.match(page.text, /data-testid="rendered-config">motd &lt;hi&gt; on rc1</);
    assert.match((await ui.get(`/dcim/devices/${dev.id}/`)).text, /data-testid="render-config-tab"/);
    assert.equal((await ui.get('/dcim/devices/999999/render-config/')).status, 404);
  });

  it('lists and shows config contexts, templates, choice sets, journal entries and contact assignments', async () => {
    const ctx = (await api.post('/api/extras/config-contexts/', { name: 'ntp', data: { ntp: ['a'] } })).body;
    const tpl = (await api.post('/api/extras/config-templates/', { name: 'base', template_code: 'x' })).body;
    const set = (await api.post('/api/extras/custom-field-choice-sets/', { name: 'Tiers', extra_choices: [['a', 'A']] })).body;
    for (const [list, id] of [['/extras/config-contexts/', ctx.id], ['/extras/config-templates/', tpl.id], ['/extras/custom-field-choice-sets/', set.id], ['/extras/journal-entries/', null], ['/tenancy/contact-assignments/', null]] as const) {
      const r = await ui.get(list);
      assert.equal(r.status, 200, `${list}: ${r.text.slice(0, 200)}`);
      if (id !== null) assert.equal((await ui.get(`${list}${id}/`)).status, 200);
    }
    // A config context from the form: JSON data, a site and a tag (tags by slug, as the API names them); the edit form keeps them.
    const site = (await api.post('/api/dcim/sites/', { name: 'CC', slug: 'cc' })).body;
    await api.post('/api/extras/tags/', { name: 'Core', slug: 'core' });
    const form = await ui.get('/extras/config-contexts/add/');
    assert.equal(form.status, 200);
    const bad = await ui.post('/extras/config-contexts/add/', { csrf_token: ui.csrfOf(form.text), name: 'from-ui', weight: '10', data: '{oops', is_active: 'on' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /Invalid JSON/);
    const saved = await ui.post('/extras/config-contexts/add/', { csrf_token: ui.csrfOf(form.text), name: 'from-ui', weight: '10', data: '{"snmp": {"community": "x"}}', is_active: 'on', sites: String(site.id), tags: 'core' });
    assert.equal(saved.status, 303, saved.text.slice(0, 400));
    const made = (await api.get('/api/extras/config-contexts/?name=from-ui')).body.results[0];
    assert.deepEqual(made.data, { snmp: { community: 'x' } });
    assert.deepEqual(made.tags, ['core']);
    assert.equal(made.sites[0].id, site.id);
    const edit = await ui.get(`/extras/config-contexts/${made.id}/edit/`);
    assert.match(edit.text, /<option value="core" selected>/);
    const menu = (await ui.get('/extras/config-contexts/')).text;
    for (const href of ['/extras/config-contexts/', '/extras/config-templates/', '/extras/custom-field-choice-sets/', '/extras/journal-entries/', '/tenancy/contact-assignments/']) assert.ok(menu.includes(`href="${href}"`), href);
  });
});
