import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { client, onOneStorage, startTestServer, type TestServer } from '@svc/testkit';
import { buildApp } from '../../src/app.ts';

const CHROMIUM = '/usr/bin/chromium';
const ADMIN = 'ui-person-paths-token-0123456789abcdef';
const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Where screenshots go when INVENTORY_UI_SCREENSHOTS names a folder (to look at them); none otherwise. */
const SHOTS = process.env.INVENTORY_UI_SCREENSHOTS;
const ALICE_PASSWORD = 'correct horse battery staple';
const BOB_PASSWORD = 'bob reads but never writes';

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the inventory UI browser tests`;
if (skip) console.log(`# SKIP inventory UI browser tests (a person's paths): ${skip}`);

/**
 * Issue 24's paths of a person in Chromium that inventory.browser.test.ts does not walk: the admin pages' fixes (the
 * event-rule Action column, the object-type picker's labels, delete asking first), logging in with username and
 * password, global search from the navigation, bulk delete with its confirmation, cables imported by device and port
 * name, the change log list and a change's diff, the user's API tokens (create, revoke) and a user without write or
 * view permission refused.
 *
 * In the browser on SQLite only, as all-model-pages.test.ts's browser pass: what the browser adds (clicks, forms as
 * a person fills them, confirmations, navigation) does not depend on the storage, and what the server does behind each
 * path is tested over HTTP on both storages: password-login.test.ts (username/password login), inventory-pages.test.ts
 * (global search, bulk delete with confirmation, the change log and a change's diff, API tokens, read-only users),
 * cable-form.test.ts (cables imported by device and port name), ui-routes.test.ts (the admin pages), and the custom
 * fields' typed values and validation through the API (custom-fields.test.ts).
 */
