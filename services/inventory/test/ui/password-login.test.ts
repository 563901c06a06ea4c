import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { uiClient } from './ui-client.ts';

const ADMIN = 'ui-password-admin-token-0123456789abcdef';

/** NetBox's login with username and password, at NetBox's `/login/` and the UI's `/ui/login`, over HTTP. */
forEachStorage('inventory UI: username/password login', (storage) => {
  let srv: TestServer;
  let api: ReturnType<typeof client>;

  before(async () => {
    srv = await startTestServer('inventory_ui_password', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN, loginRatePerUsername: '3' } });
    api = client(srv.url, { authorization: `Token ${ADMIN}` });
    const user = await api.post('/api/users/users/', { username: 'alice', password: 'correct horse battery', can_write: true });
    assert.equal(user.status, 201, JSON.stringify(user.body));
  });
  after(() => srv?.close());

  it('serves the form at /login/ (and /login redirects there), logs in with username and password, refuses a wrong one', async () => {
    const ui = uiClient(srv.url);
    const bare = await ui.get('/login');
    assert.equal(bare.status, 301);
    assert.equal(bare.location, '/login/');
    const page = await ui.get('/login/?next=%2Fdcim%2Fsites%2F');
    assert.equal(page.status, 200);
    assert.match(page.text, /name="username"/);
    assert.match(page.text, /name="password"/);
    assert.match(page.text, /name="next" value="\/dcim\/sites\/"/);
    const csrf = ui.csrfOf(page.text);
    let r = await ui.post('/ui/login', { csrf_token: csrf, username: 'alice', password: 'wrong', next: '/dcim/sites/' });
    assert.equal(r.status, 400);
    assert.match(r.text, /Invalid username\/password\./);
    assert.match(r.text, /value="alice"/, 'the username stays in the form');
    r = await ui.post('/ui/login', { csrf_token: csrf, username: 'nobody', password: 'x', next: '/dcim/sites/' });
    assert.equal(r.status, 400);
    r = await ui.post('/ui/login', { csrf_token: csrf, username: 'alice', password: '', next: '/dcim/sites/' });
    assert.match(r.text, /Enter your password\./);
    r = await ui.post('/ui/login', { csrf_token: csrf, username: 'alice', password: 'correct horse battery', next: '/dcim/sites/' });
    assert.equal(r.status, 303);
    assert.equal(r.location, '/dcim/sites/');
    const sites = await ui.get('/dcim/sites/');
    assert.equal(sites.status, 200);
    assert.match(sites.text, /alice/);
    // The session's token is alice's, made by the API's provisioning (listed among her tokens).
    const tokens = await api.get('/api/users/tokens/?limit=100');
    assert.ok(tokens.body.results.some((t: any) => t.user.username === 'alice' && t.description === 'Web UI login'));
    // The same form without CSRF is refused.
    const other = uiClient(srv.url);
    await other.get('/login/');
    assert.equal((await other.post('/ui/login', { username: 'alice', password: 'correct horse battery' })).status, 403);
  });

  it('throttles guessing per username (429 with Retry-After on the form)', async () => {
    const ui = uiClient(srv.url);
    const csrf = ui.csrfOf((await ui.get('/login/')).text);
    let last = 0;
    for (let i = 0; i < 5 && last !== 429; i++) last = (await ui.post('/ui/login', { csrf_token: csrf, username: 'bob', password: `guess${i}` })).status;
    assert.equal(last, 429);
    const r = await ui.post('/ui/login', { csrf_token: csrf, username: 'bob', password: 'guess' });
    assert.equal(r.status, 429);
    assert.ok(Number(r.headers.get('retry-after')) > 0);
    assert.match(r.text, /Too many login attempts/);
  });
});
