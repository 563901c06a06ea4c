import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage } from '@svc/testkit';
import { createTemplateEngine, envFilterFor, headerSafe } from '../../src/events/templates.ts';
import { parseHeaderLines } from '../../src/events/headers.ts';
import { deviceEvent, emit, startInventory, startReceiver, until } from './helpers.ts';

describe('template helpers', () => {
  it('env filter reads only allow-listed variables', () => {
    const f = envFilterFor(['WEBHOOK_*'], { WEBHOOK_TOKEN_3: 'tok', OTHER: 'x' });
    assert.equal(f('WEBHOOK_TOKEN_3'), 'tok');
    assert.equal(f('OTHER'), null);
    assert.equal(f('WEBHOOK_MISSING'), null);
  });
  it('header_safe strips control characters', () => {
    assert.equal(headerSafe('a\r\nX-Evil: 1\x7f'), 'aX-Evil: 1');
    assert.equal(headerSafe(null), 'None');
  });
  it('parses header lines as NetBox (splitlines, first colon, strip, last wins)', () => {
    assert.deepEqual(parseHeaderLines('X-A: 1\r\nnocolon\n  X-B :  a:b  \x0bX-A: 2\u2028: empty'), [
      ['X-A', '1'],
      ['X-B', 'a:b'],
      ['X-A', '2'],
      ['', 'empty'],
    ]);
  });
  it('renders with Python semantics and reports syntax errors with the line', () => {
    const e = createTemplateEngine([]);
    assert.equal(e.render('{{ data.name }} is {{ data.status.value }}; {{ none }} {{ 4/2 }}', { data: { name: 'd1', status: { value: 'active' } }, none: null }, 'other'), 'd1 is active; None 2.0');
    assert.throws(() => e.check('ok\n{% if %}', 'other'), /line 2/);
    assert.throws(() => e.check('{{ x | header_safe }}', 'other'), /header_safe/);
    e.check('{{ x | header_safe }}', 'headers');
  });
});

forEachStorage('webhook templates', (kind) => {
  let inv: Awaited<ReturnType<typeof startInventory>>;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    process.env.WEBHOOK_TOKEN_TEST = 'sekret-token';
    inv = await startInventory(kind, { jinjaEnvParams: 'WEBHOOK_TOKEN_*' });
    rx = await startReceiver();
  });
  after(async () => {
    await inv.server.close();
    await rx.close();
  });

  it('renders URL, headers (header_safe, env) and body from the event context', async () => {
    const w = await inv.api.post('/api/extras/webhooks/', {
      name: 'tmpl',
      payload_url: `${rx.url}/devices/{{ data.id }}/{{ event }}?model={{ model }}`,
      http_method: 'PUT',
      http_content_type: 'application/x-custom',
      additional_headers: "Authorization: Bearer {{ 'WEBHOOK_TOKEN_TEST' | env }}\nX-Name: {{ data.name | header_safe }}\n{% for t in data.tags %}X-Tag-{{ loop.index }}: {{ t.slug }}\n{% endfor %}",
      body_template: '{"text": "{{ data.name }} is {{ data.status.value }}", "ts": "{{ timestamp }}", "user": "{{ username }}", "req": "{{ request_id }}", "tags": {{ data.tags|map(attribute=\'slug\')|list|tojson }}, "pre": {{ snapshots.prechange|tojson }}, "extra": "{{ data.site_code }}"}',
    });
    assert.equal(w.status, 201, JSON.stringify(w.body));
    const r = await inv.api.post('/api/extras/event-rules/', {
      name: 'tmpl-rule',
      object_types: ['dcim.device'],
      event_types: ['object_updated'],
      action_object_type: 'extras.webhook',
      action_object_id: w.body.id,
      action_data: { site_code: 'AMS1', name: 'overridden by object data' },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const ev = deviceEvent({
      event: 'updated',
      objectId: 42,
      data: { id: 42, name: 'edge\r\nX-Injected: 1', status: { value: 'active', label: 'Active' }, tags: [{ slug: 'a' }, { slug: 'b' }] },
      snapshots: { prechange: { name: 'old' }, postchange: { name: 'new' } },
    });
    const n = rx.received.length;
    await emit(inv.deps, [ev]);
    await rx.waitFor(n + 1);
    const got = rx.received[n]!;
    assert.equal(got.method, 'PUT');
    assert.equal(got.url, '/devices/42/updated?model=device');
    assert.equal(got.headers['content-type'], 'application/x-custom');
    assert.equal(got.headers.authorization, 'Bearer sekret-token');
    assert.equal(got.headers['x-name'], 'edgeX-Injected: 1');
    assert.equal(got.headers['x-injected'], undefined);
    assert.equal(got.headers['x-tag-1'], 'a');
    assert.equal(got.headers['x-tag-2'], 'b');
    assert.equal(
      got.body.toString(),
      `{"text": "edge\r\nX-Injected: 1 is active", "ts": "${ev.timestamp}", "user": "admin", "req": "${ev.requestId}", "tags": ["a", "b"], "pre": {"name": "old"}, "extra": "AMS1"}`,
    );
    const task = await until(async () => (await inv.api.get(`/api/core/background-tasks/?webhook=${w.body.id}&status=successful`)).body.results[0]);
    const detail = await inv.api.get(`/api/core/background-tasks/${task.id}/`);
    assert.equal(detail.body.attempt_log[0].request.headers.Authorization, 'Bearer ********', 'bearer token masked in the attempt log');
  });

  it('refuses templates with syntax errors, naming the line', async () => {
    const bad = await inv.api.post('/api/extras/webhooks/', { name: 'bad', payload_url: 'http://127.0.0.1:9/', body_template: '{"a": 1}\n{% for x in %}' });
    assert.equal(bad.status, 400);
    assert.match(bad.body.body_template[0], /line 2/);
    const badUrl = await inv.api.post('/api/extras/webhooks/', { name: 'bad2', payload_url: 'http://127.0.0.1:9/{{ data.id ' });
    assert.equal(badUrl.status, 400);
    assert.ok(badUrl.body.payload_url);
    const badHdr = await inv.api.post('/api/extras/webhooks/', { name: 'bad3', payload_url: 'http://127.0.0.1:9/', additional_headers: 'X: {{ a | nosuchfilter }}' });
    assert.equal(badHdr.status, 400);
    assert.ok(badHdr.body.additional_headers);
  });
});

describe('attempt log masking', () => {
  it('masks credentials in headers and URLs', async () => {
    const { maskHeaders, maskUrl } = await import('../../src/events/deliver.ts');
    assert.deepEqual(maskHeaders([['Authorization', 'Bearer abc'], ['X-Api-Key', 'k'], ['X-Plain', 'v']]), [
      ['Authorization', 'Bearer ********'],
      ['X-Api-Key', '********'],
      ['X-Plain', 'v'],
    ]);
    assert.equal(maskUrl('https://bot:pw@hooks.example/x?token=abc&a=1'), 'https://bot:********@hooks.example/x?token=********&a=1');
    assert.equal(maskUrl('http://example.com/plain?a=1'), 'http://example.com/plain?a=1');
  });
});