describe("inventory UI in a browser: a person's paths", { skip }, () => {
  onOneStorage("a person's paths", (storage) => {
    let srv: TestServer;
    let ctx: BrowserContext;
    let userDataDir: string;
    let page: Page;
    let api: ReturnType<typeof client>;
    let base: string;
    const seed: Record<string, any> = {};

    before(async () => {
      srv = await startTestServer('inventory_ui_paths', storage, (cfg) => buildApp(cfg), { flags: { adminToken: ADMIN, webhookAllow: '127.0.0.0/8' } });
      base = srv.url;
      api = client(base, { authorization: `Token ${ADMIN}` });
      const post = async (url: string, body: unknown) => {
        const r = await api.post(url, body);
        assert.equal(r.status, 201, `${url}: ${r.text}`);
        return r.body;
      };
      seed.alice = await post('/api/users/users/', { username: 'alice', password: ALICE_PASSWORD, can_write: true });
      seed.bob = await post('/api/users/users/', { username: 'bob', password: BOB_PASSWORD });
      seed.site = await post('/api/dcim/sites/', { name: 'Paris 2', slug: 'par2' });
      seed.mfr = await post('/api/dcim/manufacturers/', { name: 'Acme', slug: 'acme' });
      seed.type = await post('/api/dcim/device-types/', { manufacturer: seed.mfr.id, model: 'Edge 24', slug: 'edge-24' });
      seed.role = await post('/api/dcim/device-roles/', { name: 'Edge', slug: 'edge' });
      [seed.r1, seed.r2] = await post('/api/dcim/devices/', [
        { name: 'par2-edge1', site: seed.site.id, device_type: seed.type.id, role: seed.role.id },
        { name: 'par2-edge2', site: seed.site.id, device_type: seed.type.id, role: seed.role.id },
      ]);
      await post('/api/dcim/interfaces/', [seed.r1, seed.r2].flatMap((d) => Array.from({ length: 6 }, (_, i) => ({ device: d.id, name: `xe-0/0/${i}`, type: '10gbase-x-sfpp' }))));
      seed.webhook = await post('/api/extras/webhooks/', { name: 'noc <hook>', payload_url: 'http://127.0.0.1:9/hook' });
      const tiers = await post('/api/extras/custom-field-choice-sets/', { name: 'Tiers', extra_choices: [['gold', 'Gold'], ['silver', 'Silver']] });
      await post('/api/extras/custom-fields/', [
        { name: 'owner', label: 'Owner', type: 'text', object_types: ['dcim.device'], weight: 10, description: 'Team that runs it' },
        { name: 'tier', type: 'select', choice_set: tiers.id, object_types: ['dcim.device'], weight: 20 },
        { name: 'rack_units', type: 'integer', object_types: ['dcim.device'], weight: 30, validation_maximum: 48 },
        { name: 'monitored', type: 'boolean', object_types: ['dcim.device'], weight: 40 },
        { name: 'secret', type: 'text', object_types: ['dcim.device'], ui_editable: 'hidden' },
      ]);
      userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'inventory-ui-paths-'));
      ctx = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 } });
      ctx.setDefaultTimeout(10_000);
      page = await ctx.newPage();
    });

    after(async () => {
      await ctx?.close();
      if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
      await srv?.close();
    });

    const shot = async (name: string) => {
      if (SHOTS) await page.screenshot({ path: path.join(SHOTS, `paths-${storage}-${name}.png`), fullPage: true });
    };
    /** Runs a step; on failure says where the browser was and what the page showed. */
    const step = async (fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        const said = await page.locator('h1, .errors, [role=alert], .flash, .error-message').allTextContents().catch(() => []);
        console.log(`# browser was at ${page.url()}: ${JSON.stringify(said).slice(0, 2000)}`);
        throw err;
      }
    };
    const h1 = async () => ((await page.textContent('h1')) ?? '').trim();
    const flashText = async () => ((await page.locator('.flash').allTextContents()).join(' ')).trim();
    const pathname = () => new URL(page.url()).pathname;
    /** The navigation's highlighted entries. */
    const activeNav = async () => (await page.locator('nav a.active').allTextContents()).map((t) => t.trim()).join(', ');
    /** Logs out through the navigation's button (a fresh session for the next login). */
    const logOut = async () => {
      await page.click('nav form button[type=submit]');
      assert.equal(pathname(), '/ui/login');
    };

    it("admin pages: the object-type picker shows labels only, the Action column names the webhook, and delete asks first", () =>
      step(async () => {
        await page.goto(`${base}/ui/event-rules/add`);
        assert.match(page.url(), /\/ui\/login\?next=/);
        await page.fill('#f-token', ADMIN);
        await page.click('button[type=submit]');
        assert.equal(pathname(), '/ui/event-rules/add');
        // Every option reads as NetBox's ContentType label ("DCIM > Device"), none as a raw `app.model`.
        const labels = await page.locator('#f-object_types option').allTextContents();
        assert.ok(labels.length > 20, `${labels.length} object types offered`);
        const odd = labels.filter((l) => !/^[A-Z][A-Za-z]* > [A-Z][A-Za-z0-9 ]*$/.test(l.trim()));
        assert.deepEqual(odd, [], 'labels that are not "App > Model"');
        assert.ok(labels.includes('DCIM > Device') && labels.includes('IPAM > IP address'), labels.join(' | '));
        const values = await page.locator('#f-object_types option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
        assert.ok(values.every((v) => /^[a-z]+\.[a-z][a-z0-9]*$/.test(v)), `the values are the object types: ${values.filter((v) => !/^[a-z]+\.[a-z][a-z0-9]*$/.test(v)).join()}`);
        await page.fill('#f-name', 'devices to noc');
        await page.selectOption('#f-object_types', [{ label: 'DCIM > Device' }, { label: 'DCIM > Interface' }]);
        await page.check('input[name=event_types][value=object_created]');
        await page.selectOption('#f-action_object_id', { label: 'noc <hook>' });
        await shot('event-rule-form');
        await page.click('form.edit-form button[type=submit]');
        assert.match(await h1(), /devices to noc/);
        const detail = (await page.textContent('[data-testid=rule-detail]')) ?? '';
        assert.match(detail, /DCIM > Device, DCIM > Interface/);
        assert.match(detail, /Webhook: noc <hook>/);
        assert.match(detail, /Event types\s*Object created/, 'event types by their labels');
        const rulePath = pathname();
        // The list's Action column: the action type's label and the webhook by name, never "[object Object]".
        await page.goto(`${base}/ui/event-rules/`);
        const row = (await page.locator('[data-testid=event-rules] tbody tr').first().textContent()) ?? '';
        assert.doesNotMatch(row, /object Object/);
        const actionCell = ((await page.locator('[data-testid=event-rules] tbody tr td').nth(4).textContent()) ?? '').trim();
        assert.equal(actionCell, 'Webhook: noc <hook>');
        assert.equal(((await page.locator('[data-testid=event-rules] tbody tr td').nth(3).textContent()) ?? '').trim(), 'Object created');
        assert.equal(await page.locator('[data-testid=event-rules] tbody tr td:nth-child(5) a').getAttribute('href'), `/ui/webhooks/${seed.webhook.id}/`);
        await shot('event-rules');
        // Delete asks first; Cancel keeps the rule, Delete removes it.
        await page.goto(`${base}${rulePath}`);
        await page.click('[data-testid=delete]');
        assert.match((await page.textContent('[data-testid=confirm-text]')) ?? '', /Are you sure you want to delete event rule devices to noc\?/);
        await shot('event-rule-delete');
        await page.click('a.button.secondary:has-text("Cancel")');
        assert.equal(pathname(), rulePath);
        const ruleId = Number(rulePath.split('/').filter(Boolean).pop());
        assert.equal((await api.get(`/api/extras/event-rules/${ruleId}/`)).status, 200, 'not deleted by asking');
        await page.click('[data-testid=delete]');
        await page.click('[data-testid=confirm-delete]');
        assert.equal((await api.get(`/api/extras/event-rules/${ruleId}/`)).status, 404);
        // A custom field's object types are picked by label, the saved field shows them so, and the form keeps them on an error.
        await page.goto(`${base}/extras/custom-fields/add/`);
        const typeLabels = await page.locator('#f-object_types option').allTextContents();
        assert.deepEqual(typeLabels.filter((l) => !/^[A-Z][A-Za-z]* > [A-Z][A-Za-z0-9 ]*$/.test(l.trim())), [], 'labels only');
        await page.selectOption('#f-object_types', [{ label: 'DCIM > Site' }, { label: 'DCIM > Location' }]);
        await page.fill('#f-name', 'bad name!');
        await page.click('[data-testid=save]');
        assert.ok(((await page.textContent('[data-field=name] .errors')) ?? '').length > 0, 'the API refuses the name');
        assert.deepEqual((await page.locator('#f-object_types option:checked').allTextContents()).sort(), ['DCIM > Location', 'DCIM > Site']);
        await page.fill('#f-name', 'site_code');
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'site_code');
        assert.match((await page.textContent('[data-field=object_types]')) ?? '', /^DCIM > (Location, DCIM > Site|Site, DCIM > Location)$/);
        await shot('custom-field');
        const cfId = Number(pathname().split('/').filter(Boolean).pop());
        assert.deepEqual((await api.get(`/api/extras/custom-fields/${cfId}/`)).body.object_types.sort(), ['dcim.location', 'dcim.site']);
        // The webhook's delete asks too.
        await page.goto(`${base}/ui/webhooks/${seed.webhook.id}/`);
        await page.click(`a[href="/ui/webhooks/${seed.webhook.id}/delete"]`);
        assert.match((await page.textContent('body')) ?? '', /Are you sure you want to delete webhook noc <hook>\?/);
        assert.equal((await api.get(`/api/extras/webhooks/${seed.webhook.id}/`)).status, 200);
        await logOut();
      }));

    it('logs in with username and password (a wrong one is refused, the username kept) and lands on the page asked for', () =>
      step(async () => {
        await page.goto(`${base}/dcim/devices/`);
        assert.match(page.url(), /\/ui\/login\?next=%2Fdcim%2Fdevices%2F/);
        await page.fill('#f-username', 'alice');
        await page.fill('#f-password', 'not her password');
        await page.click('button[type=submit]');
        assert.match((await page.textContent('[role=alert]')) ?? '', /Invalid username\/password\./);
        assert.equal(await page.inputValue('#f-username'), 'alice');
        await shot('login-refused');
        await page.fill('#f-password', ALICE_PASSWORD);
        await page.click('button[type=submit]');
        assert.equal(pathname(), '/dcim/devices/');
        assert.equal(((await page.textContent('[data-testid=who]')) ?? '').trim(), 'alice');
        assert.equal(await page.locator('[data-testid=object-table] tbody tr').count(), 2);
        await shot('devices-as-alice');
      }));

    it('searches from the navigation and opens a result', () =>
      step(async () => {
        await page.click('nav a:has-text("Search")');
        assert.equal(pathname(), '/search/');
        assert.equal(await activeNav(), 'Search');
        await page.fill('[data-testid=global-search]', 'edge2');
        await page.click('form.filters button[type=submit]');
        const headings = await page.locator('main h2').allTextContents();
        assert.deepEqual(headings.map((h) => h.replace(/\s+/g, ' ').trim()), ['Devices (1)']);
        await shot('search');
        await page.click('[data-testid=search-results] a:has-text("par2-edge2")');
        assert.equal(pathname(), `/dcim/devices/${seed.r2.id}/`);
        assert.equal(await h1(), 'par2-edge2');
        const related = (await page.locator('[data-testid=related] th').allTextContents()).map((t) => t.trim());
        assert.equal(new Set(related).size, related.length, `each related list named once: ${related.join(' | ')}`);
        assert.ok(related.includes('Virtual chassis') && related.includes('Device bays') && related.includes('Device bays (installed device)'), related.join(' | '));
        assert.match((await page.textContent('[data-testid=related]')) ?? '', /Interfaces\s*6/);
        // Exact match on interfaces only, through the form's lookup and type pickers.
        await page.goto(`${base}/search/`);
        await page.fill('[data-testid=global-search]', 'XE-0/0/5');
        await page.selectOption('[data-testid=search-lookup]', 'iexact');
        await page.selectOption('[data-testid=search-types]', 'dcim.interface');
        await page.click('form.filters button[type=submit]');
        assert.deepEqual((await page.locator('main h2').allTextContents()).map((h) => h.replace(/\s+/g, ' ').trim()), ['Interfaces (2)']);
      }));

    it("edits a device's custom fields in its form: typed values, the API's refusal at the field, cleared again", () =>
      step(async () => {
        await page.goto(`${base}/dcim/devices/${seed.r1.id}/`);
        await page.click('[data-testid=edit]');
        const labels = (await page.locator('[data-testid=custom-fields] .field > label').allTextContents()).map((t) => t.trim());
        assert.deepEqual(labels, ['Owner', 'tier', 'rack_units', 'monitored'], 'editable ones, by weight; the hidden one is not offered');
        assert.deepEqual(await page.locator('#f-cf_tier option').allTextContents(), ['———', 'Gold', 'Silver']);
        await page.fill('#f-cf_owner', 'neteng');
        await page.selectOption('#f-cf_tier', 'gold');
        await page.selectOption('#f-cf_monitored', 'true');
        await page.fill('#f-cf_rack_units', 'four');
        await page.click('[data-testid=save]');
        assert.match((await page.textContent('[data-field=cf_rack_units] .errors')) ?? '', /Enter a whole number\./);
        assert.equal(await page.inputValue('#f-cf_owner'), 'neteng', 'the form keeps what was typed');
        // The API's validation (a maximum of 48) is shown at the field it names.
        await page.fill('#f-cf_rack_units', '96');
        await page.click('[data-testid=save]');
        assert.match((await page.textContent('[data-field=cf_rack_units] .errors')) ?? '', /rack_units/);
        await shot('custom-fields-error');
        await page.fill('#f-cf_rack_units', '4');
        await page.click('[data-testid=save]');
        assert.equal(await h1(), 'par2-edge1');
        // The object's page: labels, a choice by its label; a field hidden from forms is still shown (ui_visible).
        const shown = await page.locator('[data-testid=custom-field-values] tr').evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => (c.textContent ?? '').trim()).join(': ')));
        assert.deepEqual(shown, ['Owner: neteng', 'tier: Gold', 'rack_units: 4', 'monitored: ✓', 'secret: —']);
        await shot('custom-fields');
        const d = (await api.get(`/api/dcim/devices/${seed.r1.id}/`)).body;
        assert.deepEqual(d.custom_fields, { owner: 'neteng', tier: 'gold', rack_units: 4, monitored: true, secret: null });
        // Edited again: the form shows the stored values; a cleared one is null.
        await page.click('[data-testid=edit]');
        assert.equal(await page.inputValue('#f-cf_rack_units'), '4');
        assert.equal(await page.inputValue('#f-cf_tier'), 'gold');
        await page.fill('#f-cf_owner', '');
        await page.click('[data-testid=save]');
        assert.equal((await api.get(`/api/dcim/devices/${seed.r1.id}/`)).body.custom_fields.owner, null);
        // NetBox's import takes custom fields as cf_<name> columns: typed, an unknown one refused.
        await page.goto(`${base}/dcim/devices/import/`);
        const head = 'name,device_type,role,site,cf_owner,cf_rack_units,cf_tier';
        await page.fill('#f-data', [`${head},cf_nope`, 'par2-edge3,Edge 24,Edge,Paris 2,noc,2,silver,x'].join('\n'));
        await page.click('[data-testid=submit-import]');
        assert.match((await page.locator('[data-testid=import-errors]').textContent()) ?? '', /cf_nope: unknown custom field/);
        await page.fill('#f-data', [head, 'par2-edge3,Edge 24,Edge,Paris 2,noc,two,silver'].join('\n'));
        await page.click('[data-testid=submit-import]');
        assert.match((await page.locator('[data-testid=import-errors]').textContent()) ?? '', /Record 1 cf_rack_units: Enter a whole number\./);
        await page.fill('#f-data', [head, 'par2-edge3,Edge 24,Edge,Paris 2,noc,2,silver', 'par2-edge4,Edge 24,Edge,Paris 2,,,'].join('\n'));
        await page.click('[data-testid=submit-import]');
        assert.match(await flashText(), /Imported 2 devices/);
        const imported = (await api.get('/api/dcim/devices/?name=par2-edge3&name=par2-edge4&ordering=name')).body.results;
        assert.deepEqual(imported.map((d: any) => d.custom_fields), [
          { owner: 'noc', tier: 'silver', rack_units: 2, monitored: null, secret: null },
          { owner: null, tier: null, rack_units: null, monitored: null, secret: null },
        ]);
      }));

    it('deletes interfaces in bulk from the list after a confirmation that lists them', () =>
      step(async () => {
        await page.goto(`${base}/dcim/interfaces/?device_id=${seed.r2.id}&sort=name`);
        const boxes = page.locator('input[name=pk]');
        assert.equal(await boxes.count(), 6);
        for (const i of [3, 4, 5]) await boxes.nth(i).check();
        await page.click('[data-testid=bulk-delete]');
        assert.equal(pathname(), '/dcim/interfaces/delete/');
        assert.match((await page.textContent('[data-testid=confirm-text]')) ?? '', /Are you sure you want to delete these 3 interfaces\?/);
        const listed = (await page.locator('main ul li').allTextContents()).map((s) => s.trim()).sort();
        assert.deepEqual(listed, ['xe-0/0/3', 'xe-0/0/4', 'xe-0/0/5']);
        assert.equal((await api.get(`/api/dcim/interfaces/?device_id=${seed.r2.id}`)).body.count, 6, 'nothing deleted by asking');
        await shot('bulk-delete-confirm');
        await page.click('[data-testid=confirm-delete]');
        assert.match(await flashText(), /Deleted 3 interfaces/);
        const left = (await api.get(`/api/dcim/interfaces/?device_id=${seed.r2.id}&ordering=name`)).body;
        assert.deepEqual(left.results.map((i: any) => i.name), ['xe-0/0/0', 'xe-0/0/1', 'xe-0/0/2']);
      }));

    it('imports cables by device and port name (CSV), with the form\'s error for a port that does not exist, and lists them', () =>
      step(async () => {
        await page.goto(`${base}/dcim/cables/`);
        await page.click('[data-testid=import]');
        assert.equal(pathname(), '/dcim/cables/import/');
        assert.ok(await page.locator('code:has-text("side_a_device")').count(), 'the page lists the import form\'s fields');
        const head = 'side_a_device,side_a_type,side_a_name,side_b_device,side_b_type,side_b_name,label,color';
        const rows = [0, 1, 2].map((i) => `par2-edge1,dcim.interface,xe-0/0/${i},par2-edge2,dcim.interface,xe-0/0/${i},core-${i},Blue`);
        // The same port twice: NetBox's error for the second record, nothing imported.
        await page.fill('#f-data', [head, ...rows, 'par2-edge1,dcim.interface,xe-0/0/0,par2-edge2,dcim.interface,xe-0/0/9,dup,'].join('\n'));
        await page.click('[data-testid=submit-import]');
        const errs = (await page.locator('[data-testid=import-errors] li').allTextContents()).join('\n');
        assert.match(errs, /Record 4 side_b_name: B side termination not found: par2-edge2 xe-0\/0\/9/);
        assert.equal((await api.get('/api/dcim/cables/')).body.count, 0);
        await shot('cable-import-error');
        await page.fill('#f-data', [head, ...rows].join('\n'));
        await page.click('[data-testid=submit-import]');
        assert.match(await flashText(), /Imported 3 cables/);
        assert.equal(pathname(), '/dcim/cables/');
        const listed = await page.locator('[data-testid=object-table] tbody tr').allTextContents();
        assert.equal(listed.length, 3);
        assert.match(listed.join('\n'), /core-0[\s\S]*xe-0\/0\/0[\s\S]*xe-0\/0\/0/);
        await shot('cables');
        const cable = (await api.get('/api/dcim/cables/?label=core-1')).body.results[0];
        assert.equal(cable.color, '2196f3', "NetBox's colour name");
        // The port's page names its cable, and the cable's page both ends.
        await page.goto(`${base}/dcim/cables/${cable.id}/`);
        const attrs = (await page.textContent('[data-testid=attributes]')) ?? '';
        assert.match(attrs, /par2-edge1 › xe-0\/0\/1/);
        assert.match(attrs, /par2-edge2 › xe-0\/0\/1/);
        await shot('cable');
      }));

    it('reads the change log: the list filtered to deletions, a change with its diff, an object\'s own changelog tab', () =>
      step(async () => {
        await page.click('nav a:has-text("Change log")');
        assert.equal(pathname(), '/core/changelog/');
        assert.equal(await activeNav(), 'Change log');
        assert.ok((await page.locator('[data-testid=changelog-list] tbody tr').count()) > 10);
        await page.selectOption('[data-testid=filter-form] select[name=action]', 'delete');
        await page.click('[data-testid=filter-form] button[type=submit]');
        const rows = await page.locator('[data-testid=changelog-list] tbody tr').allTextContents();
        assert.equal(rows.length, 4, rows.join('\n'));
        assert.equal(rows.filter((r) => /Deleted[\s\S]*DCIM > Interface[\s\S]*xe-0\/0\/[345]/.test(r)).length, 3, rows.join('\n'));
        assert.match(rows.join('\n'), /Deleted[\s\S]*Extras > Event rule[\s\S]*devices to noc/);
        await shot('changelog-list');
        // An update with its diff: the cable import set the port's cable.
        const upd = (await api.get(`/api/core/object-changes/?changed_object_type=dcim.site&action=create`)).body.results[0];
        await page.goto(`${base}/core/changelog/?changed_object_type=dcim.site`);
        await page.click(`[data-testid=changelog-list] a[href="/core/changelog/${upd.id}/"]`);
        assert.match(await h1(), /Paris 2 · Created/);
        assert.match((await page.locator('[data-testid=postchange-data] tr.changed').allTextContents()).join('\n'), /slug\s*"par2"/);
        // An interface edited from the form: the object's Changelog tab and the change page show the diff.
        await page.goto(`${base}/dcim/interfaces/?device_id=${seed.r1.id}&name=xe-0/0/5`);
        await page.click('[data-testid=object-table] tbody tr a');
        await page.click('[data-testid=edit]');
        await page.fill('#f-description', 'spare optic');
        await page.click('[data-testid=save]');
        await page.click('[data-testid=changelog-tab]');
        const tab = (await page.textContent('[data-testid=changelog]')) ?? '';
        assert.match(tab, /description: "" → "spare optic"/);
        assert.match(tab, /alice/);
        await shot('changelog-tab');
        await page.click('nav a:has-text("Change log")');
        await page.click('[data-testid=changelog-list] tbody tr:first-child td:first-child a');
        assert.match(await h1(), /xe-0\/0\/5 · Updated/);
        assert.match((await page.locator('[data-testid=prechange-data] tr.changed').allTextContents()).join('\n'), /description/);
        assert.match((await page.locator('[data-testid=postchange-data] tr.changed').allTextContents()).join('\n'), /description\s*"spare optic"/);
        await shot('change');
      }));

    it('creates an API token (the key shown once, usable), then revokes it after confirming', () =>
      step(async () => {
        await page.click('nav a:has-text("API tokens")');
        assert.equal(pathname(), '/user/api-tokens/');
        assert.equal(await activeNav(), 'API tokens');
        const before = await page.locator('[data-testid=tokens] tbody tr').count();
        assert.equal(before, 1, "alice's session token only");
        await page.click('[data-testid=add-token]');
        await page.fill('#f-expires', 'next week');
        await page.fill('#f-description', 'ci runner');
        await page.click('[data-testid=create-token]');
        assert.match((await page.textContent('[data-field=expires]')) ?? '', /Enter a valid date\/time\./);
        assert.equal(await page.inputValue('#f-description'), 'ci runner');
        await shot('token-form-error');
        await page.fill('#f-expires', '2999-12-31 23:00');
        await page.click('[data-testid=create-token]');
        const key = ((await page.textContent('[data-testid=new-key]')) ?? '').trim();
        assert.match(key, /^[0-9a-f]{40}$/);
        await shot('token-created');
        const own = client(base, { authorization: `Token ${key}` });
        const made = await own.post('/api/dcim/sites/', { name: 'Lyon 1', slug: 'lyo1' });
        assert.equal(made.status, 201, `write enabled by default: ${made.text}`);
        await page.click('a.button:has-text("Back to your tokens")');
        const listed = await page.locator('[data-testid=tokens] tbody tr').allTextContents();
        assert.equal(listed.length, 2);
        assert.ok(!listed.join('\n').includes(key), 'the key is not shown again');
        assert.match(listed.join('\n'), new RegExp(`${key.slice(-4)}[\\s\\S]*2999-12-31 23:00:00Z[\\s\\S]*ci runner`));
        await shot('tokens');
        await page.locator('[data-testid=tokens] tbody tr', { hasText: 'ci runner' }).locator('[data-testid=revoke]').click();
        assert.match((await page.textContent('[data-testid=confirm-text]')) ?? '', /Are you sure you want to revoke token \*+[0-9a-f]{4} \(ci runner\)\?/);
        assert.equal((await own.get('/api/dcim/sites/')).status, 200, 'still valid while asked');
        await shot('token-revoke');
        await page.click('[data-testid=confirm-delete]');
        assert.equal(pathname(), '/user/api-tokens/');
        assert.equal(await page.locator('[data-testid=tokens] tbody tr').count(), 1);
        assert.deepEqual((await own.get('/api/dcim/sites/')).body, { detail: 'Invalid token' });
        await logOut();
      }));

    it('a user without write permission sees pages without actions and is refused forms; without view permission, refused the admin pages', () =>
      step(async () => {
        await page.goto(`${base}/login/?next=%2Fdcim%2Fdevices%2F`);
        await page.fill('#f-username', 'bob');
        await page.fill('#f-password', BOB_PASSWORD);
        await page.click('button[type=submit]');
        assert.equal(pathname(), '/dcim/devices/');
        assert.equal(((await page.textContent('[data-testid=who]')) ?? '').trim(), 'bob');
        assert.equal(await page.locator('[data-testid=add]').count(), 0);
        assert.equal(await page.locator('input[name=pk]').count(), 0, 'no bulk selection');
        assert.equal(await page.locator('[data-testid=bulk-delete]').count(), 0);
        await page.click(`[data-testid=object-table] a:has-text("par2-edge1")`);
        assert.equal(await h1(), 'par2-edge1');
        assert.equal(await page.locator('[data-testid=edit], [data-testid=delete], [data-testid=clone]').count(), 0);
        await shot('read-only-device');
        for (const p of [`/dcim/devices/${seed.r1.id}/edit/`, `/dcim/devices/${seed.r1.id}/delete/`, '/dcim/devices/add/', '/dcim/interfaces/import/']) {
          const res = await page.goto(`${base}${p}`);
          assert.equal(res?.status(), 403, p);
          assert.equal(await h1(), 'Forbidden', p);
          assert.match((await page.textContent('.error-message')) ?? '', /may not change objects/, p);
        }
        await shot('refused-edit');
        // The admin-only pages: no link in the navigation, and a refusal when opened.
        assert.equal(await page.locator('nav a:has-text("Background Tasks")').count(), 0);
        for (const p of ['/ui/background-queues/', '/ui/event-rules/add', '/ui/webhooks/add']) {
          const res = await page.goto(`${base}${p}`);
          assert.equal(res?.status(), 403, p);
          assert.equal(await h1(), 'Forbidden', p);
        }
        assert.match((await page.textContent('.error-message')) ?? '', /Only administrators/);
        await shot('refused-admin');
        // The tokens page shows bob's own token only.
        await page.goto(`${base}/user/api-tokens/`);
        assert.equal(await page.locator('[data-testid=tokens] tbody tr').count(), 1);
        // Nothing changed: the device is as it was.
        assert.equal((await api.get(`/api/dcim/devices/${seed.r1.id}/`)).body.name, 'par2-edge1');
      }));
  });
});
