import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { escapeHtml, html } from '../../src/ui/html.ts';
import { safeNext } from '../../src/ui/pages/login.ts';
import { uiClient } from './ui-client.ts';

const ADMIN = 'ui-admin-token-0123456789abcdef0123456789';

describe('admin UI html helpers', () => {
  it('escapes every interpolated value', () => {
    const hostile = `<script>alert("x")</script>' onmouseover=x \``;
    const out = html`<td title="${hostile}">${hostile}</td>`.value;
    assert.ok(!out.includes('<script>'));
    assert.equal(out, `<td title="${escapeHtml(hostile)}">${escapeHtml(hostile)}</td>`);
    assert.equal(escapeHtml(`&<>"'\`=`), '&amp;&lt;&gt;&quot;&#39;&#96;&#61;');
    assert.equal(html`${[html`<b>${'<i>'}</b>`, 'x&y']}`.value, '<b>&lt;i&gt;</b>x&amp;y');
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
    assert.match(cookie, /^inventory_ui_session=[A-Za-z0-9_-]{43}; Path=\/ui; HttpOnly; SameSite=Lax/);
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
});
