import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage } from '@svc/testkit';
import { deviceEvent, emit, startInventory, startReceiver, until } from './helpers.ts';

forEachStorage('webhooks and event rules API', (kind) => {
  let inv: Awaited<ReturnType<typeof startInventory>>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let writer: ReturnType<typeof client>;
  before(async () => {
    inv = await startInventory(kind);
    rx = await startReceiver();
    const u = await inv.api.post('/api/users/users/', { username: 'writer', can_write: true, is_superuser: false });
    assert.equal(u.status, 201, JSON.stringify(u.body));
    const t = await inv.api.post('/api/users/tokens/', { user: u.body.id, key: 'writer-token-123456', write_enabled: true });
    assert.equal(t.status, 201, JSON.stringify(t.body));
    writer = client(inv.server.url, { authorization: 'Token writer-token-123456' });
  });
  after(async () => {
    await inv.server.close();
    await rx.close();
  });

  it('creates a webhook with NetBox defaults; the secret is write-only', async () => {
    const r = await inv.api.post('/api/extras/webhooks/', { name: 'w1', payload_url: 'http://127.0.0.1:9/hook', secret: 'top-secret' });
    assert.equal(r.status, 201);
    assert.equal(r.body.http_method, 'POST');
    assert.equal(r.body.http_content_type, 'application/json');
    assert.equal(r.body.ssl_verification, true);
    assert.equal(r.body.url, `${inv.server.url}/api/extras/webhooks/${r.body.id}/`);
    assert.equal(r.body.display, 'w1');
    assert.equal(r.body.secret_set, true);
    for (const res of [r, await inv.api.get(`/api/extras/webhooks/${r.body.id}/`), await inv.api.get('/api/extras/webhooks/'), await inv.api.patch(`/api/extras/webhooks/${r.body.id}/`, { description: 'd' })]) {
      assert.ok(!res.text.includes('top-secret'), 'secret never returned');
      assert.ok(!('secret' in (res.body.results?.[0] ?? res.body)));
    }
    const list = await inv.api.get('/api/extras/webhooks/?limit=1');
    assert.equal(list.body.count, 1);
    assert.equal(list.body.previous, null);
  });

  it('validates webhook fields with NetBox error shapes', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ payload_url: 'http://127.0.0.1:9/' }, 'name'],
      [{ name: 'w1', payload_url: 'http://127.0.0.1:9/' }, 'name'],
      [{ name: 'n', payload_url: 'ftp://x/' }, 'payload_url'],
      [{ name: 'n', payload_url: 'file:///{{ x }}' }, 'payload_url'],
      [{ name: 'n', payload_url: 'http://127.0.0.1:9/', http_method: 'TRACE' }, 'http_method'],
      [{ name: 'n', payload_url: 'http://127.0.0.1:9/', ssl_verification: false, ca_file_path: '/etc/ca.pem' }, 'ca_file_path'],
      [{ name: 'n', payload_url: 'http://127.0.0.1:9/', timeout: 0 }, 'timeout'],
      [{ name: 'n', payload_url: 'http://127.0.0.1:9/', max_retries: -1 }, 'max_retries'],
      [{ name: 'x'.repeat(151), payload_url: 'http://127.0.0.1:9/' }, 'name'],
    ];
    for (const [body, field] of cases) {
      const r = await inv.api.post('/api/extras/webhooks/', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.ok(Array.isArray(r.body[field]), `${field} error for ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    }
    assert.equal((await inv.api.post('/api/extras/webhooks/', [1, 2])).status, 400);
    assert.equal((await inv.api.post('/api/extras/webhooks/', '{bad json', { 'content-type': 'application/json' })).status, 400);
    assert.equal((await inv.api.get('/api/extras/webhooks/999999/')).status, 404);
    assert.equal((await inv.api.get('/api/extras/webhooks/abc/')).status, 404);
  });

  it('only administrators may write webhooks and rules', async () => {
    assert.equal((await writer.get('/api/extras/webhooks/')).status, 200);
    const r = await writer.post('/api/extras/webhooks/', { name: 'nope', payload_url: 'http://127.0.0.1:9/' });
    assert.equal(r.status, 403);
    assert.deepEqual(r.body, { detail: 'You do not have permission to perform this action.' });
    assert.equal((await writer.post('/api/extras/event-rules/', { name: 'nope' })).status, 403);
    assert.equal((await writer.get('/api/core/background-tasks/')).status, 403);
    assert.equal((await client(inv.server.url).get('/api/extras/webhooks/')).status, 403);
  });

  it('validates event rules, including conditions, and lists them in name order', async () => {
    const w = (await inv.api.get('/api/extras/webhooks/?name=w1')).body.results[0];
    const base = { object_types: ['dcim.device'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: w.id };
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ ...base, name: 'r', conditions: { attr: 'x' } }, 'conditions'],
      [{ ...base, name: 'r', conditions: { attr: 'x', value: 'a', op: 'gt' } }, 'conditions'],
      [{ ...base, name: 'r', object_types: ['dcim.nothing'] }, 'object_types'],
      [{ ...base, name: 'r', event_types: ['object_exploded'] }, 'event_types'],
      [{ ...base, name: 'r', event_types: [] }, 'event_types'],
      [{ ...base, name: 'r', action_object_id: 999999 }, 'action_object_id'],
      [{ ...base, name: 'r', action_type: 'script' }, 'action_type'],
      [{ ...base, name: 'r', action_data: [1] }, 'action_data'],
    ];
    for (const [body, field] of bad) {
      const r = await inv.api.post('/api/extras/event-rules/', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.ok(Array.isArray(r.body[field]), `${field}: ${JSON.stringify(r.body)}`);
    }
    const b = await inv.api.post('/api/extras/event-rules/', { ...base, name: 'b-rule', conditions: { and: [{ attr: 'status.value', value: 'active' }] } });
    assert.equal(b.status, 201, JSON.stringify(b.body));
    assert.deepEqual(b.body.action_object, { id: w.id, url: `${inv.server.url}/api/extras/webhooks/${w.id}/`, display: 'w1', name: 'w1', description: 'd' });
    assert.equal(b.body.enabled, true);
    assert.equal((await inv.api.post('/api/extras/event-rules/', { ...base, name: 'a-rule' })).status, 201);
    const list = await inv.api.get('/api/extras/event-rules/');
    assert.deepEqual(list.body.results.map((r: { name: string }) => r.name), ['a-rule', 'b-rule']);
    const p = await inv.api.patch(`/api/extras/event-rules/${b.body.id}/`, { enabled: false });
    assert.equal(p.body.enabled, false);
    assert.equal((await inv.api.delete(`/api/extras/event-rules/${b.body.id}/`)).status, 204);
  });

  it('matches rules by type, event and conditions; a failing condition skips the rule', async () => {
    const w = await inv.api.post('/api/extras/webhooks/', { name: 'match', payload_url: `${rx.url}/match/{{ data.name }}` });
    const mk = (name: string, conditions: unknown, event_types = ['object_created']) =>
      inv.api.post('/api/extras/event-rules/', { name, object_types: ['dcim.device'], event_types, action_object_type: 'extras.webhook', action_object_id: w.body.id, conditions });
    assert.equal((await mk('m1-active', { attr: 'status.value', value: 'active' })).status, 201);
    assert.equal((await mk('m2-tagged', { attr: 'tags.slug', op: 'contains', value: 'core' })).status, 201);
    assert.equal((await mk('m3-broken-path', { attr: 'no.such.path', value: 1 })).status, 201);
    assert.equal((await mk('m4-deletes', null, ['object_deleted'])).status, 201);
    const n = rx.received.length;
    await emit(inv.deps, [
      deviceEvent({ data: { id: 1, name: 'both', status: { value: 'active' }, tags: [{ slug: 'core' }] } }),
      deviceEvent({ data: { id: 2, name: 'neither', status: { value: 'offline' }, tags: [] } }),
      deviceEvent({ objectType: 'dcim.site', model: 'site', data: { id: 3, name: 'site', status: { value: 'active' }, tags: [] } }),
    ]);
    // Rules are matched in the emitting transaction: every delivery they make exists once it commits.
    const queued = await inv.api.get(`/api/core/background-tasks/?webhook=${w.body.id}`);
    assert.equal(queued.body.count, 2);
    const tasks = await until(async () => {
      const l = await inv.api.get(`/api/core/background-tasks/?webhook=${w.body.id}&status=successful`);
      return l.body.count === 2 && l.body;
    });
    assert.deepEqual(tasks.results.map((t: { event_rule: { name: string } }) => t.event_rule.name).sort(), ['m1-active', 'm2-tagged']);
    // both recorded as delivered, and nothing else was made to deliver: these two are all the receiver gets
    const urls = rx.received.slice(n).map((r) => r.url).sort();
    assert.deepEqual(urls, ['/match/both', '/match/both']);
  });

  it('supports NetBox bulk create, update and delete on the list URLs (all or nothing)', async () => {
    const bad = await inv.api.post('/api/extras/webhooks/', [
      { name: 'bulk-a', payload_url: 'http://127.0.0.1:9/a' },
      { name: 'bulk-b', payload_url: 'ftp://b.example/' },
    ]);
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body[0], {});
    assert.ok(bad.body[1].payload_url);
    assert.equal((await inv.api.get('/api/extras/webhooks/?name=bulk-a')).body.count, 0, 'rolled back');
    const ok = await inv.api.post('/api/extras/webhooks/', [
      { name: 'bulk-a', payload_url: 'http://127.0.0.1:9/a' },
      { name: 'bulk-b', payload_url: 'http://127.0.0.1:9/b', secret: 'x' },
    ]);
    assert.equal(ok.status, 201);
    assert.equal(ok.body.length, 2);
    const ids = ok.body.map((w: { id: number }) => w.id);
    const patched = await inv.api.patch('/api/extras/webhooks/', ids.map((id: number) => ({ id, description: 'bulk' })));
    assert.equal(patched.status, 200);
    assert.deepEqual(patched.body.map((w: { description: string }) => w.description), ['bulk', 'bulk']);
    const rules = await inv.api.post('/api/extras/event-rules/', ids.map((id: number, i: number) => ({ name: `bulk-rule-${i}`, object_types: ['dcim.site'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: id })));
    assert.equal(rules.status, 201);
    assert.equal((await inv.api.patch('/api/extras/event-rules/', [{ id: rules.body[0].id, enabled: false }, { id: 999999, enabled: false }])).status, 400);
    assert.equal((await inv.api.get(`/api/extras/event-rules/${rules.body[0].id}/`)).body.enabled, true);
    assert.equal((await inv.api.delete('/api/extras/event-rules/', rules.body.map((r: { id: number }) => ({ id: r.id })))).status, 204);
    assert.equal((await inv.api.delete('/api/extras/webhooks/', [{ id: ids[0] }, {}])).status, 400);
    assert.equal((await inv.api.delete('/api/extras/webhooks/', ids.map((id: number) => ({ id })))).status, 204);
    assert.equal((await inv.api.get('/api/extras/webhooks/?name=bulk-a')).body.count, 0);
  });

  it('change-logs webhook and event-rule writes with the secret masked', async () => {
    const w = await inv.api.post('/api/extras/webhooks/', { name: 'logged', payload_url: 'http://127.0.0.1:9/log', secret: 'very-secret-value' });
    const r = await inv.api.post('/api/extras/event-rules/', { name: 'logged', object_types: ['dcim.site'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: w.body.id });
    await inv.api.patch(`/api/extras/webhooks/${w.body.id}/`, { description: 'changed' });
    await inv.api.delete(`/api/extras/webhooks/${w.body.id}/`);
    const log = await inv.api.get(`/api/core/object-changes/?changed_object_type=extras.webhook&changed_object_id=${w.body.id}`);
    assert.equal(log.status, 200);
    assert.deepEqual(log.body.results.map((c: { action: { value: string } }) => c.action.value).sort(), ['create', 'delete', 'update']);
    assert.ok(!log.text.includes('very-secret-value'), 'secret never in the change log');
    assert.ok(log.text.includes('********'));
    const rl = await inv.api.get(`/api/core/object-changes/?changed_object_type=extras.eventrule&changed_object_id=${r.body.id}`);
    assert.deepEqual(rl.body.results.map((c: { action: { value: string } }) => c.action.value).sort(), ['create', 'delete'], 'cascade delete logged');
    assert.equal((await inv.api.get(`/api/extras/event-rules/${r.body.id}/`)).status, 404);
  });

  it('reports queue counts and task lists per status', async () => {
    const q = await inv.api.get('/api/core/background-queues/');
    assert.equal(q.status, 200);
    assert.equal(q.body.results[0].name, 'default');
    assert.ok(q.body.results[0].successful >= 2);
    assert.equal((await inv.api.get('/api/core/background-tasks/?status=bogus')).status, 400);
    const fin = await inv.api.get('/api/core/background-tasks/?status=finished&limit=1');
    assert.equal(fin.body.results[0].status, 'successful');
    assert.ok(fin.body.next === null || fin.body.next.includes('offset=1'));
  });
});
