/**
 * A workflow saved by the reference's own frontend, opened on the built-in
 * page and run, in headless Chromium (Debian's package, driven by
 * playwright-core), as a person does it: the reference's img2img example
 * (test/fixtures/examples/img2img_workflow.frontend.json, the `workflow` text
 * chunk of ComfyUI_examples' img2img/img2img_workflow.png, byte for byte: a
 * litegraph 0.4 workflow with sizes as {"0": w, "1": h}, a seed with
 * control_after_generate "randomize", a group) dropped onto the page as a
 * .json file and as a PNG carrying that chunk; the graph comes back as saved,
 * is queued from the page (the Queue button, Ctrl+Enter) against the tiny
 * generated models written under the file names it asks for
 * (models-examples-fixture.ts), and the output image shows on its SaveImage
 * node. One storage (SQLite): storage plays no part here.
 * WORKFLOW_UI_SCREENSHOT=<file.png> saves screenshots (<file>.*.png).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import sharp from 'sharp';
import { unloadAll } from '../../src/models/sd1.ts';
import { startWorkflow } from '../helpers.ts';
import { EXAMPLE_TINY } from '../models-control-fixture.ts';
import { EXAMPLE_MODELS, examplePrompt, img2imgPixels } from '../models-examples-fixture.ts';
import { writeFixture } from '../models-fixture.ts';
import { safetensorsToTorch } from '../torch-zip-writer.ts';

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const EXAMPLES = path.join(import.meta.dirname, '..', 'fixtures', 'examples');
/** The `workflow` chunk's text exactly as the reference's frontend saved it. */
const SAVED = fs.readFileSync(path.join(EXAMPLES, 'img2img_workflow.frontend.json'));

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the built-in page browser tests`;
if (skip) console.log(`# SKIP workflow built-in page browser test (reference example): ${skip}`);

/** A small PNG carrying `chunks` as tEXt chunks before its image data, as the reference's SaveImage writes them. */
async function pngWithText(chunks: Record<string, Buffer>): Promise<Buffer> {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 90, g: 120, b: 200 } } }).png().toBuffer();
  const text = Object.entries(chunks).map(([key, value]) => {
    const body = Buffer.concat([Buffer.from('tEXt', 'latin1'), Buffer.from(key, 'latin1'), Buffer.from([0]), value]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length - 4);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([len, body, crc]);
  });
  // After the signature (8 bytes) and IHDR (4 + 4 + 13 + 4).
  return Buffer.concat([png.subarray(0, 33), ...text, png.subarray(33)]);
}

/** Drops a file on the canvas the way a browser delivers a drag from the desktop. */
async function dropFile(page: Page, name: string, mime: string, bytes: Buffer): Promise<void> {
  await page.evaluate(
    ({ name, mime, b64 }) => {
      const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bin], name, { type: mime }));
      const target = document.querySelector('#graph-canvas')!;
      const r = target.getBoundingClientRect();
      target.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true, clientX: r.left + 300, clientY: r.top + 300 }));
    },
    { name, mime, b64: bytes.toString('base64') },
  );
}

/** The graph on the page: node types by id, links, groups and every node's widget values. */
function graphOf(page: Page) {
  return page.evaluate(() => {
    const g = (window as any).wfPage.graph;
    return {
      nodes: Object.fromEntries(g.nodes.map((n: any) => [n.id, n.type])),
      // Targets by input name: the page gives widgets sockets too, so input indices differ from the saved file's.
      links: [...g.links.values()]
        .map((l: any) => [l.id, l.origin_id, l.origin_slot, l.target_id, g.getNodeById(l.target_id).inputs[l.target_slot].name, l.type])
        .sort((a: any, b: any) => a[0] - b[0]),
      groups: g.groups.map((x: any) => x.title),
      widgets: Object.fromEntries(g.nodes.filter((n: any) => n.widgets?.length).map((n: any) => [n.id, Object.fromEntries(n.widgets.map((w: any) => [w.name, w.value]))])),
      sizes: Object.fromEntries(g.nodes.map((n: any) => [n.id, [Math.round(n.size[0]), Math.round(n.size[1])]])),
    };
  });
}

