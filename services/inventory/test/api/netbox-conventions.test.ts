import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage, onOneStorage } from '@svc/testkit';
import { rawRequest, seedBasics, startApi, type Api } from './helpers.ts';

forEachStorage('inventory API: NetBox client conventions', (storage) => {
  let api: Api;
  let b: Awaited<ReturnType<typeof seedBasics>>;
  before(async () => {
    api = await startApi(storage);
    b = await seedBasics(api);
    const r = await api.http.post('/api/dcim/devices/', [
      { name: 'r1', device_type: b.type.id, role: b.role.id, site: b.site.id },
      { name: 'r2', device_type: b.type.id, role: b.role.id, site: b.site.id },
    ]);
    assert.equal(r.status, 201, JSON.stringify(r.body));
  });
  after(() => api.close());

  it('answers API-Version: 4.3 on every /api/ response, errors included', async () => {
    for (const [method, path, status] of [
      ['GET', '/api/dcim/devices/', 200],
      ['GET', '/api/dcim/devices/999999/', 404],
      ['GET', '/api/nothing-here/', 404],
      ['PATCH', '/api/status/', 405],
      ['POST', '/api/dcim/sites/', 400],
      ['GET', '/api/status/', 200],
    ] as const) {
      const r = await api.http.request(method, path, method === 'POST' ? {} : undefined);
      assert.equal(r.status, status, `${method} ${path}`);
      assert.equal(r.headers.get('api-version'), '4.3', `${method} ${path}`);
    }
    const anon = await api.anon.get('/api/dcim/devices/');
    assert.equal(anon.status, 403);
    assert.equal(anon.headers.get('api-version'), '4.3');
    const [major, minor] = anon.headers.get('api-version')!.split('.').map(Number);
    assert.ok(major! > 4 || (major === 4 && minor! >= 3));
  });

  it('serves /api/status/ in NetBox shape', async () => {
    const r = await api.http.get('/api/status/');
    assert.equal(r.status, 200);
    for (const k of ['django-version', 'installed-apps', 'netbox-version', 'netbox-full-version', 'plugins', 'python-version', 'rq-workers-running']) assert.ok(k in r.body, k);
    assert.match(r.body['netbox-version'], /^4\.3\.\d+$/);
    assert.match(r.body['netbox-full-version'], /inventory/);
    assert.deepEqual(r.body.plugins, {});
    assert.equal(typeof r.body['rq-workers-running'], 'number');
  });

  it('lists every app root, including status and plugins', async () => {
    const r = await api.http.get('/api/');
    const base = api.server.url;
    for (const a of ['core', 'dcim', 'extras', 'ipam', 'plugins', 'status', 'tenancy', 'users', 'virtualization']) assert.equal(r.body[a], `${base}/api/${a}/`, a);
    for (const a of Object.keys(r.body)) assert.notEqual((await api.http.get(new URL(r.body[a]).pathname)).status, 404, a);
    const dcim = (await api.http.get('/api/dcim/')).body;
    assert.equal(dcim.devices, `${base}/api/dcim/devices/`);
    assert.equal(dcim.sites, `${base}/api/dcim/sites/`);
    const extras = (await api.http.get('/api/extras/')).body;
    for (const k of ['tags', 'webhooks', 'event-rules']) assert.equal(extras[k], `${base}/api/extras/${k}/`, k);
    const core = (await api.http.get('/api/core/')).body;
    assert.equal(core['object-changes'], `${base}/api/core/object-changes/`);
    assert.equal(core['background-tasks'], `${base}/api/core/background-tasks/`);
    assert.deepEqual((await api.http.get('/api/plugins/')).body, {});
  });

  it('refuses a NetBox filter it does not implement (400 naming it), never the unfiltered list', async () => {
    let r = await api.http.get('/api/dcim/devices/?tenant=x');
    assert.equal(r.status, 400);
    assert.deepEqual(Object.keys(r.body), ['tenant']);
    r = await api.http.get('/api/dcim/devices/?cluster_id=3&name=r1');
    assert.equal(r.status, 400);
    assert.ok(r.body.cluster_id);
    // __regex is implemented (RE2): a pattern RE2 cannot run in linear time is a 400 naming the parameter.
    r = await api.http.get('/api/dcim/devices/?serial__regex=(a)%5C1');
    assert.equal(r.status, 400);
    assert.ok(r.body['serial__regex']);
    // The dangerous pynetbox idiom: filter(...).delete() reads the list first; it gets a 400, nothing is deleted.
    r = await api.http.get('/api/dcim/devices/?virtual_chassis_id=1');
    assert.equal(r.status, 400);
    assert.equal((await api.http.get('/api/dcim/devices/')).body.count, 2);
  });

  it('ignores truly unknown parameters and keeps known filters working', async () => {
    let r = await api.http.get('/api/dcim/devices/?totally_unknown=1&name=r1');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.results.map((d: any) => d.name), ['r1']);
    r = await api.http.get('/api/dcim/devices/?name__nisw=r1');
    assert.deepEqual(r.body.results.map((d: any) => d.name), ['r2']);
    r = await api.http.get('/api/dcim/devices/?name__bogus=x');
    assert.equal(r.status, 200);
    assert.equal(r.body.count, 2);
    r = await api.http.get(`/api/dcim/devices/?site_id=${b.site.id}&status=active&q=r`);
    assert.equal(r.body.count, 2);
  });

  it('answers 405 with Allow', async () => {
    let r = await api.http.request('PATCH', '/api/status/');
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET, HEAD, OPTIONS');
    r = await api.http.request('POST', '/api/dcim/devices/1/', {});
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS');
    r = await api.http.request('PUT', '/api/core/object-changes/');
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET, HEAD, OPTIONS');
  });

  it('answers OPTIONS with DRF metadata on list and detail URLs', async () => {
    let r = await api.http.request('OPTIONS', '/api/dcim/devices/');
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'Device List');
    assert.deepEqual(Object.keys(r.body).slice(0, 4), ['name', 'description', 'renders', 'parses']);
    assert.ok(r.body.renders.includes('application/json'));
    assert.ok(r.body.parses.includes('application/json'));
    const status = r.body.actions.POST.status;
    assert.equal(status.required, false);
    assert.equal(status.read_only, false);
    assert.equal(status.label, 'Status');
    assert.ok(status.choices.some((c: any) => c.value === 'active' && c.display_name === 'Active'));
    assert.equal(r.body.actions.POST.name.max_length, 64);
    assert.equal(r.body.actions.POST.site.required, true);
    assert.equal(r.body.actions.POST.id.read_only, true);
    assert.ok(r.headers.get('allow')!.includes('POST'));
    r = await api.http.request('OPTIONS', `/api/dcim/devices/${b.site.id}/`);
    assert.equal(r.body.name, 'Device');
    assert.ok(r.body.actions.PUT);
    assert.equal(r.body.actions.POST, undefined);
    r = await api.http.request('OPTIONS', '/api/ipam/ip-addresses/');
    assert.ok(r.body.actions.POST.status.choices.length >= 5);
    r = await api.http.request('OPTIONS', '/api/extras/webhooks/');
    assert.equal(r.status, 200);
    assert.equal(r.body.name, 'Webhook List');
    // A read-only token sees no actions.
    r = await api.anon.request('OPTIONS', '/api/dcim/devices/');
    assert.equal(r.status, 403);
  });

  it('never parses a body on OPTIONS', async () => {
    let r = await rawRequest(api.server.url, 'OPTIONS', '/api/dcim/devices/', '', { 'content-type': 'application/json' });
    assert.equal(r.status, 200, r.text);
    r = await rawRequest(api.server.url, 'OPTIONS', '/api/dcim/sites/', '{not json', { 'content-type': 'application/json' });
    assert.equal(r.status, 200, r.text);
    r = await rawRequest(api.server.url, 'OPTIONS', '/api/dcim/sites/', '', { 'content-type': 'text/plain' });
    assert.equal(r.status, 200, r.text);
  });
});

