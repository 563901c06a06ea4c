/**
 * The workflow service's built-in page (the node editor) in headless Chromium:
 *
 * - load: navigation start to a usable graph (node definitions registered, the
 *   workflow on the canvas; the page's body[data-ready-ms]), median of --loads
 *   fresh pages, against a baseline in the same run: a static page of the same
 *   server with one script that draws one frame on a canvas;
 * - frames: a workflow of --nodes nodes (chains of EmptyImage → ImageBlur →
 *   ImageInvert → PreviewImage, linked), panned and zoomed every animation
 *   frame for --seconds; frames per second (median of --rounds), against the
 *   same canvas with no nodes as the baseline.
 *
 *   npx tsx bench/workflow/editor.ts [--nodes 500] [--seconds 3] [--rounds 5] [--loads 9]
 *
 * Headless Chromium renders the canvas in software (no GPU): the numbers are a
 * floor for a desktop browser.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type Page } from 'playwright-core';

const { values: args } = parseArgs({
  options: { nodes: { type: 'string', default: '500' }, seconds: { type: 'string', default: '3' }, rounds: { type: 'string', default: '5' }, loads: { type: 'string', default: '9' } },
});
const NODES = Number(args.nodes);
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const LOADS = Number(args.loads);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-editor-'));
process.env.LOG_REQUESTS = '0';
const { buildApp } = await import('../../services/workflow/src/app.ts');
const app = await buildApp({ port: 0, host: '127.0.0.1', dataDir, pgSchema: `bench_editor_${process.pid}`, logLevel: 'warn', runWorkers: true, flags: {} } as any);
// The baseline page: same origin and CSP-free static HTML, one script drawing one frame.
app.get('/bench-baseline', (_req, reply) =>
  reply.type('text/html').send('<!doctype html><canvas id=c width=800 height=600></canvas><script>const t=performance.now();requestAnimationFrame(()=>{document.getElementById("c").getContext("2d").fillRect(0,0,10,10);document.body.dataset.readyMs=String(Math.round(performance.now()));document.body.dataset.ready="true"})</script>'),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });

async function loadMs(path: string): Promise<number> {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const page = await ctx.newPage();
  await page.goto(`${url}${path}`);
  await page.waitForSelector('body[data-ready=true]');
  const ms = Number(await page.getAttribute('body', 'data-ready-ms'));
  await ctx.close();
  return ms;
}

/** Frames per second while the view pans and zooms every frame. */
async function fps(page: Page): Promise<number> {
  return page.evaluate(
    (seconds) =>
      new Promise<number>((resolve) => {
        const { canvas } = (window as any).wfPage;
        const start = performance.now();
        let frames = 0;
        const tick = (now: number) => {
          const t = (now - start) / 1000;
          canvas.ds.offset[0] = -200 - 600 * Math.sin(t);
          canvas.ds.offset[1] = -100 - 300 * Math.cos(t);
          canvas.ds.scale = 0.6 + 0.3 * Math.sin(t * 1.3);
          canvas.setDirty(true, true);
          frames++;
          if (now - start < seconds * 1000) requestAnimationFrame(tick);
          else resolve(frames / ((now - start) / 1000));
        };
        requestAnimationFrame(tick);
      }),
    SECONDS,
  );
}

async function graphPage(nodes: number): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const page = await ctx.newPage();
  // tsx names the functions inside page.evaluate callbacks with a helper the page lacks.
  await page.addInitScript('window.__name = (f) => f');
  await page.goto(`${url}/`);
  await page.waitForSelector('body[data-ready=true]');
  await page.evaluate((n) => {
    const p = (window as any).wfPage;
    p.open('workflow', { version: 0.4, nodes: [], links: [], groups: [], config: {}, extra: {} });
    const chain = ['EmptyImage', 'ImageBlur', 'ImageInvert', 'PreviewImage'];
    for (let i = 0; i < n; i++) {
      const row = Math.floor(i / chain.length);
      const col = i % chain.length;
      const node = p.addNode(chain[col], [col * 320, row * 180]);
      if (col > 0) p.graph.getNodeById(node.id - 1).connect(0, node, 0);
    }
  }, nodes);
  return page;
}

const loads: number[] = [];
const baseLoads: number[] = [];
for (let i = 0; i < LOADS; i++) {
  baseLoads.push(await loadMs('/bench-baseline'));
  loads.push(await loadMs('/'));
}
const full = await graphPage(NODES);
const empty = await graphPage(0);
const counted = await full.evaluate(() => [(window as any).wfPage.graph.nodes.length, (window as any).wfPage.graph.links.size]);
const fullFps: number[] = [];
const emptyFps: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  emptyFps.push(await fps(empty));
  fullFps.push(await fps(full));
}

console.log(`page load to a usable graph: median ${median(loads)} ms of ${LOADS} (${loads.join(', ')}); baseline page ${median(baseLoads)} ms; ratio ${(median(loads) / median(baseLoads)).toFixed(2)}`);
console.log(`pan+zoom every frame, ${counted[0]} nodes / ${counted[1]} links: median ${median(fullFps).toFixed(1)} fps of ${ROUNDS} rounds of ${SECONDS} s (${fullFps.map((x) => x.toFixed(1)).join(', ')}); empty canvas ${median(emptyFps).toFixed(1)} fps; ratio ${(median(fullFps) / median(emptyFps)).toFixed(2)}`);

await browser.close();
await app.close();
fs.rmSync(dataDir, { recursive: true, force: true });