describe('workflow built-in page: a workflow saved by the reference\'s frontend (its img2img example) opened and run [sqlite]', { skip }, () => {
  let browser: Browser;
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let page: Page;
  const problems: string[] = [];
  const saved = JSON.parse(SAVED.toString('utf8'));
  const shot = (name: string) => {
    const f = process.env.WORKFLOW_UI_SCREENSHOT;
    return f ? page.screenshot({ path: `${f.replace(/\.png$/, '')}.${name}.png` }) : Promise.resolve();
  };

  before(async () => {
    srv = await startWorkflow('sqlite');
    // Only what the img2img example asks for: the SD1.5 checkpoint (a .ckpt) and input/example.png.
    const models = path.join(srv.cfg.dataDir, 'models');
    fs.mkdirSync(path.join(models, 'checkpoints'), { recursive: true });
    const st = path.join(srv.cfg.dataDir, 'v1-5.safetensors');
    writeFixture(st, EXAMPLE_TINY, 5);
    await safetensorsToTorch(st, path.join(models, EXAMPLE_MODELS.sd15));
    const input = path.join(srv.cfg.dataDir, 'input');
    fs.mkdirSync(input, { recursive: true });
    const px = img2imgPixels();
    fs.writeFileSync(path.join(input, 'example.png'), await sharp(px.data, { raw: { width: px.width, height: px.height, channels: px.channels } }).png().toBuffer());

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    const ctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
    ctx.setDefaultTimeout(30_000);
    page = await ctx.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
    });
    page.on('response', (r) => {
      const u = new URL(r.url());
      if (r.status() >= 500 || (r.status() >= 400 && !(u.pathname === '/api/userdata' && r.status() === 404))) problems.push(`${r.status()} ${u.pathname}`);
    });
    // Counts file choosers the page opens (a hidden file input clicked).
    await page.addInitScript(() => {
      (window as any).fileChoosers = 0;
      const click = HTMLInputElement.prototype.click;
      HTMLInputElement.prototype.click = function (this: HTMLInputElement) {
        if (this.type === 'file') (window as any).fileChoosers++;
        return click.call(this);
      };
    });
    await page.goto(`${srv.url}/`);
    await page.waitForSelector('body[data-ready=true]');
    await page.waitForSelector('#conn[data-state=connected]');
    // First start opens the templates panel: closed, the graph has the width of the page.
    if ((await page.getAttribute('body', 'data-tab')) === 'templates') await page.click('#sidebar-tabs [data-tab=templates]');
    await page.waitForSelector('[data-panel=templates]', { state: 'hidden' });
  });

  after(async () => {
    await browser?.close();
    await srv?.close();
    await unloadAll();
  });

  /** The graph as the reference's frontend saved it: every node, link, group and widget value. */
  async function assertSavedGraph(): Promise<void> {
    await page.waitForFunction(() => (window as any).wfPage.graph.nodes.length === 8);
    const g = await graphOf(page);
    assert.deepEqual(g.nodes, Object.fromEntries(saved.nodes.map((n: any) => [n.id, n.type])));
    const byId = new Map(saved.nodes.map((n: any) => [n.id, n]));
    const savedLinks = saved.links.map(([id, from, slot, to, toSlot, type]: any[]) => [id, from, slot, to, (byId.get(to) as any).inputs[toSlot].name, type]);
    assert.equal(savedLinks.length, 11);
    assert.deepEqual(g.links, savedLinks.sort((a: any, b: any) => a[0] - b[0]));
    assert.deepEqual(g.groups, ['Loading images']);
    // Loading pressed no button: Load Image's upload button opened no file chooser (a load that follows a click, as
    // Open… does, would have shown one).
    assert.equal(await page.evaluate(() => (window as any).fileChoosers), 0);
    assert.deepEqual(g.widgets, {
      // Numbers as saved, not rounded to the widget's step on load (the reference sends 0.8700000000000001, its `prompt` chunk).
      '3': { seed: 280823642470253, control_after_generate: 'randomize', steps: 20, cfg: 8, sampler_name: 'dpmpp_2m', scheduler: 'normal', denoise: 0.8700000000000001 },
      '6': { text: 'photograph of victorian woman with wings, sky clouds, meadow grass\n' },
      '7': { text: 'watermark, text\n' },
      '9': { filename_prefix: 'ComfyUI' },
      '10': { image: 'example.png', upload: 'image' },
      '14': { ckpt_name: 'v1-5-pruned-emaonly.ckpt' },
    });
    // litegraph 0.4's sizes ({"0": w, "1": h}) are read as sizes.
    assert.deepEqual(g.sizes['6'], [423, 164]);
    assert.deepEqual(g.sizes['3'], [315, 262]);
  }

  /** Queues from the page, waits for the image on SaveImage (node 9) and answers the prompt the server got. */
  async function queueAndSee(how: 'button' | 'keys'): Promise<Record<string, any>> {
    const prev = await page.evaluate(() => document.body.dataset.lastPromptId ?? '');
    if (how === 'button') await page.click('#queue-btn');
    else {
      // Focus, not a click: a click soon after another at the same point is a double-click (the search box).
      await page.focus('#graph-canvas');
      await page.keyboard.press('Control+Enter');
    }
    const h = await page.waitForFunction((p) => (document.body.dataset.lastPromptId && document.body.dataset.lastPromptId !== p ? document.body.dataset.lastPromptId : false), prev);
    const id = (await h.jsonValue()) as string;
    // The output image (the example's 192 × 160 input, resampled) on the SaveImage node.
    await page.waitForFunction(() => (window as any).wfPage.graph.getNodeById(9)?.imgs?.[0]?.naturalWidth === 192, undefined, { timeout: 60_000 });
    const job = (await srv.http.get(`/api/jobs/${id}`)).body;
    assert.equal(job.status, 'completed', JSON.stringify(job.execution_error ?? {}));
    assert.equal(job.outputs['9'].images[0].type, 'output');
    return job.workflow.prompt;
  }

  /**
   * The example's own prompt (its `prompt` chunk, from the frontend that saved the workflow) as today's frontends send
   * it: without `is_changed` and without the upload button's value ("choose file to upload": a button, not serialised).
   */
  function expectedPrompt(): Record<string, any> {
    const p: Record<string, any> = examplePrompt(EXAMPLES, 'img2img_workflow');
    for (const n of Object.values(p)) delete n.is_changed;
    delete p['10'].inputs['choose file to upload'];
    return p;
  }

  function withoutMeta(p: Record<string, any>): Record<string, any> {
    return Object.fromEntries(Object.entries(p).map(([id, n]) => [id, { class_type: n.class_type, inputs: n.inputs }]));
  }

  test('the saved workflow .json dropped on the page: the graph as saved; the Queue button runs it and the image shows on Save Image', async () => {
    await dropFile(page, 'img2img_workflow.json', 'application/json', SAVED);
    await assertSavedGraph();
    const t0 = Date.now();
    const prompt = await queueAndSee('button');
    console.log(`# queued to image on the node: ${Date.now() - t0} ms`);
    assert.deepEqual(withoutMeta(prompt), expectedPrompt());
    // control_after_generate "randomize": the seed changes after the prompt is queued, as the reference does.
    const seed = await page.evaluate(() => (window as any).wfPage.graph.getNodeById(3).widgets[0].value);
    assert.notEqual(seed, 280823642470253);
    await shot('reference-img2img');
    assert.deepEqual(problems, []);
  });

  test('a PNG carrying the same `workflow` chunk dropped on the page: the graph as saved; Ctrl+Enter runs it again', async () => {
    await page.click('#menu summary');
    await page.click('[data-command=new]');
    await page.waitForFunction(() => (window as any).wfPage.graph.nodes.length === 0);
    const prompt = JSON.stringify(examplePrompt(EXAMPLES, 'img2img_workflow'));
    await dropFile(page, 'img2img_workflow.png', 'image/png', await pngWithText({ prompt: Buffer.from(prompt), workflow: SAVED }));
    await assertSavedGraph();
    const sent = await queueAndSee('keys');
    assert.deepEqual(withoutMeta(sent), expectedPrompt());
    await shot('reference-img2img-png');
    assert.deepEqual(problems, []);
  });
});