// The OpenAPI document is built from the model registry and the routes, never read from the storage: SQLite only.
onOneStorage('inventory API: /api/schema/', (storage) => {
  let api: Api;
  before(async () => {
    api = await startApi(storage);
  });
  after(() => api.close());

  it('serves the OpenAPI document as YAML by default and JSON by format or Accept', async () => {
    let r = await api.http.get('/api/schema/');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type')!, /openapi/);
    assert.match(r.text, /^openapi: 3\./m);
    assert.equal(r.headers.get('api-version'), '4.3');
    r = await api.http.get('/api/schema/?format=json');
    assert.equal(r.status, 200);
    assert.match(r.body.openapi, /^3\./);
    r = await api.http.get('/api/schema/', { accept: 'application/json' });
    assert.equal(typeof r.body, 'object');
    assert.ok(r.body.paths['/api/dcim/devices/']);
    r = await api.http.get('/api/schema/?format=yaml');
    assert.match(r.text, /^openapi:/m);
    for (const f of ['xml', 'api', '']) assert.equal((await api.http.get(`/api/schema/?format=${f}`)).status, 404, f);
  });

  it('names the filters of each list operation', async () => {
    const doc = (await api.http.get('/api/schema/?format=json')).body;
    const params = doc.paths['/api/dcim/devices/'].get.parameters.map((p: any) => p.name);
    for (const n of ['site_id', 'site', 'status', 'name__ic', 'name__n', 'tag', 'q', 'limit', 'offset', 'id__gte', 'created__gte']) assert.ok(params.includes(n), n);
    const ip = doc.paths['/api/ipam/ip-addresses/'].get.parameters.map((p: any) => p.name);
    assert.ok(ip.includes('device_id'));
  });

  it('reaches the docs from /api/schema/swagger-ui/', async () => {
    const r = await fetch(`${api.server.url}/api/schema/swagger-ui/`);
    assert.equal(r.status, 200);
    assert.match(await r.text(), /swagger/i);
  });
});

