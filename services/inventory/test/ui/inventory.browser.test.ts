import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { client, onOneStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';
import { startReceiver } from './receiver.ts';

const CHROMIUM = '/usr/bin/chromium';
const ADMIN = 'ui-inventory-browser-token-0123456789ab';
const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Where screenshots go when INVENTORY_UI_SCREENSHOTS names a folder (to look at them); none otherwise. */
const SHOTS = process.env.INVENTORY_UI_SCREENSHOTS;

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the inventory UI browser tests`;
if (skip) console.log(`# SKIP inventory UI browser tests: ${skip}`);

/**
 * In the browser on SQLite only, as all-model-pages.test.ts's browser pass: what the browser adds does not depend on
 * the storage, and the server behind these steps is tested over HTTP on both storages by inventory-pages.test.ts (forms
 * with the API's errors, CSV import, bulk edit, the change log's diffs, delete with confirmation, read-only sessions)
 * and all-model-pages.test.ts (every model's forms and pages, the webhooks of their changes).
 */
describe('inventory UI in a browser', { skip }, () => {
  onOneStorage('a person builds a device and its interfaces from the UI', (storage) => {
    let srv: TestServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let ctx: BrowserContext;
    let userDataDir: string;
    let page: Page;

    before(async () => {
      receiver = await startReceiver();
      srv = await startTestServer('inventory_ui_objects', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN, webhookAllow: '127.0.0.0/8' } });
      userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inventory-ui-objects-'));
      ctx = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 } });
      ctx.setDefaultTimeout(10_000);
      page = await ctx.newPage();
    });

    after(async () => {
      await ctx?.close();
      if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
      await srv?.close();
      await receiver?.close();
    });

    const shot = async (name: string) => {
      if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `${storage}-${name}.png`), fullPage: true });
    };

    it('creates a site, device type and device, imports 100 interfaces, edits them in bulk, follows a webhook display_url, reads the change log', async () => {
      try {
        await journey();
      } catch (err) {
        const said = await page.locator('h1, .errors, [role=alert], .flash, .error-message').allTextContents().catch(() => []);
        console.log(`# browser was at ${page.url()}: ${JSON.stringify(said).slice(0, 2000)}`);
        throw err;
      }
    });

    async function journey(): Promise<void> {
      const base = srv.url;
      const api = client(base, { authorization: `Token ${ADMIN}` });
      // A webhook for new devices, set up through the API; its payload carries the device's display_url.
      const wh = await api.post('/api/extras/webhooks/', { name: 'to receiver', payload_url: `${receiver.url}/hook`, http_method: 'POST' });
      assert.equal(wh.status, 201, wh.text);
      const rule = await api.post('/api/extras/event-rules/', { name: 'devices', object_types: ['dcim.device'], event_types: ['object_created'], action_type: 'webhook', action_object_type: 'extras.webhook', action_object_id: wh.body.id });
      assert.equal(rule.status, 201, rule.text);

      // Following a link while logged out leads through the login back to the page.
      await page.goto(`${base}/dcim/sites/`);
      assert.match(page.url(), /\/ui\/login\?next=%2Fdcim%2Fsites%2F/);
      await page.fill('#f-token', ADMIN);
      await page.click('button[type=submit]');
      assert.equal(new URL(page.url()).pathname, '/dcim/sites/');

      // A site from the form.
      await page.click('[data-testid=add]');
      await page.fill('#f-name', 'Amsterdam 1');
      await page.fill('#f-slug', 'ams1');
      await page.selectOption('#f-status', 'active');
      await page.click('[data-testid=save]');
      assert.equal(await page.textContent('h1'), 'Amsterdam 1');
      await shot('site');

      // A manufacturer, a device type (after seeing the API's error next to the field) and a role.
      await page.goto(`${base}/dcim/manufacturers/add/`);
      await page.fill('#f-name', 'Acme');
      await page.fill('#f-slug', 'acme');
      await page.click('[data-testid=save]');
      await page.goto(`${base}/dcim/device-types/add/`);
      await page.selectOption('#f-manufacturer', { label: 'Acme' });
      await page.fill('#f-model', 'Switch 48');
      await page.fill('#f-slug', 'switch 48');
      await page.click('[data-testid=save]');
      assert.ok(((await page.textContent('[data-field=slug] .errors')) ?? '').length > 0, 'the slug error is shown next to the field');
      assert.equal(await page.inputValue('#f-model'), 'Switch 48', 'the form keeps what was typed');
      await page.fill('#f-slug', 'switch-48');
      await page.click('[data-testid=save]');
      assert.equal(await page.textContent('h1'), 'Switch 48');
      await page.goto(`${base}/dcim/device-roles/add/`);
      await page.fill('#f-name', 'Access');
      await page.fill('#f-slug', 'access');
      await page.click('[data-testid=save]');

      // The device.
      await page.goto(`${base}/dcim/devices/add/`);
      await page.fill('#f-name', 'ams1-sw1');
      await page.selectOption('#f-device_type', { label: 'Switch 48' });
      await page.selectOption('#f-role', { label: 'Access' });
      await page.selectOption('#f-site', { label: 'Amsterdam 1' });
      await page.click('[data-testid=save]');
      assert.equal(await page.textContent('h1'), 'ams1-sw1');
      const devicePath = new URL(page.url()).pathname;
      await shot('device');

      // 100 interfaces from CSV, the device named as NetBox's import form takes it.
      await page.goto(`${base}/dcim/interfaces/import/`);
      const csv = ['device,name,type,enabled', ...Array.from({ length: 100 }, (_, i) => `ams1-sw1,ge-0/0/${i},1000base-t,true`)].join('\n');
      await page.fill('#f-data', csv);
      await page.click('[data-testid=submit-import]');
      assert.match((await page.textContent('.flash')) ?? '', /Imported 100 interfaces/);
      assert.equal((await api.get('/api/dcim/interfaces/?device=ams1-sw1&limit=1')).body.count, 100);

      // Bulk edit: filter the list, select the rows, set the MTU and a description.
      await page.goto(`${base}/dcim/interfaces/?device=ams1-sw1&name__isw=ge-0/0/1&per_page=100`);
      const boxes = page.locator('input[name=pk]');
      const n = await boxes.count();
      assert.equal(n, 11, 'ge-0/0/1 and ge-0/0/10..19');
      for (let i = 0; i < n; i++) await boxes.nth(i).check();
      await shot('interfaces-selected');
      await page.click('[data-testid=bulk-edit]');
      await page.fill('#f-mtu', '9216');
      await page.fill('#f-description', 'uplink block');
      await page.click('[data-testid=apply]');
      assert.match((await page.textContent('.flash')) ?? '', /Updated 11 interfaces/);
      const edited = await api.get('/api/dcim/interfaces/?mtu=9216&limit=100');
      assert.equal(edited.body.count, 11);
      assert.ok(edited.body.results.every((i: any) => i.description === 'uplink block'));

      // The webhook for the device carries display_url; following it opens the device's page.
      const deadline = Date.now() + 60_000;
      while (!receiver.received.some((r) => r.url === '/hook') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const payload = JSON.parse(receiver.received.find((r) => r.url === '/hook')!.body);
      assert.equal(payload.data.name, 'ams1-sw1', JSON.stringify(payload).slice(0, 600));
      // NetBox serialises event data without a request: URLs are site-relative, resolved against the UI's address.
      assert.equal(payload.data.display_url, devicePath);
      await page.goto(new URL(payload.data.display_url, base).href);
      assert.equal(await page.textContent('h1'), 'ams1-sw1');
      assert.match((await page.textContent('[data-testid=related]')) ?? '', /Interfaces\s*100/);

      // The change log of one edited interface, with its diff.
      const one = edited.body.results[0];
      await page.goto(`${base}/dcim/interfaces/${one.id}/`);
      await page.click('[data-testid=changelog-tab]');
      const log = (await page.textContent('[data-testid=changelog]')) ?? '';
      assert.match(log, /mtu: null → 9216/);
      assert.match(log, /Created/);
      await shot('changelog');

      // Delete asks first.
      await page.goto(`${base}/dcim/interfaces/${one.id}/`);
      await page.click('[data-testid=delete]');
      assert.match((await page.textContent('[data-testid=confirm-text]')) ?? '', /Are you sure/);
      await page.click('[data-testid=confirm-delete]');
      assert.equal((await api.get(`/api/dcim/interfaces/${one.id}/`)).status, 404);

      // Without write permission: the pages show, the actions do not, and the forms answer 403.
      const user = await api.post('/api/users/users/', { username: 'reader', password: 'a-long-password-1234' });
      const tok = await api.post('/api/users/tokens/', { user: user.body.id, write_enabled: false });
      await ctx.clearCookies();
      await page.goto(`${base}/dcim/devices/`);
      await page.fill('#f-token', tok.body.key);
      await page.click('button[type=submit]');
      assert.equal(await page.locator('[data-testid=add]').count(), 0);
      assert.equal(await page.locator('input[name=pk]').count(), 0);
      await page.goto(`${base}${devicePath}`);
      assert.equal(await page.textContent('h1'), 'ams1-sw1');
      assert.equal(await page.locator('[data-testid=edit]').count(), 0);
      const res = await page.goto(`${base}${devicePath}edit/`);
      assert.equal(res?.status(), 403);
      await shot('read-only');
    }
  });
});
