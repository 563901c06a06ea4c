/**
 * The built-in page (`/` without --front-end-root) in headless Chromium
 * (Debian's package, driven by playwright-core): queue a prompt from the page
 * and see it finish with a thumbnail, follow progress over the WebSocket,
 * delete from the queue, interrupt, upload an image and use it.
 * WORKFLOW_UI_SCREENSHOT=<file.png> saves a screenshot of the page at the end.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import sharp from 'sharp';
import { client, forEachStorage } from '@svc/testkit';
import { gateEntered, releaseGate, startWorkflow } from '../helpers.ts';

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const API_KEY = 'web-page-test-key-0123456789';

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the built-in page browser tests`;
if (skip) console.log(`# SKIP workflow built-in page browser tests: ${skip}`);

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

/** Waits until every thumbnail under `selector` has loaded a real image. */
async function thumbnailsLoaded(page: Page, selector: string): Promise<number> {
  const handle = await page.waitForFunction(
    (sel) => {
      const imgs = [...document.querySelectorAll<HTMLImageElement>(sel)];
      return imgs.length > 0 && imgs.every((i) => i.complete && i.naturalWidth > 0) ? imgs.length : false;
    },
    selector,
  );
  return (await handle.jsonValue()) as number;
}

/** Clicks Queue and answers the id of the prompt it queued (the result box is emptied when a queueing starts). */
async function clickQueue(page: Page): Promise<string> {
  await page.click('#queue-btn');
  const notice = page.locator('#prompt-result .notice, #prompt-result .alert');
  await notice.waitFor();
  const id = await notice.getAttribute('data-prompt-id');
  assert.ok(id, (await notice.textContent()) ?? 'no notice');
  return id;
}

async function queueFromPage(page: Page, prompt: unknown): Promise<string> {
  await page.fill('#prompt-text', JSON.stringify(prompt));
  return clickQueue(page);
}

/** What the page showed when a step failed (the explanation is usually there). */
async function said(page: Page, problems: string[]): Promise<string> {
  const parts = await Promise.all(
    ['#conn', '#prompt-result', '#running', '#queue-list', '#jobs', '#upload-result'].map(async (sel) => `${sel}: ${((await page.textContent(sel).catch(() => '')) ?? '').replace(/\s+/g, ' ').slice(0, 600)}`),
  );
  return [...parts, `problems: ${JSON.stringify(problems)}`].join('\n# ');
}

