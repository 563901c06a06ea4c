import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { client, onOneStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';

const CHROMIUM = '/usr/bin/chromium';
const ADMIN = 'ui-extras-browser-token-0123456789abcdef';
const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Where screenshots go when INVENTORY_UI_SCREENSHOTS names a folder (to look at them); none otherwise. */
const SHOTS = process.env.INVENTORY_UI_SCREENSHOTS;

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the inventory UI browser tests`;
if (skip) console.log(`# SKIP inventory UI browser tests (issue 24's newer pages): ${skip}`);

/**
 * The pages of issue 24's newer models in Chromium: virtual chassis, device bays, the journal tab, config contexts and
 * templates, custom field choice sets, contacts and contact assignments — each list, object page, a form submitted
 * with an error the API reports (shown next to its field or above the form, what was typed kept) and then saved.
 *
 * In the browser on SQLite only, as all-model-pages.test.ts's browser pass: what the browser adds does not depend on
 * the storage, and the server behind these pages is tested over HTTP on both storages: chassis-bays-pages.test.ts
 * (virtual chassis, bays and their errors), journal-pages.test.ts (the journal tab, config contexts merged into the
 * device's rendered config, templates, choice sets, contact assignments), cable-form.test.ts (Connect, choices, ends),
 * and the API's validation of each of these models by the API tests.
 */
describe('inventory UI in a browser: virtual chassis, bays, journal, config, choice sets, contacts, cables', { skip }, () => {
  onOneStorage('newer inventory pages', (storage) => {
    let srv: TestServer;
    let ctx: BrowserContext;
    let userDataDir: string;
    let page: Page;
    let api: ReturnType<typeof client>;
    let base: string;
    const seed: Record<string, any> = {};

    before(async () => {
      srv = await startTestServer('inventory_ui_extras', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN } });
      base = srv.url;
      api = client(base, { authorization: `Token ${ADMIN}` });
      const post = async (url: string, body: unknown) => {
        const r = await api.post(url, body);
        assert.equal(r.status, 201, `${url}: ${r.text}`);
        return r.body;
      };
      seed.site = await post('/api/dcim/sites/', { name: 'Berlin', slug: 'ber' });
      seed.mfr = await post('/api/dcim/manufacturers/', { name: 'Acme', slug: 'acme' });
      seed.type = await post('/api/dcim/device-types/', { manufacturer: seed.mfr.id, model: 'Leaf', slug: 'leaf' });
      seed.chassisType = await post('/api/dcim/device-types/', { manufacturer: seed.mfr.id, model: 'Chassis', slug: 'chassis', subdevice_role: 'parent' });
      seed.role = await post('/api/dcim/device-roles/', { name: 'Switch', slug: 'switch' });
      seed.sw1 = await post('/api/dcim/devices/', { name: 'ber-sw1', site: seed.site.id, device_type: seed.type.id, role: seed.role.id });
      seed.sw2 = await post('/api/dcim/devices/', { name: 'ber-sw2', site: seed.site.id, device_type: seed.type.id, role: seed.role.id });
      seed.chassis = await post('/api/dcim/devices/', { name: 'ber-ch1', site: seed.site.id, device_type: seed.chassisType.id, role: seed.role.id });
      seed.contactRole = await post('/api/tenancy/contact-roles/', { name: 'Operations', slug: 'ops' });
      userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inventory-ui-extras-'));
      ctx = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 } });
      ctx.setDefaultTimeout(10_000);
      page = await ctx.newPage();
      await page.goto(`${base}/ui/login`);
      await page.fill('#f-token', ADMIN);
      await page.click('button[type=submit]');
    });

    after(async () => {
      await ctx?.close();
      if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
      await srv?.close();
    });

    const shot = async (name: string) => {
      if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `extras-${storage}-${name}.png`), fullPage: true });
    };
    /** Runs a step; on failure says where the browser was and what the page showed. */
    const step = async (fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        const said = await page.locator('h1, .errors, [role=alert], .flash, .error').allTextContents().catch(() => []);
        console.log(`# browser was at ${page.url()}: ${JSON.stringify(said).slice(0, 2000)}`);
        throw err;
      }
    };
    const h1 = async () => ((await page.textContent('h1')) ?? '').trim();
    const fieldErrors = async (name: string) => ((await page.locator(`[data-field="${name}"] .errors`).textContent().catch(() => '')) ?? '').trim();
    const formErrors = async () => (await page.locator('form[data-testid=object-form]').evaluate((f) => f.previousElementSibling?.textContent ?? '').catch(() => '')).trim();
    const rowsOf = async () => page.locator('[data-testid=object-table] tbody tr').allTextContents();

    it('virtual chassis: add with a master, the page lists its members, edit keeps the form on an error, the list shows it', () =>
      step(async () => {
        await page.goto(`${base}/dcim/virtual-chassis/`);
        assert.match(await page.title(), /Virtual chassis/i);
        await page.click('[data-testid=add]');
        await page.fill('#f-name', 'ber-stack');
        await page.fill('#f-domain', 'ber.example');
        await page.selectOption('#f-master', { label: 'ber-sw1' });
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'ber-stack');
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /ber\.example/);
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /ber-sw1/, 'members listed');
        const vcPath = new URL(page.url()).pathname;
        await shot('virtual-chassis');
        // Edit: a master that is not a member is refused with NetBox's message, next to the field.
        await page.click('[data-testid=edit]');
        await page.selectOption('#f-master', { label: 'ber-sw2' });
        await page.click('[data-testid=save]');
        assert.match(await fieldErrors('master'), /The selected master \(ber-sw2\) is not assigned to this virtual chassis\./);
        assert.equal(await page.inputValue('#f-domain'), 'ber.example', 'the form keeps its values');
        await page.fill('#f-description', 'two switches');
        await page.selectOption('#f-master', { label: 'ber-sw1' });
        await page.click('[data-testid=save]');
        assert.equal(new URL(page.url()).pathname, vcPath);
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /two switches/);
        // The member's page links the chassis; the list shows its member count.
        await page.goto(`${base}/dcim/devices/${seed.sw1.id}/`);
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /ber-stack/);
        await page.goto(`${base}/dcim/virtual-chassis/?q=ber`);
        const rows = await rowsOf();
        assert.equal(rows.length, 1);
        assert.match(rows[0]!, /ber-stack[\s\S]*ber\.example[\s\S]*ber-sw1[\s\S]*1/);
      }));

    it("device bays: the API's error above the form for a device that cannot hold bays, then a bay on a parent device", () =>
      step(async () => {
        await page.goto(`${base}/dcim/device-bays/add/`);
        await page.selectOption('#f-device', { label: 'ber-sw2' });
        await page.fill('#f-name', 'Slot 1');
        await page.click('[data-testid=save]');
        assert.match(await formErrors(), /This type of device \(Leaf\) does not support device bays\./);
        assert.equal(await page.inputValue('#f-name'), 'Slot 1');
        await page.selectOption('#f-device', { label: 'ber-ch1' });
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'Slot 1');
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /ber-ch1/);
        await page.goto(`${base}/dcim/device-bays/?device_id=${seed.chassis.id}`);
        assert.equal((await rowsOf()).length, 1);
        await page.goto(`${base}/dcim/devices/${seed.chassis.id}/`);
        assert.match((await page.textContent('[data-testid=related]')) ?? '', /Device bays\s*1/);
      }));

    it('journal tab: an empty entry shows the error, an entry is added and listed, the journal entry list shows it', () =>
      step(async () => {
        await page.goto(`${base}/dcim/devices/${seed.sw2.id}/`);
        await page.click('[data-testid=journal-tab]');
        assert.equal(new URL(page.url()).pathname, `/dcim/devices/${seed.sw2.id}/journal/`);
        // The browser's own check would stop an empty textarea; submit it as a person whose browser skips it would.
        await page.locator('[data-testid=journal-form] textarea[name=comments]').evaluate((t) => t.removeAttribute('required'));
        await page.click('[data-testid=journal-form] button[type=submit]');
        assert.match((await page.textContent('[data-testid=journal-error]')) ?? '', /This field may not be blank\./);
        await page.selectOption('[data-testid=journal-form] select[name=kind]', 'warning');
        await page.fill('[data-testid=journal-form] textarea[name=comments]', 'Fan <tray> replaced');
        await page.click('[data-testid=journal-form] button[type=submit]');
        assert.match((await page.textContent('.flash')) ?? '', /Added a journal entry/);
        const journal = (await page.textContent('[data-testid=journal]')) ?? '';
        assert.match(journal, /Warning/);
        assert.equal(await page.locator('[data-testid=journal] .badge').first().getAttribute('class'), 'badge badge-yellow', "NetBox's colour for a warning");
        assert.match(journal, /admin/, 'the author by name');
        assert.match(journal, /Fan <tray> replaced/, 'shown as text, not markup');
        await shot('journal');
        await page.goto(`${base}/extras/journal-entries/`);
        const rows = await rowsOf();
        assert.equal(rows.length, 1);
        await page.locator('[data-testid=object-table] tbody tr a').first().click();
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /Fan <tray> replaced/);
      }));

    it('config contexts: invalid JSON is shown on the field, a context with a site is saved and merged into the device', () =>
      step(async () => {
        await page.goto(`${base}/extras/config-contexts/add/`);
        await page.fill('#f-name', 'ntp-ber');
        await page.fill('#f-weight', '100');
        await page.fill('#f-data', '{"ntp": [');
        await page.selectOption('#f-sites', { label: 'Berlin' });
        await page.click('[data-testid=save]');
        assert.match(await fieldErrors('data'), /Invalid JSON/);
        assert.equal(await page.inputValue('#f-name'), 'ntp-ber');
        await page.fill('#f-data', '{"ntp": ["10.0.0.1"]}');
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'ntp-ber');
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /10\.0\.0\.1/);
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /Berlin/);
        await shot('config-context');
        const dev = (await api.get(`/api/dcim/devices/${seed.sw2.id}/`)).body;
        assert.deepEqual(dev.config_context, { ntp: ['10.0.0.1'] });
        // A weight out of range: the API's message next to the field.
        await page.click('[data-testid=edit]');
        await page.fill('#f-weight', '99999');
        await page.click('[data-testid=save]');
        assert.match(await fieldErrors('weight'), /less than or equal to 32767/);
        await page.goto(`${base}/extras/config-contexts/`);
        assert.match((await rowsOf()).join('\n'), /ntp-ber/);
      }));

    it('config templates: a template is saved from the form, the device renders it on its Render config tab', () =>
      step(async () => {
        await page.goto(`${base}/extras/config-templates/add/`);
        await page.fill('#f-name', 'base-config');
        await page.click('[data-testid=save]');
        assert.ok((await fieldErrors('template_code')).length > 0, 'template code is required');
        await page.fill('#f-template_code', 'hostname {{ device.name }}\n{% for s in ntp %}ntp server {{ s }}\n{% endfor %}');
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'base-config');
        const tplId = Number(new URL(page.url()).pathname.split('/').filter(Boolean).pop());
        await page.goto(`${base}/dcim/devices/${seed.sw2.id}/edit/`);
        await page.selectOption('#f-config_template', { label: 'base-config' });
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'ber-sw2');
        await page.click('[data-testid=render-config-tab]');
        assert.equal((await page.textContent('[data-testid=rendered-config]'))?.trim(), 'hostname ber-sw2\nntp server 10.0.0.1');
        await shot('render-config');
        await page.goto(`${base}/extras/config-templates/`);
        assert.match((await rowsOf()).join('\n'), /base-config/);
        await page.goto(`${base}/extras/config-templates/${tplId}/`);
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /hostname \{\{ device\.name \}\}/);
      }));

    it('custom field choice sets: a set without choices shows NetBox\'s error; saved choices are listed and counted', () =>
      step(async () => {
        await page.goto(`${base}/extras/custom-field-choice-sets/add/`);
        await page.fill('#f-name', 'Tiers');
        await page.click('[data-testid=save]');
        assert.match(await formErrors(), /Must define base or extra choices\./);
        await page.fill('#f-extra_choices', '[["gold", "Gold"], ["bronze", "Bronze"], ["gold", "Again"]]');
        await page.click('[data-testid=save]');
        assert.match(await fieldErrors('extra_choices'), /Duplicate value "gold" found in extra choices\./);
        await page.fill('#f-extra_choices', '[["gold", "Gold"], ["bronze", "Bronze"]]');
        await page.check('#f-order_alphabetically');
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'Tiers');
        const attrs = (await page.textContent('[data-testid=attributes]')) ?? '';
        assert.match(attrs, /bronze \(Bronze\), gold \(Gold\)/, 'pairs, stored sorted by value');
        assert.match(attrs, /Choices\s*2/);
        await shot('choice-set');
        await page.goto(`${base}/extras/custom-field-choice-sets/`);
        const rows = await rowsOf();
        assert.equal(rows.length, 1);
        assert.match(rows[0]!, /Tiers/);
      }));

    it('contacts and contact assignments: an invalid email and an unsupported object type are shown; an assignment links a contact to a device', () =>
      step(async () => {
        await page.goto(`${base}/tenancy/contacts/add/`);
        await page.fill('#f-name', 'Ada Ops');
        await page.fill('#f-email', 'not-an-address');
        await page.click('[data-testid=save]');
        assert.match(await fieldErrors('email'), /Enter a valid email address\./);
        await page.fill('#f-email', 'ada@example.com');
        await page.fill('#f-phone', '+49 30 1234');
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'Ada Ops');
        const contactPath = new URL(page.url()).pathname;
        await page.goto(`${base}/tenancy/contact-assignments/add/`);
        // The object type is picked by label among the types that take contacts (a tag does not).
        const types = await page.locator('#f-object_type option').allTextContents();
        assert.ok(types.includes('DCIM > Device') && !types.includes('Extras > Tag'), types.join(' | '));
        await page.selectOption('#f-object_type', { label: 'DCIM > Device' });
        await page.fill('#f-object_id', '999999');
        await page.selectOption('#f-contact', { label: 'Ada Ops' });
        await page.selectOption('#f-role', { label: 'Operations' });
        await page.selectOption('#f-priority', 'primary');
        await page.click('[data-testid=save]');
        assert.match(await fieldErrors('object_id'), /Related object not found using the provided numeric ID: 999999/);
        assert.equal(await page.inputValue('#f-priority'), 'primary');
        assert.equal(await page.inputValue('#f-object_type'), 'dcim.device', 'the picked type is kept');
        await page.fill('#f-object_id', String(seed.sw1.id));
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'Ada Ops (Operations)');
        assert.match((await page.textContent('[data-testid=attributes]')) ?? '', /ber-sw1/);
        await shot('contact-assignment');
        await page.goto(`${base}/tenancy/contact-assignments/`);
        assert.match((await rowsOf()).join('\n'), /Ada Ops[\s\S]*Operations[\s\S]*Primary/);
        await page.goto(`${base}${contactPath}`);
        assert.match((await page.textContent('[data-testid=related]')) ?? '', /Contact assignments\s*1/);
        // The device is found by its contact through the list's filter.
        const found = (await api.get(`/api/dcim/devices/?contact=${contactPath.split('/')[3]}`)).body;
        assert.deepEqual(found.results.map((d: any) => d.name), ['ber-sw1']);
      }));

    it('cables: Connect from a port, pick the other device and its port after updating the choices, save; the edit form keeps the ends', () =>
      step(async () => {
        const port = async (device: number, name: string) => (await api.post('/api/dcim/interfaces/', { device, name, type: '10gbase-x-sfpp' })).body;
        const a = await port(seed.sw1.id, 'xe-0/0/1');
        await port(seed.sw2.id, 'xe-0/0/0');
        const b = await port(seed.sw2.id, 'xe-0/0/1');
        await page.goto(`${base}/dcim/interfaces/${a.id}/`);
        await page.click('[data-testid=connect]');
        assert.equal(await page.inputValue('#f-a_terminations_type'), 'dcim.interface');
        assert.deepEqual(await page.locator('#f-a_terminations').evaluate((s: HTMLSelectElement) => [...s.selectedOptions].map((o) => o.textContent)), ['xe-0/0/1']);
        await page.selectOption('#f-b_terminations_type', 'dcim.interface');
        await page.click('[data-testid=refresh-choices]');
        await page.selectOption('#f-termination_b_device', { label: 'ber-sw2' });
        await page.fill('#f-label', 'uplink-1');
        await page.click('[data-testid=refresh-choices]');
        assert.equal(await page.inputValue('#f-label'), 'uplink-1', 'updating the choices keeps what was typed');
        await page.selectOption('#f-b_terminations', { label: 'xe-0/0/1' });
        await page.selectOption('#f-status', 'connected');
        await page.click('[data-testid=save]');
        assert.match((await page.textContent('.flash')) ?? '', /Created cable/);
        const attrs = (await page.textContent('[data-testid=attributes]')) ?? '';
        assert.match(attrs, /ber-sw1 › xe-0\/0\/1/);
        assert.match(attrs, /ber-sw2 › xe-0\/0\/1/);
        await shot('cable');
        const cable = (await api.get(`/api/dcim/cables/?label=uplink-1`)).body.results[0];
        assert.deepEqual([cable.a_terminations[0].object_id, cable.b_terminations[0].object_id], [a.id, b.id]);
        await page.click('[data-testid=edit]');
        assert.deepEqual(await page.locator('#f-b_terminations').evaluate((s: HTMLSelectElement) => [...s.selectedOptions].map((o) => o.textContent)), ['xe-0/0/1']);
        assert.equal(await page.locator('#f-b_terminations option:has-text("xe-0/0/0")').getAttribute('disabled'), null, 'a free port is offered');
      }));
  });
});
