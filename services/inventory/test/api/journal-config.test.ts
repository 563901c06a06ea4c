import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { seedBasics, startApi, type Api } from './helpers.ts';

/** Journal entries, config contexts and templates with render-config, contact assignments (issue 24), over HTTP. */
forEachStorage('inventory API: journal entries, config contexts, render-config, contact assignments', (storage) => {
  let api: Api;
  const ok = (r: { status: number; body: any }, status = 201) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body;
  };
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('journal entries: NetBox shape, created_by, validation, filters, events and cascade with the object', async () => {
    const h = api.http;
    const { site, type, role } = await seedBasics(api, 'j');
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'j1', site: site.id, device_type: type.id, role: role.id }));
    const before = api.events.length;
    const e = ok(await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.device', assigned_object_id: dev.id, comments: 'Rebooted', kind: 'warning' }));
    assert.deepEqual(Object.keys(e), ['id', 'url', 'display_url', 'display', 'assigned_object_type', 'assigned_object_id', 'assigned_object', 'created', 'created_by', 'kind', 'comments', 'tags', 'custom_fields', 'last_updated']);
    assert.equal(e.assigned_object.id, dev.id);
    assert.equal(e.assigned_object.name, 'j1');
    assert.deepEqual(e.kind, { value: 'warning', label: 'Warning' });
    assert.equal(typeof e.created_by, 'number');
    assert.match(e.display, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} \(Warning\)$/);
    assert.match(e.url, /\/api\/extras\/journal-entries\/\d+\/$/);
    // The change is an event like any other object's.
    const ev = api.events.slice(before).flat().find((x) => x.objectType === 'extras.journalentry');
    assert.equal(ev?.event, 'created');
    ok(await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.site', assigned_object_id: site.id, comments: 'Visited' }));
    // Errors in NetBox's words.
    assert.deepEqual((await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.device', assigned_object_id: 999999, comments: 'x' })).body, { non_field_errors: ['Invalid assigned_object: DCIM | device ID 999999'] });
    assert.deepEqual((await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.nothing', assigned_object_id: 1, comments: 'x' })).body, { assigned_object_type: ['Invalid content type: dcim.nothing'] });
    assert.deepEqual((await h.post('/api/extras/journal-entries/', { assigned_object_type: 'Device', assigned_object_id: 1, comments: 'x' })).body, { assigned_object_type: ["Invalid value. Specify a content type as '<app_label>.<model_name>'."] });
    assert.deepEqual((await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.device', assigned_object_id: dev.id, comments: 'x', kind: 'fatal' })).body, { kind: ['"fatal" is not a valid choice.'] });
    assert.deepEqual((await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.device', assigned_object_id: dev.id })).body, { comments: ['This field is required.'] });
    // Filters.
    const count = async (q: string) => ok(await h.get(`/api/extras/journal-entries/?${q}`), 200).count;
    assert.equal(await count(`assigned_object_type=dcim.device&assigned_object_id=${dev.id}`), 1);
    assert.equal(await count('kind=warning'), 1);
    assert.equal(await count('kind=info'), 1);
    assert.equal(await count('created_by=admin'), 2);
    assert.equal(await count(`created_by_id=${e.created_by}`), 2);
    assert.equal(await count('q=reboot'), 1);
    assert.equal(await count('created_after=2000-01-01'), 2);
    assert.equal(await count('created_before=2000-01-01'), 0);
    assert.deepEqual((await h.get('/api/extras/journal-entries/?created_by=nobody')).body, { created_by: ['Select a valid choice. nobody is not one of the available choices.'] });
    assert.equal((await h.get('/api/extras/journal-entries/?assigned_object_type_id=999999')).status, 400);
    // The entry goes with its object, change-logged.
    ok(await h.delete(`/api/dcim/devices/${dev.id}/`), 204);
    assert.equal((await h.get(`/api/extras/journal-entries/${e.id}/`)).status, 404);
    const changes = ok(await h.get(`/api/core/object-changes/?changed_object_type=extras.journalentry&changed_object_id=${e.id}`), 200);
    assert.deepEqual(changes.results.map((c: any) => c.action.value).sort(), ['create', 'delete']);
  });

  it('config contexts merge by weight and name under local context data; exclude=config_context; assignment filters', async () => {
    const h = api.http;
    const { site, type, role } = await seedBasics(api, 'c');
    const region = ok(await h.post('/api/dcim/regions/', { name: 'Europe', slug: 'europe' }));
    const child = ok(await h.post('/api/dcim/regions/', { name: 'France', slug: 'france', parent: region.id }));
    ok(await h.patch(`/api/dcim/sites/${site.id}/`, { region: child.id }), 200);
    const tag = ok(await h.post('/api/extras/tags/', { name: 'Edge', slug: 'edge' }));
    const base = ok(await h.post('/api/extras/config-contexts/', { name: 'base', weight: 100, data: { ntp: ['a'], dns: { primary: '1.1.1.1', secondary: '8.8.8.8' } } }));
    assert.deepEqual(Object.keys(base).slice(0, 8), ['id', 'url', 'display_url', 'display', 'name', 'weight', 'description', 'is_active']);
    assert.deepEqual(base.regions, []);
    assert.deepEqual(base.tags, []);
    assert.equal(base.data_source, null);
    const eu = ok(await h.post('/api/extras/config-contexts/', { name: 'eu', weight: 200, regions: [region.id], data: { dns: { primary: '9.9.9.9' } } }));
    assert.equal(eu.regions[0].slug, 'europe');
    ok(await h.post('/api/extras/config-contexts/', { name: 'edge', weight: 200, tags: ['edge'], data: { ntp: ['edge'] } }));
    ok(await h.post('/api/extras/config-contexts/', { name: 'other-site', weight: 50, sites: [(await seedBasics(api, 'o')).site.id], data: { never: true } }));
    ok(await h.post('/api/extras/config-contexts/', { name: 'inactive', is_active: false, data: { never: true } }));
    assert.deepEqual((await h.post('/api/extras/config-contexts/', { name: 'bad', data: [1] })).body, { data: ['JSON data must be in object form. Example: {"foo": 123}'] });
    assert.deepEqual((await h.post('/api/extras/config-contexts/', { name: 'base', data: {} })).body, { name: ['config context with this name already exists.'] });
    assert.equal((await h.post('/api/extras/config-contexts/', { name: 'badtag', tags: ['nope'], data: {} })).status, 400);

    const dev = ok(await h.post('/api/dcim/devices/', { name: 'c1', site: site.id, device_type: type.id, role: role.id, tags: [tag.id], local_context_data: { dns: { secondary: 'local' } } }));
    // base (100), then edge and eu (200, by name): edge's ntp replaces the list; eu's dns.primary merges; local last.
    assert.deepEqual(dev.config_context, { ntp: ['edge'], dns: { primary: '9.9.9.9', secondary: 'local' } });
    const listed = ok(await h.get(`/api/dcim/devices/?id=${dev.id}`), 200).results[0];
    assert.deepEqual(listed.config_context, dev.config_context);
    assert.equal('config_context' in ok(await h.get(`/api/dcim/devices/${dev.id}/?exclude=config_context`), 200), false);
    // A VM at the site gets the region's and the base context (no tags, no device type).
    const vm = ok(await h.post('/api/virtualization/virtual-machines/', { name: 'vm1', site: site.id }));
    assert.deepEqual(vm.config_context, { ntp: ['a'], dns: { primary: '9.9.9.9', secondary: '8.8.8.8' } });
    // Filters over the assignments.
    const names = async (q: string) => ok(await h.get(`/api/extras/config-contexts/?${q}&ordering=name`), 200).results.map((c: any) => c.name);
    assert.deepEqual(await names(`region_id=${region.id}`), ['eu']);
    assert.deepEqual(await names('region=europe'), ['eu']);
    assert.deepEqual(await names('tag=edge'), ['edge']);
    assert.deepEqual(await names('is_active=false'), ['inactive']);
    assert.deepEqual((await h.get('/api/extras/config-contexts/?region=mars')).body, { region: ['Select a valid choice. mars is not one of the available choices.'] });
    assert.equal((await h.get('/api/extras/config-contexts/?data_source_id=1')).status, 400);
  });

  it('config templates render through the sandbox with NetBox context; errors and template bombs answer 400 quickly', async () => {
    const h = api.http;
    const { site, type, role } = await seedBasics(api, 'r');
    ok(await h.post('/api/extras/config-contexts/', { name: 'ntp', data: { ntp_servers: ['10.0.0.1', '10.0.0.2'] } }));
    const tpl = ok(await h.post('/api/extras/config-templates/', { name: 'base', template_code: 'hostname {{ device.name }}\n{% for s in ntp_servers %}ntp server {{ s }}\n{% endfor %}{{ extra | default("-") }}', environment_params: { trim_blocks: true } }));
    assert.deepEqual(Object.keys(tpl), ['id', 'url', 'display_url', 'display', 'name', 'description', 'environment_params', 'template_code', 'mime_type', 'file_name', 'file_extension', 'as_attachment', 'data_source', 'data_path', 'data_file', 'auto_sync_enabled', 'data_synced', 'tags', 'created', 'last_updated']);
    assert.deepEqual((await h.post('/api/extras/config-templates/', { name: 'x', template_code: 'x', environment_params: { autoescape: true } })).body, {
      environment_params: ["This service's template engine does not support the environment parameter 'autoescape' (supported: trim_blocks, lstrip_blocks, keep_trailing_newline)."],
    });
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'r1', site: site.id, device_type: type.id, role: role.id }));
    assert.deepEqual((await h.post(`/api/dcim/devices/${dev.id}/render-config/`, {})).body, { error: 'No config template found for this device.' });
    assert.deepEqual((await h.post(`/api/dcim/devices/${dev.id}/render-config/`, { config_template_id: 999999 })).body, { error: 'Config template with ID 999999 not found.' });
    // The role's template serves when the device has none of its own.
    ok(await h.patch(`/api/dcim/device-roles/${role.id}/`, { config_template: tpl.id }), 200);
    const out = ok(await h.post(`/api/dcim/devices/${dev.id}/render-config/`, { extra: 'from-request' }), 200);
    assert.equal(out.content, 'hostname r1\nntp server 10.0.0.1\nntp server 10.0.0.2\nfrom-request');
    assert.equal(out.configtemplate.id, tpl.id);
    assert.equal(out.configtemplate.name, 'base');
    const text = await h.post(`/api/dcim/devices/${dev.id}/render-config/`, {}, { accept: 'text/plain' });
    assert.equal(text.status, 200);
    assert.equal(text.text, 'hostname r1\nntp server 10.0.0.1\nntp server 10.0.0.2\n-');
    assert.match(String(text.headers.get('content-type')), /^text\/plain/);
    // The template is protected while a role uses it.
    assert.equal((await h.delete(`/api/extras/config-templates/${tpl.id}/`)).status, 409);
    // A VM with its own template.
    const vmTpl = ok(await h.post('/api/extras/config-templates/', { name: 'vm', template_code: '{{ virtualmachine.name }} {{ ntp_servers | length }}' }));
    const vm = ok(await h.post('/api/virtualization/virtual-machines/', { name: 'vm-r', site: site.id, config_template: vmTpl.id }));
    assert.equal(ok(await h.post(`/api/virtualization/virtual-machines/${vm.id}/render-config/`, {}), 200).content, 'vm-r 2');
    // Errors as NetBox words them.
    const bad = ok(await h.post('/api/extras/config-templates/', { name: 'bad', template_code: 'line1\n{{ nope.attr.deeper }}' }));
    const e1 = await h.post(`/api/dcim/devices/${dev.id}/render-config/`, { config_template_id: bad.id });
    assert.equal(e1.status, 400);
    assert.equal(e1.body.detail, "An error occurred while rendering the template (line None): UndefinedError: 'nope' is undefined");
    const syntax = ok(await h.post('/api/extras/config-templates/', { name: 'syntax', template_code: '{% for x in %}' }));
    const e2 = await h.post(`/api/dcim/devices/${dev.id}/render-config/`, { config_template_id: syntax.id });
    assert.equal(e2.status, 400);
    assert.match(e2.body.detail, /^An error occurred while rendering the template \(line 1\): /);
    // Bombs: a huge loop, deep recursion, a memory blow-up. Each answers 400 within seconds and the API stays responsive.
    for (const code of [
      '{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}',
      '{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}',
      '{% set s = "x" * 1000000 %}{% for i in range(100000) %}{{ s }}{% endfor %}',
    ]) {
      const t = ok(await h.post('/api/extras/config-templates/', { name: `bomb-${code.length}`, template_code: code }));
      const started = Date.now();
      const [r, status] = await Promise.all([h.post(`/api/dcim/devices/${dev.id}/render-config/`, { config_template_id: t.id }), h.get('/api/status/')]);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.match(r.body.detail, /^An error occurred while rendering the template \(line None\): LimitExceededError: /);
      assert.equal(status.status, 200);
      assert.ok(Date.now() - started < 8000, `bomb took ${Date.now() - started} ms`);
    }
    // A read-only token may not render (NetBox's TokenWritePermission).
    const user = ok(await h.post('/api/users/users/', { username: 'reader', password: 'reader-pass-1' }));
    const token = ok(await h.post('/api/users/tokens/', { user: user.id, write_enabled: false }));
    assert.deepEqual((await api.as(token.key).post(`/api/dcim/devices/${dev.id}/render-config/`, {})).body, { detail: 'You do not have permission to perform this action.' });
  });

  it('event rules on the new types queue webhook deliveries with their REST data; a device event carries its merged config_context', async () => {
    const h = api.http;
    const hook = ok(await h.post('/api/extras/webhooks/', { name: 'jc', payload_url: 'http://127.0.0.1:9/jc' }));
    const types = ['extras.journalentry', 'extras.configcontext', 'extras.configtemplate', 'extras.customfieldchoiceset', 'tenancy.contactassignment', 'dcim.device'];
    ok(await h.post('/api/extras/event-rules/', { name: 'jc-rule', object_types: types, event_types: ['object_created', 'object_updated', 'object_deleted'], action_type: 'webhook', action_object_type: 'extras.webhook', action_object_id: hook.id }));
    const { site, type, role } = await seedBasics(api, 'e');
    const cc = ok(await h.post('/api/extras/config-contexts/', { name: 'ev-ctx', weight: 5000, sites: [site.id], data: { evsite: site.slug } }));
    const tpl = ok(await h.post('/api/extras/config-templates/', { name: 'ev-tpl', template_code: '{{ evsite }}' }));
    const set = ok(await h.post('/api/extras/custom-field-choice-sets/', { name: 'ev-set', extra_choices: [['a', 'A']] }));
    const dev = ok(await h.post('/api/dcim/devices/', { name: 'e1', site: site.id, device_type: type.id, role: role.id, config_template: tpl.id }));
    const entry = ok(await h.post('/api/extras/journal-entries/', { assigned_object_type: 'dcim.device', assigned_object_id: dev.id, comments: 'ev' }));
    const contact = ok(await h.post('/api/tenancy/contacts/', { name: 'Eve' }));
    const crole = ok(await h.post('/api/tenancy/contact-roles/', { name: 'Ev', slug: 'ev' }));
    const ca = ok(await h.post('/api/tenancy/contact-assignments/', { object_type: 'dcim.device', object_id: dev.id, contact: contact.id, role: crole.id }));
    ok(await h.delete(`/api/dcim/devices/${dev.id}/`), 204);
    const tasks = ok(await h.get(`/api/core/background-tasks/?webhook=${hook.id}&limit=200`), 200).results;
    const seen = new Map<string, any>();
    for (const t of tasks) seen.set(`${t.object_type}:${t.object_id}:${t.event}`, t);
    for (const k of [
      `extras.configcontext:${cc.id}:created`,
      `extras.configtemplate:${tpl.id}:created`,
      `extras.customfieldchoiceset:${set.id}:created`,
      `extras.journalentry:${entry.id}:created`,
      `tenancy.contactassignment:${ca.id}:created`,
      `dcim.device:${dev.id}:created`,
      // The device's journal entry and contact assignment go with it, each with its own event.
      `extras.journalentry:${entry.id}:deleted`,
      `tenancy.contactassignment:${ca.id}:deleted`,
      `dcim.device:${dev.id}:deleted`,
    ]) {
      assert.ok(seen.has(k), `no delivery for ${k}: ${[...seen.keys()].join(', ')}`);
    }
    const created = ok(await h.get(`/api/core/background-tasks/${seen.get(`dcim.device:${dev.id}:created`).id}/`), 200);
    assert.equal(created.kwargs.data.config_context.evsite, site.slug);
    assert.equal(created.kwargs.data.config_template.id, tpl.id);
    const je = ok(await h.get(`/api/core/background-tasks/${seen.get(`extras.journalentry:${entry.id}:created`).id}/`), 200);
    assert.equal(je.kwargs.data.url, `/api/extras/journal-entries/${entry.id}/`);
    assert.equal(je.kwargs.data.assigned_object.id, dev.id);
  });

  it('contact assignments: NetBox shape, uniqueness, supported types, filters, protection and cascade', async () => {
    const h = api.http;
    const { site } = await seedBasics(api, 'k');
    const contact = ok(await h.post('/api/tenancy/contacts/', { name: 'Alice' }));
    const role = ok(await h.post('/api/tenancy/contact-roles/', { name: 'Owner', slug: 'owner' }));
    const a = ok(await h.post('/api/tenancy/contact-assignments/', { object_type: 'dcim.site', object_id: site.id, contact: contact.id, role: role.id, priority: 'primary' }));
    assert.deepEqual(Object.keys(a), ['id', 'url', 'display_url', 'display', 'object_type', 'object_id', 'object', 'contact', 'role', 'priority', 'tags', 'custom_fields', 'created', 'last_updated']);
    assert.equal(a.display, 'Alice (Owner)');
    assert.equal(a.object.slug, site.slug);
    assert.deepEqual(a.priority, { value: 'primary', label: 'Primary' });
    assert.deepEqual((await h.post('/api/tenancy/contact-assignments/', { object_type: 'dcim.site', object_id: site.id, contact: contact.id, role: role.id })).body, {
      non_field_errors: ['The fields object_type, object_id, contact, role must make a unique set.'],
    });
    const tag = ok(await h.post('/api/extras/tags/', { name: 'T', slug: 't' }));
    assert.deepEqual((await h.post('/api/tenancy/contact-assignments/', { object_type: 'extras.tag', object_id: tag.id, contact: contact.id, role: role.id })).body, {
      non_field_errors: ['Contacts cannot be assigned to this object type (Extras | tag).'],
    });
    assert.deepEqual((await h.post('/api/tenancy/contact-assignments/', { object_type: 'dcim.site', object_id: 999999, contact: contact.id, role: role.id })).body, { object_id: ['Related object not found using the provided numeric ID: 999999'] });
    assert.deepEqual((await h.post('/api/tenancy/contact-assignments/', { object_type: 'dcim.site', object_id: site.id })).body, { contact: ['This field is required.'], role: ['This field is required.'] });
    const count = async (q: string) => ok(await h.get(`/api/tenancy/contact-assignments/?${q}`), 200).count;
    assert.equal(await count(`object_type=dcim.site&object_id=${site.id}`), 1);
    assert.equal(await count(`contact_id=${contact.id}`), 1);
    assert.equal(await count('role=owner'), 1);
    assert.equal(await count('priority=secondary'), 0);
    assert.deepEqual((await h.get('/api/tenancy/contact-assignments/?group_id=999999')).body, { group_id: ['Select a valid choice. 999999 is not one of the available choices.'] });
    // The objects' own contact filters (NetBox's ContactModelFilterSet).
    assert.deepEqual(ok(await h.get(`/api/dcim/sites/?contact=${contact.id}`), 200).results.map((x: any) => x.id), [site.id]);
    assert.deepEqual(ok(await h.get(`/api/dcim/sites/?contact_role=${role.id}&id=${site.id}`), 200).count, 1);
    assert.equal(ok(await h.get(`/api/dcim/regions/?contact=${contact.id}`), 200).count, 0);
    assert.deepEqual((await h.get('/api/dcim/sites/?contact=999999')).body, { contact: ['Select a valid choice. 999999 is not one of the available choices.'] });
    assert.deepEqual((await h.get('/api/dcim/sites/?contact_group=999999')).body, { contact_group: ['Select a valid choice. 999999 is not one of the available choices.'] });
    // Contacts and roles in use are protected; the assignment goes with its object.
    assert.equal((await h.delete(`/api/tenancy/contacts/${contact.id}/`)).status, 409);
    ok(await h.delete(`/api/dcim/sites/${site.id}/`), 204);
    assert.equal((await h.get(`/api/tenancy/contact-assignments/${a.id}/`)).status, 404);
    ok(await h.delete(`/api/tenancy/contacts/${contact.id}/`), 204);
  });
});
