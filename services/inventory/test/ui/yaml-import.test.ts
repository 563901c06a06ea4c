import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { client, forEachStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { uiClient } from './ui-client.ts';

const ADMIN = 'ui-yaml-import-admin-token-0123456789ab';

/** NetBox's YAML bulk import on the list pages: a list, or one object per document; bad YAML and alias bombs refused. */
forEachStorage('inventory UI: YAML bulk import', (storage) => {
  let srv: TestServer;
  let api: ReturnType<typeof client>;
  let ui: ReturnType<typeof uiClient>;
  let csrf: string;

  before(async () => {
    srv = await startTestServer('inventory_ui_yaml', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN } });
    api = client(srv.url, { authorization: `Token ${ADMIN}` });
    ui = uiClient(srv.url);
    assert.equal((await ui.login(ADMIN)).status, 303);
    const page = await ui.get('/dcim/sites/import/');
    assert.match(page.text, /<option value="yaml"/);
    csrf = ui.csrfOf(page.text);
  });
  after(() => srv?.close());

  it('imports a YAML list and multi-document YAML, related objects by name', async () => {
    let r = await ui.post('/dcim/sites/import/', { csrf_token: csrf, format: 'yaml', data: '- name: Berlin\n  slug: berlin\n  status: planned\n- name: Paris\n  slug: paris\n  description: "2024-01-01"\n' });
    assert.equal(r.status, 303, r.text.slice(0, 500));
    r = await ui.post('/dcim/sites/import/', { csrf_token: csrf, format: 'yaml', data: '---\nname: Oslo\nslug: oslo\n---\nname: Rome\nslug: rome\ntags: []\n' });
    assert.equal(r.status, 303, r.text.slice(0, 500));
    const sites = (await api.get('/api/dcim/sites/?ordering=name')).body.results;
    assert.deepEqual(sites.map((s: any) => s.name), ['Berlin', 'Oslo', 'Paris', 'Rome']);
    assert.equal(sites[0].status.value, 'planned');
    assert.equal(sites[2].description, '2024-01-01');
  });

  it('refuses bad YAML, non-mappings, API errors and alias bombs with the form and a message (never 5xx), importing nothing', async () => {
    const bomb = ['a: &a ["x","x","x","x","x","x","x","x","x"]', ...Array.from({ length: 9 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9).fill(`*${String.fromCharCode(97 + i)}`).join(',')}]`), 'name: boom', 'slug: boom'].join('\n');
    for (const [data, message] of [
      ['- name: [unclosed\n', /Invalid YAML/],
      ['- just a string\n', /must be a mapping/],
      ['- name: Lisbon\n', /slug: This field is required/],
      ['name: X\nname: Y\nslug: x\n', /Invalid YAML/],
      [bomb, /Invalid YAML/],
      ['', /No records to import/],
    ] as const) {
      const r = await ui.post('/dcim/sites/import/', { csrf_token: csrf, format: 'yaml', data });
      assert.equal(r.status, 400, `${data.slice(0, 40)}: ${r.status}`);
      assert.match(r.text, message);
    }
    assert.equal((await api.get('/api/dcim/sites/?name=Lisbon')).body.count, 0);
    assert.equal((await api.get('/api/dcim/sites/?name=boom')).body.count, 0);
  });
});
