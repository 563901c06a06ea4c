import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { escapeHtml, html } from '../../src/ui/html.ts';
import { safeNext } from '../../src/ui/pages/login.ts';
import { MAX_SESSIONS, SessionStore } from '../../src/ui/session.ts';
import { uiClient } from './ui-client.ts';
import { startReceiver } from './receiver.ts';

const ADMIN = 'ui-admin-token-0123456789abcdef0123456789';

/** Polls until `fn` gives a value; undefined after a minute (a failure detector only, never a measure). */
async function poll<T>(fn: () => Promise<T | undefined>): Promise<T | undefined> {
  const end = Date.now() + 60_000;
  for (;;) {
    const v = await fn();
    if (v !== undefined || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('admin UI html helpers', () => {
  it('escapes every interpolated value', () => {
    const hostile = `<script>alert("x")</script>' onmouseover=x \``;
    const out = html`<td title="${hostile}">${hostile}</td>`.value;
    assert.ok(!out.includes('<script>'));
    assert.equal(out, `<td title="${escapeHtml(hostile)}">${escapeHtml(hostile)}</td>`);
    assert.equal(escapeHtml(`&<>"'\`=`), '&amp;&lt;&gt;&quot;&#39;&#96;&#61;');
    assert.equal(html`${[html`<b>${'<i>'}</b>`, 'x&y']}`.value, '<b>&lt;i&gt;</b>x&amp;y');
  });

  it('keeps logged-in sessions when anonymous ones flood the store, and expires idle ones', () => {
    let now = 1_000_000;
    const store = new SessionStore(() => now);
    const user = store.rotate(store.create(), 'token');
    for (let i = 0; i < MAX_SESSIONS + 50; i++) store.create();
    assert.ok(store.size <= MAX_SESSIONS);
    assert.equal(store.get(user.id)?.apiToken, 'token');
    assert.equal(store.get('not-a-session-id'), undefined);
    now += 13 * 60 * 60 * 1000;
    assert.equal(store.get(user.id), undefined, 'idle for more than 12 hours');
  });

  it('only accepts same-site UI paths after login', () => {
    assert.equal(safeNext('/ui/webhooks/'), '/ui/webhooks/');
    for (const bad of ['https://evil.example/', '//evil.example/', '/ui//evil.example', '/ui/\\evil', '/api/x', '/ui/login?next=x', 42]) assert.equal(safeNext(bad), '/ui/');
  });
});

forEachStorage('admin UI routes', (storage) => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer('inventory_ui', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN } });
  });
  after(() => srv?.close());

  it('redirects / to /ui/ and anonymous pages to the login form', async () => {
    const c = uiClient(srv.url);
    let r = await c.get('/');
    assert.equal(r.status, 302);
    assert.equal(r.location, '/ui/');
    for (const path of ['/ui/', '/ui/webhooks/', '/ui/event-rules/add', '/ui/background-queues/', '/ui/background-tasks/1/']) {
      r = await c.get(path);
      assert.equal(r.status, 303, path);
      assert.equal(r.location, `/ui/login?next=${encodeURIComponent(path)}`, path);
    }
    r = await c.get('/ui/static/admin.css');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type')!, /text\/css/);
  });

  it('logs in with a token into an HttpOnly SameSite=Lax session, rotates the id, logs out', async () => {
    const c = uiClient(srv.url);
    const page = await c.get('/ui/login?next=%2Fui%2Fevent-rules%2F');
    assert.equal(page.status, 200);
    const cookie = page.headers.get('set-cookie')!;
    assert.match(cookie, /^inventory_ui_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax/);
    assert.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    const anonymousId = c.jar.get('inventory_ui_session');
    const csrf = c.csrfOf(page.text);

    let r = await c.post('/ui/login', { csrf_token: csrf, token: 'wrong-token', next: '/ui/event-rules/' });
    assert.equal(r.status, 400);
    assert.match(r.text, /Invalid token\./);

    r = await c.post('/ui/login', { csrf_token: csrf, token: ADMIN, next: '/ui/event-rules/' });
    assert.equal(r.status, 303);
    assert.equal(r.location, '/ui/event-rules/');
    const sessionId = c.jar.get('inventory_ui_session');
    assert.ok(sessionId && sessionId !== anonymousId, 'login issues a fresh session id');

    // The pre-login id grants nothing.
    const planted = await fetch(`${srv.url}/ui/background-queues/`, { redirect: 'manual', headers: { cookie: `inventory_ui_session=${anonymousId}` } });
    assert.equal(planted.status, 303);

    r = await c.get('/ui/login');
    assert.equal(r.status, 303, 'a logged-in user is sent on from the login page');

    const home = await c.get('/ui/background-queues/');
    assert.match(home.text, /data-testid="who">admin \(admin\)</);
    r = await c.post('/ui/logout', { csrf_token: c.csrfOf(home.text) });
    assert.equal(r.status, 303);
    assert.equal(r.location, '/ui/login');
    const after = await fetch(`${srv.url}/ui/background-queues/`, { redirect: 'manual', headers: { cookie: `inventory_ui_session=${sessionId}` } });
    assert.equal(after.status, 303, 'the old session is gone after logout');
  });

  it('refuses posts without the session CSRF token or from another origin', async () => {
    const c = uiClient(srv.url);
    let r = await c.post('/ui/login', { token: ADMIN });
    assert.equal(r.status, 403);
    assert.match(r.text, /CSRF verification failed/);
    await c.login(ADMIN);
    const page = await c.get('/ui/background-queues/');
    const csrf = c.csrfOf(page.text);
    r = await c.post('/ui/webhooks/add', { name: 'x', payload_url: 'http://127.0.0.1/' });
    assert.equal(r.status, 403);
    r = await c.post('/ui/webhooks/add', { csrf_token: 'A'.repeat(43), name: 'x', payload_url: 'http://127.0.0.1/' });
    assert.equal(r.status, 403);
    r = await c.post('/ui/logout', { csrf_token: csrf }, { origin: 'https://evil.example' });
    assert.equal(r.status, 403);
    assert.match(r.text, /another site/);
    // Another session's token is no good either.
    const other = uiClient(srv.url);
    const otherPage = await other.get('/ui/login');
    r = await c.post('/ui/logout', { csrf_token: other.csrfOf(otherPage.text) });
    assert.equal(r.status, 403);
    // Still logged in.
    r = await c.get('/ui/background-queues/');
    assert.notEqual(r.status, 303);
  });

  it('escapes hostile names everywhere they are shown', async () => {
    const api = client(srv.url, { authorization: `Token ${ADMIN}` });
    const receiver = await startReceiver();
    try {
      const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>'"`;
      const wh = await api.post('/api/extras/webhooks/', { name: `hook ${evil}`, payload_url: `${receiver.url}/x`, description: evil, max_retries: 0 });
      assert.equal(wh.status, 201, wh.text);
      const rule = await api.post('/api/extras/event-rules/', { name: `rule ${evil}`, object_types: ['dcim.site'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: wh.body.id, description: evil, action_data: { note: evil } });
      assert.equal(rule.status, 201, rule.text);
      const site = await api.post('/api/dcim/sites/', { name: `site ${evil}`.slice(0, 100), slug: 'evil-site', description: evil });
      assert.equal(site.status, 201, site.text);

      const c = uiClient(srv.url);
      await c.login(ADMIN);
      const taskId = await poll(async () => /data-task="(\d+)"/.exec((await c.get(`/ui/webhooks/${wh.body.id}/deliveries/`)).text)?.[1]);
      assert.ok(taskId, 'the site change produced a delivery');
      const pages = ['/ui/webhooks/', `/ui/webhooks/${wh.body.id}/`, `/ui/webhooks/${wh.body.id}/edit`, `/ui/webhooks/${wh.body.id}/deliveries/`, '/ui/event-rules/', `/ui/event-rules/${rule.body.id}/`, `/ui/event-rules/${rule.body.id}/edit`, `/ui/background-tasks/${taskId}/`];
      for (const path of pages) {
        const r = await c.get(path);
        assert.equal(r.status, 200, path);
        assert.ok(!r.text.includes('<script>') && !r.text.includes('<img src=x'), `raw markup leaked on ${path}`);
        assert.ok(r.text.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'), `escaped name shown on ${path}`);
      }
      // Delivered before the receiver goes (a later test uses the successful task; with no retries a closed receiver fails it).
      const delivered = await poll(async () => {
        const st = /<th>Status<\/th><td><span class="badge [^"]+" data-status="(\w+)"/.exec((await c.get(`/ui/background-tasks/${taskId}/`)).text)?.[1];
        return st === 'successful' || st === 'failed' ? st : undefined;
      });
      assert.equal(delivered, 'successful');
    } finally {
      await receiver.close();
    }
  });

  it('shows template and condition errors next to the fields and keeps the input', async () => {
    const c = uiClient(srv.url);
    await c.login(ADMIN);
    let page = await c.get('/ui/webhooks/add');
    let r = await c.post('/ui/webhooks/add', { csrf_token: c.csrfOf(page.text), name: 'broken', payload_url: 'http://127.0.0.1:9/{{ data.name', http_method: 'POST', http_content_type: 'application/json', body_template: '{% for x in %}', timeout: 'soon' });
    assert.equal(r.status, 400);
    assert.match(r.text, /data-field="timeout">[\s\S]*?<ul class="errors"><li>Enter a whole number\.<\/li>/);
    page = r;
    r = await c.post('/ui/webhooks/add', { csrf_token: c.csrfOf(page.text), name: 'broken', payload_url: 'http://127.0.0.1:9/{{ data.name', http_method: 'POST', http_content_type: 'application/json', body_template: '{% for x in %}' });
    assert.equal(r.status, 400);
    assert.match(r.text, /data-field="payload_url">[\s\S]*?<ul class="errors"><li>[^<]+<\/li>/);
    assert.match(r.text, /data-field="body_template">[\s\S]*?<ul class="errors"><li>[^<]*line 1[^<]*<\/li>/i);
    assert.match(r.text, /<textarea id="f-body_template" name="body_template" rows="8" spellcheck="false">\{% for x in %\}<\/textarea>/);

    page = await c.get('/ui/event-rules/add');
    r = await c.post('/ui/event-rules/add', { csrf_token: c.csrfOf(page.text), name: 'bad rule', object_types: ['dcim.device'], event_types: ['object_created'], conditions: '{"attr": "name"}', action_object_id: '', action_data: '[1]' });
    assert.equal(r.status, 400);
    assert.match(r.text, /data-field="action_object_id">[\s\S]*?Select a webhook\./);
    assert.match(r.text, /data-field="action_data">[\s\S]*?must be a JSON object/);
  });

  it('lets non-admins look but not change, and hides background tasks from them', async () => {
    const api = client(srv.url, { authorization: `Token ${ADMIN}` });
    const user = await api.post('/api/users/users/', { username: 'viewer', can_write: true });
    assert.equal(user.status, 201, user.text);
    const tok = await api.post('/api/users/tokens/', { user: user.body.id, key: 'viewer-token-0123456789' });
    assert.equal(tok.status, 201, tok.text);
    const c = uiClient(srv.url);
    const login = await c.login('viewer-token-0123456789');
    assert.equal(login.status, 303);
    let r = await c.get('/ui/');
    assert.equal(r.location, '/ui/webhooks/');
    r = await c.get('/ui/webhooks/');
    assert.equal(r.status, 200);
    assert.ok(!r.text.includes('Add a webhook'));
    assert.ok(!r.text.includes('Background Tasks'));
    for (const path of ['/ui/webhooks/add', '/ui/event-rules/add', '/ui/background-queues/', '/ui/background-tasks/1/', '/ui/webhooks/1/deliveries/']) {
      r = await c.get(path);
      assert.equal(r.status, 403, path);
    }
    const csrf = c.csrfOf((await c.get('/ui/webhooks/')).text);
    r = await c.post('/ui/webhooks/add', { csrf_token: csrf, name: 'nope', payload_url: 'http://127.0.0.1:9/' });
    assert.equal(r.status, 403);
    r = await c.post('/ui/background-tasks/1/delete', { csrf_token: csrf });
    assert.equal(r.status, 403);
    const list = await api.get('/api/extras/webhooks/?name=nope');
    assert.equal(list.body.count, 0);
  });

  it('answers unknown pages and ids with HTML 404s, and task actions report their outcome', async () => {
    const c = uiClient(srv.url);
    await c.login(ADMIN);
    for (const path of ['/ui/nowhere', '/ui/webhooks/999999/', '/ui/webhooks/abc/', '/ui/event-rules/0/', '/ui/background-tasks/999999/', '/ui/background-queues/default/bogus/']) {
      const r = await c.get(path);
      assert.equal(r.status, 404, path);
      assert.match(r.headers.get('content-type')!, /text\/html/, path);
    }
    const started = await c.get('/ui/background-queues/default/started/');
    assert.equal(started.location, '/ui/background-queues/default/sent/', "RQ's status names lead to ours");
    const page = await c.get('/ui/background-queues/');
    const csrf = c.csrfOf(page.text);
    let r = await c.post('/ui/background-tasks/999999/requeue', { csrf_token: csrf });
    assert.equal(r.status, 404);
    // A successful task can be neither requeued nor stopped, and can be deleted.
    const list = await c.get('/ui/background-queues/default/successful/');
    const id = /data-task="(\d+)"/.exec(list.text)?.[1];
    assert.ok(id, 'an earlier test left a successful task');
    r = await c.post(`/ui/background-tasks/${id}/stop`, { csrf_token: csrf });
    assert.equal(r.status, 303);
    assert.match((await c.get(r.location!)).text, /flash-error[^>]*>Failed to stop job/);
    r = await c.post(`/ui/background-tasks/${id}/delete`, { csrf_token: csrf });
    assert.equal(r.location, '/ui/background-queues/');
    assert.match((await c.get(r.location!)).text, /has been deleted/);
    assert.equal((await c.get(`/ui/background-tasks/${id}/`)).status, 404);
  });

  it('stops a task waiting for its next try, then retries it to success', async () => {
    const api = client(srv.url, { authorization: `Token ${ADMIN}` });
    const receiver = await startReceiver();
    try {
      receiver.setFailing(true);
      const wh = await api.post('/api/extras/webhooks/', { name: 'retrying hook', payload_url: `${receiver.url}/tags`, max_retries: 3 });
      assert.equal(wh.status, 201, wh.text);
      const rule = await api.post('/api/extras/event-rules/', { name: 'tags', object_types: ['extras.tag'], event_types: ['object_created'], action_object_type: 'extras.webhook', action_object_id: wh.body.id });
      assert.equal(rule.status, 201, rule.text);
      assert.equal((await api.post('/api/extras/tags/', { name: 'Red', slug: 'red' })).status, 201);

      const c = uiClient(srv.url);
      await c.login(ADMIN);
      const id = await poll(async () => /data-task="(\d+)"/.exec((await c.get('/ui/background-queues/default/scheduled/')).text)?.[1]);
      assert.ok(id, 'the failed first try leaves the task scheduled for a retry');
      let detail = await c.get(`/ui/background-tasks/${id}/`);
      assert.match(detail.text, /data-testid="task-stop"/);
      assert.doesNotMatch(detail.text, /data-testid="task-requeue"/);
      assert.match(detail.text, /data-testid="error-log">\[attempt 1 at [^\]]+\] [^<]*500/);

      let r = await c.post(`/ui/background-tasks/${id}/stop`, { csrf_token: c.csrfOf(detail.text) });
      assert.equal(r.status, 303);
      detail = await c.get(r.location!);
      assert.match(detail.text, /has been stopped/);
      assert.match(detail.text, /data-status="stopped"/);
      assert.match(detail.text, /data-testid="task-requeue"/);
      assert.doesNotMatch(detail.text, /data-testid="task-stop"/);

      receiver.setFailing(false);
      r = await c.post(`/ui/background-tasks/${id}/requeue`, { csrf_token: c.csrfOf(detail.text) });
      assert.match((await c.get(r.location!)).text, /has been re-enqueued/);
      const status = await poll(async () => {
        const s = /<th>Status<\/th><td><span class="badge [^"]+" data-status="(\w+)"/.exec((await c.get(`/ui/background-tasks/${id}/`)).text)?.[1];
        return s === 'successful' ? s : undefined;
      });
      assert.equal(status, 'successful');
      const queues = await c.get('/ui/background-queues/');
      assert.match(queues.text, /data-status="stopped"><a href="\/ui\/background-queues\/default\/stopped\/">0<\/a>/);
    } finally {
      await receiver.close();
    }
  });
});

