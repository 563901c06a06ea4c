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
const ADMIN = 'ui-browser-admin-token-0123456789abcdef';
const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the admin UI browser tests`;
if (skip) console.log(`# SKIP admin UI browser tests: ${skip}`);

/** Reloads `page` until `check` passes (the worker delivers in the background). */
async function eventually(page: Page, url: string, check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  // only a failure detector: a loaded CI machine gets at least a minute
  const deadline = Date.now() + Math.max(timeoutMs, 60_000);
  for (;;) {
    await page.goto(url);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} at ${url}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * In the browser on SQLite only, as all-model-pages.test.ts's browser pass: what the browser adds does not depend on
 * the storage, and the server behind the round trip is tested on both storages: the admin pages, their errors and the
 * task actions over HTTP (ui-routes.test.ts), delivery, failure, retries and a manual requeue keeping the webhook-id
 * (events/delivery.test.ts).
 */
describe('admin UI in a browser', { skip }, () => {
  onOneStorage('webhook round trip', (storage) => {
    let srv: TestServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let ctx: BrowserContext;
    let userDataDir: string;
    let page: Page;

    before(async () => {
      receiver = await startReceiver();
      srv = await startTestServer('inventory_ui_browser', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN } });
      userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inventory-ui-chromium-'));
      ctx = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
      ctx.setDefaultTimeout(10_000);
      page = await ctx.newPage();
    });

    after(async () => {
      await ctx?.close();
      if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
      await srv?.close();
      await receiver?.close();
    });

    it('logs in, configures a webhook and a rule, and follows deliveries through failure and retry', async () => {
      try {
        await roundTrip();
      } catch (err) {
        // What the page said is usually the explanation (a form error, a flash, an error page).
        const said = await page.locator('h1, .errors, [role=alert], .flash, .error-message').allTextContents().catch(() => []);
        console.log(`# browser was at ${page.url()}: ${JSON.stringify(said).slice(0, 2000)}`);
        throw err;
      }
    });

    async function roundTrip(): Promise<void> {
      const base = srv.url;
      const api = client(base, { authorization: `Token ${ADMIN}` });

      // Login by token.
      await page.goto(`${base}/`);
      assert.match(page.url(), /\/ui\/login\?next=/);
      await page.fill('#f-token', 'not-a-token');
      await page.click('button[type=submit]');
      assert.match(await page.textContent('[role=alert]') ?? '', /Invalid token/);
      await page.fill('#f-token', ADMIN);
      await page.click('button[type=submit]');
      assert.match(await page.textContent('[data-testid=who]') ?? '', /admin/);

      // A webhook, first with a template error shown next to the field.
      await page.click('nav >> text=Webhooks');
      await page.click('[data-testid=add-webhook]');
      await page.fill('#f-name', 'receiver <main>');
      await page.fill('#f-payload_url', `${receiver.url}/hooks/{{ model }}`);
      await page.fill('#f-body_template', '{"event": "{{ event }}", "name": "{{ data.name }"}');
      await page.fill('#f-max_retries', '0');
      await page.click('button:has-text("Create")');
      const templateError = await page.textContent('[data-field=body_template] .errors');
      assert.ok(templateError && templateError.length > 0, 'template error shown inline');
      assert.equal(await page.inputValue('#f-name'), 'receiver <main>', 'the form keeps what was typed');
      await page.fill('#f-body_template', '{"event": "{{ event }}", "name": "{{ data.name }}", "status": "{{ data.status.value }}"}');
      await page.fill('#f-secret', 's3cret');
      await page.click('button:has-text("Create")');
      await page.waitForSelector('[data-testid=webhook-detail]');
      assert.equal(await page.textContent('h1'), 'Webhook receiver <main>');
      assert.ok(!(await page.content()).includes('s3cret'), 'the secret is never shown');
      const webhookPath = new URL(page.url()).pathname;

      // An event rule, first with a malformed condition.
      await page.click('nav >> text=Event rules');
      await page.click('[data-testid=add-rule]');
      await page.fill('#f-name', 'devices to receiver');
      await page.selectOption('#f-object_types', ['dcim.device']);
      await page.check('input[name=event_types][value=object_created]');
      await page.check('input[name=event_types][value=object_updated]');
      await page.fill('#f-conditions', '{"and": [{"attr": "status.value", "value": "active"');
      await page.selectOption('#f-action_object_id', { label: 'receiver <main>' });
      await page.click('button:has-text("Create")');
      assert.match((await page.textContent('[data-field=conditions] .errors')) ?? '', /Invalid JSON/);
      await page.fill('#f-conditions', '{"and": [{"attr": "status.value", "value": "active", "op": "bogus"}]}');
      await page.click('button:has-text("Create")');
      assert.ok(((await page.textContent('[data-field=conditions] .errors')) ?? '').length > 0, 'the API refuses a malformed condition');
      await page.fill('#f-conditions', '{"and": [{"attr": "status.value", "value": "active"}]}');
      await page.fill('#f-action_data', '{"source": "ui-test"}');
      await page.click('button:has-text("Create")');
      await page.waitForSelector('[data-testid=rule-detail]');

      // A device change through the REST API.
      const site = await api.post('/api/dcim/sites/', { name: 'Site 1', slug: 'site-1' });
      assert.equal(site.status, 201, site.text);
      const mfr = await api.post('/api/dcim/manufacturers/', { name: 'Acme', slug: 'acme' });
      const type = await api.post('/api/dcim/device-types/', { manufacturer: mfr.body.id, model: 'Box', slug: 'box' });
      const role = await api.post('/api/dcim/device-roles/', { name: 'Leaf', slug: 'leaf' });
      const device = await api.post('/api/dcim/devices/', { name: 'dev-1', site: site.body.id, device_type: type.body.id, role: role.body.id, status: 'active' });
      assert.equal(device.status, 201, device.text);

      // It is delivered and listed as successful.
      await eventually(page, `${base}/ui/background-queues/`, async () => (await page.locator('td[data-status=successful] a').first().textContent()) === '1', 'one successful task');
      await page.locator('td[data-status=successful] a').first().click();
      await page.locator('[data-testid=tasks] tbody tr a').first().click();
      assert.equal(await page.locator('.kv [data-status]').first().getAttribute('data-status'), 'successful');
      assert.match((await page.textContent('[data-testid=attempt]')) ?? '', /200/);
      assert.equal(receiver.received.length, 1);
      assert.equal(receiver.received[0]!.url, '/hooks/device');
      assert.deepEqual(JSON.parse(receiver.received[0]!.body), { event: 'created', name: 'dev-1', status: 'active' });

      // The receiver fails: the next change ends as failed with its error log.
      receiver.setFailing(true);
      const changed = await api.patch(`/api/dcim/devices/${device.body.id}/`, { serial: 'SN-<b>1</b>' });
      assert.equal(changed.status, 200, changed.text);
      await eventually(page, `${base}/ui/background-queues/`, async () => (await page.locator('td[data-status=failed] a').first().textContent()) === '1', 'one failed task');
      await page.locator('td[data-status=failed] a').first().click();
      await page.locator('[data-testid=tasks] tbody tr a').first().click();
      const taskUrl = page.url();
      assert.match((await page.textContent('[data-testid=error-log]')) ?? '', /500/);
      assert.match((await page.textContent('[data-testid=attempt-response]')) ?? '', /receiver is down/);

      // Retry after the receiver recovers.
      receiver.setFailing(false);
      await page.click('[data-testid=task-requeue]');
      assert.match((await page.textContent('.flash')) ?? '', /queue/i);
      await eventually(page, taskUrl, async () => (await page.locator('.kv [data-status]').first().getAttribute('data-status')) === 'successful', 'the retried task to succeed');
      assert.equal(await page.locator('[data-testid=attempt]').count(), 2);
      assert.equal(receiver.received.length, 3);
      assert.equal(receiver.received[1]!.headers['webhook-id'], receiver.received[2]!.headers['webhook-id'], 'webhook-id is stable across the retry');

      // The webhook's Deliveries tab lists both tasks.
      await page.goto(`${base}${webhookPath}`);
      await page.click('[data-testid=deliveries-tab]');
      assert.equal(await page.locator('[data-testid=deliveries] tbody tr[data-task]').count(), 2);
      assert.equal(await page.locator('[data-testid=deliveries] [data-status=successful]').count(), 2);
    }
  });
});