forEachStorage('inventory API: absolute URLs, ?brief and ?fields everywhere', (storage) => {
  let api: Api;
  let b: Awaited<ReturnType<typeof seedBasics>>;
  let hook: any;
  let rule: any;
  before(async () => {
    api = await startApi(storage);
    b = await seedBasics(api);
    hook = (await api.http.post('/api/extras/webhooks/', { name: 'hook', payload_url: 'http://127.0.0.1:9/x' })).body;
    rule = (await api.http.post('/api/extras/event-rules/', { name: 'rule', object_types: ['dcim.site'], event_types: ['object_created'], action_type: 'webhook', action_object_type: 'extras.webhook', action_object_id: hook.id })).body;
    assert.ok(rule.id, JSON.stringify(rule));
  });
  after(() => api.close());

  const abs = (x: string) => `${api.server.url}${x}`;

  it('gives absolute url and display_url on objects, webhooks, event rules and object changes', async () => {
    const site = (await api.http.get(`/api/dcim/sites/${b.site.id}/`)).body;
    assert.equal(site.url, abs(`/api/dcim/sites/${b.site.id}/`));
    assert.equal(site.display_url, abs(`/dcim/sites/${b.site.id}/`));
    assert.deepEqual(Object.keys(site).slice(0, 4), ['id', 'url', 'display_url', 'display']);
    const created = (await api.http.post('/api/dcim/sites/', { name: 'S2', slug: 's2' })).body;
    assert.equal(created.display_url, abs(`/dcim/sites/${created.id}/`));
    const ip = (await api.http.post('/api/ipam/ip-addresses/', { address: '10.0.0.1/24' })).body;
    assert.equal(ip.display_url, abs(`/ipam/ip-addresses/${ip.id}/`));
    assert.equal(hook.url, abs(`/api/extras/webhooks/${hook.id}/`));
    assert.equal(hook.display_url, abs(`/extras/webhooks/${hook.id}/`));
    assert.equal(rule.url, abs(`/api/extras/event-rules/${rule.id}/`));
    assert.equal(rule.action_object.url, abs(`/api/extras/webhooks/${hook.id}/`));
    const listed = (await api.http.get('/api/extras/event-rules/')).body.results[0];
    assert.equal(listed.display_url, abs(`/extras/event-rules/${rule.id}/`));
    assert.equal(listed.action_object.url, hook.url);
    const change = (await api.http.get('/api/core/object-changes/?limit=1')).body.results[0];
    assert.equal(change.url, abs(`/api/core/object-changes/${change.id}/`));
    assert.equal(change.display_url, abs(`/core/changelog/${change.id}/`));
    const token = (await api.http.get('/api/users/tokens/')).body.results[0];
    assert.match(token.url, /^http:\/\/127\.0\.0\.1:\d+\/api\/users\/tokens\/\d+\/$/);
  });

  it('keeps relative URLs in event data, as NetBox', async () => {
    const before = api.events.length;
    await api.http.patch(`/api/dcim/sites/${b.site.id}/`, { description: 'x' });
    const ev = api.events.slice(before).flat().find((e) => e.objectType === 'dcim.site')!;
    assert.equal(ev.data.url, `/api/dcim/sites/${b.site.id}/`);
    assert.equal(ev.data.display_url, `/dcim/sites/${b.site.id}/`);
  });

  it('answers ?brief and ?fields on webhooks, event rules, tokens, object changes and models', async () => {
    let r = await api.http.get('/api/extras/webhooks/?brief=true');
    assert.deepEqual(r.body.results[0], { id: hook.id, url: hook.url, display: 'hook', name: 'hook', description: '' });
    r = await api.http.get(`/api/extras/webhooks/${hook.id}/?brief=1`);
    assert.deepEqual(Object.keys(r.body), ['id', 'url', 'display', 'name', 'description']);
    r = await api.http.get('/api/extras/event-rules/?brief=true');
    assert.deepEqual(Object.keys(r.body.results[0]), ['id', 'url', 'display', 'name', 'description']);
    r = await api.http.get('/api/extras/event-rules/?fields=id,name,action_object');
    assert.deepEqual(Object.keys(r.body.results[0]), ['id', 'name', 'action_object']);
    r = await api.http.get('/api/users/tokens/?brief=true');
    assert.deepEqual(Object.keys(r.body.results[0]).sort(), ['description', 'display', 'id', 'url', 'write_enabled']);
    r = await api.http.get('/api/core/object-changes/?fields=id,action');
    assert.deepEqual(Object.keys(r.body.results[0]), ['id', 'action']);
    r = await api.http.get('/api/core/object-changes/?brief=true');
    assert.deepEqual(Object.keys(r.body.results[0]), ['id', 'url', 'display', 'action']);
    r = await api.http.get('/api/dcim/devices/?brief=true');
    assert.equal(r.status, 200);
    r = await api.http.get(`/api/dcim/sites/${b.site.id}/?fields=id,name`);
    assert.deepEqual(r.body, { id: b.site.id, name: b.site.name });
    r = await api.http.get(`/api/dcim/sites/${b.site.id}/?omit=comments,custom_fields`);
    assert.equal('comments' in r.body, false);
    assert.equal(r.body.name, b.site.name);
    r = await api.http.get(`/api/extras/webhooks/?omit=body_template`);
    assert.equal('body_template' in r.body.results[0], false);
  });
});