describe('workflow built-in page in a browser', { skip }, () => {
  forEachStorage('page', (storage) => {
    let srv: Srv;
    let guarded: Srv;
    let multi: Srv;
    let ctx: BrowserContext;
    let userDataDir: string;
    let page: Page;
    const problems: string[] = [];

    before(async () => {
      srv = await startWorkflow(storage, {}, { packs: ['web-pack.mjs'] });
      guarded = await startWorkflow(storage, { apiKey: API_KEY });
      multi = await startWorkflow(storage, { multiUser: true });
      userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'workflow-ui-chromium-'));
      ctx = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1360, height: 900 } });
      ctx.setDefaultTimeout(30_000);
      page = await ctx.newPage();
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      // Refused requests are checked by status below; the console's copy of them is not a page problem.
      page.on('console', (m) => {
        if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
      });
      page.on('response', (r) => {
        const u = new URL(r.url());
        if (r.status() >= 500 || (r.status() >= 400 && !(u.pathname === '/api/prompt' && r.status() === 400))) problems.push(`${r.status()} ${u.pathname}`);
      });
      page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    });

    /** A test whose failure also prints what the page showed. */
    const step = (name: string, fn: () => Promise<void>) =>
      test(name, async () => {
        try {
          await fn();
        } catch (err) {
          console.log(`# browser at ${page.url()}:\n# ${await said(page, problems)}`);
          // Leave nothing running for the next steps.
          await srv.http.post('/queue', { clear: true }).catch(() => {});
          await srv.http.post('/interrupt', {}).catch(() => {});
          throw err;
        }
      });

    after(async () => {
      await ctx?.close();
      if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
      await srv?.close();
      await guarded?.close();
      await multi?.close();
    });

    test('the page and its files are served with a strict CSP', async () => {
      const r = await fetch(`${srv.url}/`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(r.headers.get('content-security-policy') ?? '', /script-src 'self'/);
      assert.match(await r.text(), /<title>Workflow service<\/title>/);
      const js = await fetch(`${srv.url}/web/app.js`);
      assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
      assert.equal((await fetch(`${srv.url}/web/missing.js`)).status, 404);
    });

    step('queue a prompt from the page: it finishes with a thumbnail served by /view', async () => {
      await page.goto(`${srv.url}/`);
      await page.waitForSelector('#conn[data-state=connected]');
      await page.selectOption('#example', 'solid');
      assert.match(await page.inputValue('#prompt-text'), /EmptyImage/);
      const id = await queueFromPage(page, JSON.parse(await page.inputValue('#prompt-text')));
      const card = `.job[data-job-id="${id}"][data-status=completed]`;
      await page.waitForSelector(card);
      assert.equal(await thumbnailsLoaded(page, `${card} .thumbs img`), 1);
      const src = await page.getAttribute(`${card} .thumbs img`, 'src');
      assert.match(src ?? '', /\/api\/view\?filename=web_00001_\.png&type=output&subfolder=&preview=webp%3B75/);
      // The full image opens from the thumbnail's link.
      assert.match((await page.getAttribute(`${card} .thumbs a`, 'href')) ?? '', /filename=web_00001_\.png&type=output&subfolder=$/);
    });

    step('running progress over the WebSocket; delete from the queue; interrupt', async () => {
      const first = await queueFromPage(page, { g: { class_type: 'TestStepGate', inputs: { name: `${storage}-ui-1` } } });
      await gateEntered(`${storage}-ui-1`);
      await page.waitForSelector(`#running[data-state=running][data-prompt-id="${first}"]`);
      await page.waitForFunction(() => {
        const p = document.querySelector<HTMLProgressElement>('#progress')!;
        return p.value === 1 && p.max === 2;
      });
      assert.match((await page.textContent('#running-label')) ?? '', /node g \(TestStepGate\)/);
      await page.waitForSelector('#node-states .chip[data-node=g][data-state=running]');
      await thumbnailsLoaded(page, '#live-preview');
      const shot = process.env.WORKFLOW_UI_SCREENSHOT;
      if (shot && storage === 'sqlite') await page.screenshot({ path: shot.replace(/\.png$/, '') + '.running.png' });

      const second = await queueFromPage(page, { g: { class_type: 'TestStepGate', inputs: { name: `${storage}-ui-2` } } });
      const pendingRow = `#queue-list li[data-state=pending][data-prompt-id="${second}"]`;
      await page.waitForSelector(pendingRow);
      await page.waitForSelector(`#queue-list li[data-state=running][data-prompt-id="${first}"]`);
      await page.click(`${pendingRow} button.delete`);
      await page.waitForSelector(pendingRow, { state: 'detached' });
      assert.deepEqual((await srv.http.get('/api/queue')).body.queue_pending, []);

      await page.click('#interrupt-btn');
      await page.waitForSelector(`.job[data-job-id="${first}"][data-status=cancelled]`);
      await page.waitForSelector('#running[data-state=idle]');

      const third = await queueFromPage(page, { g: { class_type: 'TestStepGate', inputs: { name: `${storage}-ui-3` } } });
      await gateEntered(`${storage}-ui-3`);
      releaseGate(`${storage}-ui-3`);
      await page.waitForSelector(`.job[data-job-id="${third}"][data-status=completed]`);
      assert.equal(await page.textContent(`.job[data-job-id="${third}"] pre.text`), `released ${storage}-ui-3`);
    });

    step('a prompt another client queued shows as running and can be interrupted', async () => {
      const r = await srv.http.post('/api/prompt', { prompt: { g: { class_type: 'TestStepGate', inputs: { name: `${storage}-ui-ext` } } }, client_id: 'someone-else' });
      assert.equal(r.status, 200, r.text);
      await gateEntered(`${storage}-ui-ext`);
      await page.waitForSelector('#running[data-state=external]');
      assert.match((await page.textContent('#running-label')) ?? '', /queued by another client/);
      await page.click('#interrupt-btn');
      await page.waitForSelector(`.job[data-job-id="${r.body.prompt_id}"][data-status=cancelled]`);
      await page.waitForSelector('#running[data-state=idle]');
    });

    step('upload an image from the page and use it in a prompt', async () => {
      const png = await sharp({ create: { width: 6, height: 4, channels: 3, background: { r: 200, g: 40, b: 90 } } }).png().toBuffer();
      await page.setInputFiles('#upload-file', { name: 'pic.png', mimeType: 'image/png', buffer: png });
      await page.fill('#upload-subfolder', 'web');
      await page.click('#upload-btn');
      await page.waitForSelector('#upload-result .notice[data-name="web/pic.png"]');
      await thumbnailsLoaded(page, '#upload-result .thumbs img');
      assert.deepEqual(fs.readFileSync(path.join(srv.cfg.dataDir, 'input', 'web', 'pic.png')), png);

      await page.click('#use-upload-btn');
      assert.match(await page.inputValue('#prompt-text'), /"LoadImage"/);
      const id = await clickQueue(page);
      const card = `.job[data-job-id="${id}"][data-status=completed]`;
      await page.waitForSelector(card);
      await thumbnailsLoaded(page, `${card} .thumbs img`);
      const job = (await srv.http.get(`/api/jobs/${id}`)).body;
      const out = job.outputs['2'].images[0];
      const { data, info } = await sharp(path.join(srv.cfg.dataDir, 'output', out.subfolder, out.filename)).raw().toBuffer({ resolveWithObject: true });
      assert.deepEqual([info.width, info.height, data[0], data[1], data[2]], [6, 4, 200, 40, 90]);
    });

    step('errors are shown; server text is never run as HTML', async () => {
      await page.fill('#prompt-text', '{"1": ');
      await page.click('#queue-btn');
      assert.match((await page.textContent('#prompt-result [role=alert]')) ?? '', /Not valid JSON/);
      await page.fill('#prompt-text', JSON.stringify({ 1: { class_type: 'NoSuchNode', inputs: {} } }));
      await page.click('#queue-btn');
      await page.waitForFunction(() => /NoSuchNode/.test(document.querySelector('#prompt-result [role=alert]')?.textContent ?? ''));
      await page.fill('#prompt-text', JSON.stringify({ nodes: [], links: [] }));
      await page.click('#queue-btn');
      assert.match((await page.textContent('#prompt-result [role=alert]')) ?? '', /UI workflow/);

      const hostile = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
      const id = await queueFromPage(page, { 1: { class_type: 'PrimitiveString', inputs: { value: hostile } }, 2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } } });
      await page.waitForSelector(`.job[data-job-id="${id}"][data-status=completed] pre.text`);
      assert.equal(await page.textContent(`.job[data-job-id="${id}"] pre.text`), hostile);
      assert.equal(await page.evaluate(() => (window as any).__xss), undefined);
      assert.equal(await page.locator('#jobs img[src="x"]').count(), 0);

      const shot = process.env.WORKFLOW_UI_SCREENSHOT;
      if (shot && storage === 'sqlite') await page.screenshot({ path: shot, fullPage: true });
      assert.deepEqual(problems, []);
    });

    test('with --api-key, the page opened with ?token= works', async () => {
      assert.equal((await fetch(`${guarded.url}/`)).status, 401);
      const p = await ctx.newPage();
      // Requests carry the key as a header; only the page itself, its files and the socket (no headers there) put it in the URL.
      const inUrl: string[] = [];
      p.on('request', (r) => {
        const u = new URL(r.url());
        if (u.searchParams.has('token') && !['/', '/web/app.js', '/web/style.css', '/ws'].includes(u.pathname)) inUrl.push(u.pathname);
      });
      try {
        await p.goto(`${guarded.url}/?token=${API_KEY}`);
        await p.waitForSelector('#conn[data-state=connected]');
        await p.fill('#prompt-text', JSON.stringify({ 1: { class_type: 'EmptyImage', inputs: { width: 8, height: 8, batch_size: 1, color: 0 } }, 2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'guarded' } } }));
        const id = await clickQueue(p);
        await p.waitForSelector(`.job[data-job-id="${id}"][data-status=completed]`);
        await thumbnailsLoaded(p, `.job[data-job-id="${id}"] .thumbs img`);
        assert.deepEqual(inUrl, []);
      } finally {
        await p.close();
      }
    });

    test('with --multi-user, the page opened with ?user= acts as that user', async () => {
      const p = await ctx.newPage();
      try {
        await p.goto(`${multi.url}/?user=alice`);
        await p.waitForSelector('#conn[data-state=connected]');
        await p.fill('#prompt-text', JSON.stringify({ 1: { class_type: 'EmptyImage', inputs: { width: 8, height: 8, batch_size: 1, color: 0xff00ff } }, 2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'alice' } } }));
        const id = await clickQueue(p);
        await p.waitForSelector(`.job[data-job-id="${id}"][data-status=completed]`);
        await thumbnailsLoaded(p, `.job[data-job-id="${id}"] .thumbs img`);
        const alice = client(multi.url, { 'comfy-user': 'alice' });
        assert.ok((await alice.get('/api/jobs')).body.jobs.some((j: any) => j.id === id));
        assert.ok(!(await multi.http.get('/api/jobs')).body.jobs.some((j: any) => j.id === id), 'another user does not see it');
      } finally {
        await p.close();
      }
    });
  });
});

test('--front-end-root takes / instead of the built-in page', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'workflow-frontend-'));
  fs.writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>their frontend</title>');
  const srv = await startWorkflow('sqlite', { frontEndRoot: root });
  try {
    const r = await client(srv.url).get('/');
    assert.equal(r.status, 200);
    assert.match(r.text, /their frontend/);
    assert.equal((await fetch(`${srv.url}/web/app.js`)).status, 404);
  } finally {
    await srv.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});
