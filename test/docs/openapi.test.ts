import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '@svc/testkit';
import { buildApp as buildMemory } from '../../services/memory/src/app.ts';
import { buildApp as buildWorkflow } from '../../services/workflow/src/app.ts';
import { buildApp as buildInventory } from '../../services/inventory/src/app.ts';

/**
 * An OpenAPI lint of every service's /openapi.json as each configuration
 * serves it: every operation has a tag, a summary, a security requirement
 * naming declared schemes and (if it takes input or credentials) an error
 * response; every $ref resolves; HTML routes are not operations. The document does not depend on the storage, so it is built on
 * SQLite only. Then the inventory's /docs (the largest document) is opened
 * in headless Chromium and timed.
 */

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);
/**
 * The inventory's document before it shared its schemas was 887 KB (issue 22) for about 290
 * operations: 3 KB each. /openapi.json keeps every parameter inline (NetBox clients read their
 * names); the copy Swagger UI reads (/docs/json, "all" in its selector) shares them and folds filter
 * lookups; /docs opens one tag at a time (/docs/sections/<tag>.json). Bounds per operation, as
 * the API keeps growing; the section /docs opens first has a bound of its own.
 */
const INVENTORY_MAX_BYTES_PER_OP = 2_000;
const INVENTORY_DOCS_MAX_BYTES_PER_OP = 1_200;
const INVENTORY_SECTION_MAX_BYTES = 250_000;

type Doc = { openapi: string; paths: Record<string, Record<string, any>>; components?: Record<string, Record<string, unknown>>; security?: Array<Record<string, string[]>> };

function lint(doc: Doc): string[] {
  const problems: string[] = [];
  const schemes = doc.components?.securitySchemes ?? {};
  for (const [url, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const id = `${method.toUpperCase()} ${url}`;
      if (!Array.isArray(op.tags) || op.tags.length === 0) problems.push(`${id}: no tag`);
      if (typeof op.summary !== 'string' || op.summary.trim() === '') problems.push(`${id}: no summary`);
      const security = op.security ?? doc.security;
      if (!Array.isArray(security)) problems.push(`${id}: no security requirement (neither its own nor the document's)`);
      else for (const req of security) for (const name of Object.keys(req)) if (!(name in schemes)) problems.push(`${id}: security scheme ${name} is not declared`);
      if (!op.responses || Object.keys(op.responses).length === 0) problems.push(`${id}: no responses`);
      else if (!Object.keys(op.responses).some((s) => /^[45]/.test(s))) {
        // Only an open operation without input (a public list, the JWKS) may have no error of the caller's to document.
        const secured = Array.isArray(security) && security.length > 0 && security.every((r: object) => Object.keys(r).length > 0);
        const input = op.requestBody || (op.parameters ?? []).some((p: any) => p.$ref || p.in === 'query' || p.in === 'path');
        if (secured || input) problems.push(`${id}: no error response`);
      }
    }
  }
  // Every reference points at something.
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      const ref = (v as { $ref?: unknown }).$ref;
      if (typeof ref === 'string') {
        const target = ref
          .replace(/^#\//, '')
          .split('/')
          .reduce<any>((o, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
        if (target === undefined) problems.push(`unresolved $ref ${ref}`);
      }
      Object.values(v).forEach(walk);
    }
  };
  walk(doc);
  return problems;
}

async function documentOf(build: (cfg: any) => Promise<FastifyInstance>, name: string, flags: Record<string, string | boolean> = {}, headers: Record<string, string> = {}) {
  const srv = await startTestServer(`docs_${name}`, 'sqlite', build, { flags });
  try {
    const r = await fetch(`${srv.url}/openapi.json`, { headers });
    assert.equal(r.status, 200);
    const text = await r.text();
    const d = await fetch(`${srv.url}/docs/json`, { headers });
    const docsText = d.status === 200 ? await d.text() : undefined;
    return { doc: JSON.parse(text) as Doc, bytes: Buffer.byteLength(text), docs: docsText ? (JSON.parse(docsText) as Doc) : undefined, docsBytes: docsText ? Buffer.byteLength(docsText) : undefined };
  } finally {
    await srv.close();
  }
}

describe('OpenAPI documents', () => {
  test('memory, without and with API keys', async () => {
    const open = await documentOf(buildMemory, 'memory');
    assert.deepEqual(lint(open.doc), []);
    // Without keys the header is accepted and ignored: anonymous or Bearer.
    assert.deepEqual(open.doc.security, [{}, { bearerAuth: [] }]);
    assert.equal((open.doc.components?.securitySchemes as any).bearerAuth.scheme, 'bearer');
    assert.ok(Object.keys(open.doc.components?.schemas ?? {}).length > 0, 'shared schemas are components');
    const keyed = await documentOf(buildMemory, 'memory_keys', { apiKeys: 'k1,k2' });
    assert.deepEqual(lint(keyed.doc), []);
    assert.deepEqual(keyed.doc.security, [{ bearerAuth: [] }]);
  });

  test('memory: the root URL leads to the docs', async () => {
    const srv = await startTestServer('docs_memory_root', 'sqlite', buildMemory, { flags: { apiKeys: 'k1' } });
    try {
      const r = await fetch(`${srv.url}/`, { redirect: 'manual' });
      assert.equal(r.status, 302);
      assert.equal(r.headers.get('location'), '/docs');
    } finally {
      await srv.close();
    }
  });

  test('workflow: local open, local with --api-key, hosted runtime', async () => {
    const local = await documentOf(buildWorkflow, 'workflow');
    assert.deepEqual(lint(local.doc), []);
    assert.deepEqual(local.doc.security, []);
    assert.equal(local.doc.paths['/api/prompt']?.post?.summary, 'Queue a prompt (a node graph) for execution');

    // With --api-key the document itself needs the key, as every route but /health.
    const keyed = await documentOf(buildWorkflow, 'workflow_key', { apiKey: 'secret-key-123' }, { authorization: 'Bearer secret-key-123' });
    assert.deepEqual(lint(keyed.doc), []);
    assert.deepEqual(keyed.doc.security, [{ bearerAuth: [] }, { tokenQuery: [] }]);

    const cloud = await documentOf(buildWorkflow, 'workflow_cloud', { runtime: 'cloud' });
    assert.deepEqual(lint(cloud.doc), []);
    const schemes = cloud.doc.components?.securitySchemes as Record<string, any>;
    assert.deepEqual(Object.keys(schemes).sort(), ['apiKeyHeader', 'bearerAuth', 'oauth2', 'sessionCookie']);
    assert.equal(schemes.sessionCookie.in, 'cookie');
    assert.equal(schemes.oauth2.flows.authorizationCode.tokenUrl, '/oauth/token');
    // Signing up and logging in need no credentials; the rest needs one of the four.
    assert.deepEqual(cloud.doc.paths['/api/auth/login']?.post?.security, []);
    assert.equal(cloud.doc.paths['/api/jobs']?.get?.security, undefined);
    assert.equal(cloud.doc.security?.length, 4);
  });

  test(`inventory: Token and Bearer, no HTML routes, at most ${INVENTORY_MAX_BYTES_PER_OP} bytes per operation (/docs: ${INVENTORY_DOCS_MAX_BYTES_PER_OP}; a section ${INVENTORY_SECTION_MAX_BYTES / 1000} KB)`, async () => {
    const srv = await startTestServer('docs_inventory', 'sqlite', buildInventory);
    try {
      const text = await (await fetch(`${srv.url}/openapi.json`)).text();
      const doc = JSON.parse(text) as Doc;
      const bytes = Buffer.byteLength(text);
      const docsText = await (await fetch(`${srv.url}/docs/json`)).text();
      const docs = JSON.parse(docsText) as Doc;
      const docsBytes = Buffer.byteLength(docsText);
      const ops = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).filter((m) => METHODS.has(m)).length, 0);
      assert.deepEqual(lint(docs), []);
      assert.equal(docs.openapi, '3.0.3', 'Swagger UI reads a 3.0 document (its 3.1 path is several times slower)');
      assert.ok(docsBytes <= INVENTORY_DOCS_MAX_BYTES_PER_OP * ops, `/docs/json: ${docsBytes} bytes for ${ops} operations`);
      assert.deepEqual(lint(doc), []);
      assert.equal(doc.openapi, '3.1.0');
      const schemes = doc.components?.securitySchemes as Record<string, any>;
      assert.deepEqual(schemes.tokenAuth, { type: 'apiKey', in: 'header', name: 'Authorization', description: schemes.tokenAuth.description });
      assert.equal(schemes.bearerAuth.scheme, 'bearer');
      assert.deepEqual(doc.security, [{ tokenAuth: [] }, { bearerAuth: [] }]);
      assert.deepEqual(doc.paths['/api/users/tokens/provision/']?.post?.security, []);
      assert.deepEqual(Object.keys(doc.paths).filter((u) => u === '/' || u.startsWith('/ui')), []);
      for (const u of ['/api/extras/webhooks/', '/api/extras/event-rules/', '/api/core/background-tasks/']) assert.ok(doc.paths[u]?.get?.summary, u);
      assert.ok(bytes <= INVENTORY_MAX_BYTES_PER_OP * ops, `${bytes} bytes for ${ops} operations`);
      // Models are components, referenced from the operations.
      assert.ok(doc.components?.schemas?.Device, 'Device is a component');
      assert.match(JSON.stringify(doc.paths['/api/dcim/devices/{id}/']), /#\/components\//);
      // Clients read every filter's name from the operation's own list (Ansible's inventory plugin does), at both URLs.
      const schema = (await (await fetch(`${srv.url}/api/schema/?format=json`)).json()) as Doc;
      for (const d of [doc, schema]) {
        assert.ok(d.paths['/api/dcim/devices/']!.get.parameters.some((p: any) => p.name === 'name__ic'));
        assert.ok(d.paths['/api/dcim/devices/']!.get.parameters.every((p: any) => typeof p.name === 'string'));
        assert.ok(d.paths['/api/virtualization/virtual-machines/']!.get.parameters.every((p: any) => typeof p.name === 'string'));
      }
      // In the copy /docs shows, a filter's lookup variants are named in its description, not listed one by one.
      const params = docs.paths['/api/dcim/devices/']!.get.parameters.map((p: any) => (p.$ref ? (docs.components!.parameters as any)[p.$ref.split('/').pop()] : p));
      assert.ok(!params.some((p: any) => p.name === 'name__ic'));
      assert.match(params.find((p: any) => p.name === 'name').description, /name__\{.*ic.*\}/);

      // /docs: one section per tag, dcim first, then the whole document as "all"; each section complete on its own.
      const config = (await (await fetch(`${srv.url}/docs/sections.json`)).json()) as { urls: Array<{ name: string; url: string }>; 'urls.primaryName': string };
      assert.equal(config['urls.primaryName'], 'dcim');
      assert.equal(config.urls[0]!.name, 'dcim');
      assert.deepEqual(config.urls.at(-1), { name: 'all', url: '/docs/json' });
      const seen = new Set<string>();
      const sizes: string[] = [];
      for (const { name, url } of config.urls.slice(0, -1)) {
        const r = await fetch(`${srv.url}${url}`);
        assert.equal(r.status, 200, url);
        assert.equal(r.headers.get('content-encoding'), 'gzip', 'fetch asks for gzip; the section comes compressed');
        const sectionText = await r.text();
        const section = JSON.parse(sectionText) as Doc;
        assert.deepEqual(lint(section), [], name);
        assert.ok(Buffer.byteLength(sectionText) <= INVENTORY_SECTION_MAX_BYTES, `${name}: ${Buffer.byteLength(sectionText)} bytes`);
        sizes.push(`${name} ${Math.round(Buffer.byteLength(sectionText) / 1000)} KB`);
        for (const [u, item] of Object.entries(section.paths)) for (const [m, op] of Object.entries(item)) {
          assert.equal(op.tags[0], name);
          seen.add(`${m} ${u}`);
        }
      }
      assert.equal(seen.size, Object.values(docs.paths).reduce((n, item) => n + Object.keys(item).length, 0), 'every operation is in one section');
      assert.equal((await fetch(`${srv.url}/docs/sections/nope.json`)).status, 404);
      // The NetBox document is served compressed too, and is the same each time.
      const yaml1 = await fetch(`${srv.url}/api/schema/`);
      assert.equal(yaml1.headers.get('content-encoding'), 'gzip');
      assert.equal(await yaml1.text(), await (await fetch(`${srv.url}/api/schema/`, { headers: { 'accept-encoding': 'identity' } })).text());
      console.log(`# inventory: ${ops} operations; /openapi.json ${bytes} bytes, /docs/json ${docsBytes} bytes, ${Object.keys(doc.paths).length} paths, ${Object.keys(doc.components?.schemas ?? {}).length} schemas; /docs sections: ${sizes.join(', ')}`);
    } finally {
      await srv.close();
    }
  });
});

const CHROMIUM = '/usr/bin/chromium';
const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install -y chromium)`;

/**
 * Times the /docs page at `path`: until its first tag shows with its operations, then finding
 * the largest operation (POST /api/dcim/devices/) with the filter box and opening it. Swagger UI
 * draws only the tags and operations in view, so the filter brings it there.
 */
async function timeDocs(browser: Browser, url: string) {
  const page = await browser.newPage();
  page.setDefaultTimeout(300_000);
  try {
    const t0 = Date.now();
    await page.goto(url);
    await page.locator('h3.opblock-tag').first().waitFor();
    await page.locator('.opblock-summary').first().waitFor();
    const tags = Date.now() - t0;
    await page.locator('button.authorize').first().waitFor();
    const t1 = Date.now();
    await page.locator('.operation-filter-input').fill('/api/dcim/devices/');
    const tag = page.locator('h3.opblock-tag[data-tag="dcim"]');
    await tag.waitFor();
    if ((await tag.getAttribute('data-is-open')) !== 'true') await tag.click();
    const op = page.locator('.opblock-post:has(.opblock-summary-path[data-path="/api/dcim/devices/"])').first();
    await op.waitFor();
    await op.locator('.opblock-summary').first().click();
    await op.locator('.opblock-body').waitFor();
    return { tags, operation: Date.now() - t1 };
  } finally {
    await page.close();
  }
}

describe('inventory /docs in headless Chromium', { skip }, () => {
  let srv: TestServer;
  let browser: Browser;
  before(async () => {
    srv = await startTestServer('docs_inventory_browser', 'sqlite', buildInventory);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  });
  after(async () => {
    await browser?.close();
    await srv?.close();
  });

  test('opens on the dcim section, offers the others and Authorize; shows it and opens the largest operation within 2 s', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(180_000);
    await page.goto(`${srv.url}/docs`);
    // The definition selector: dcim first, then the other tags, then "all".
    const select = page.locator('.topbar select');
    await select.waitFor();
    const options = await select.locator('option').allTextContents();
    assert.equal(options[0], 'dcim');
    assert.ok(options.includes('ipam') && options.includes('virtualization'), options.join(', '));
    assert.equal(options.at(-1), 'all');
    await page.locator('button.authorize').first().click();
    await page.locator('.auth-container').filter({ hasText: 'tokenAuth' }).first().waitFor();
    await page.locator('.auth-container').filter({ hasText: 'bearerAuth' }).first().waitFor();
    await page.locator('.modal-ux .close-modal').click();
    // Another section, chosen in the selector, replaces the first.
    await select.selectOption('ipam');
    await page.locator('h3.opblock-tag[data-tag="ipam"]').waitFor();
    await page.close();

    // The baseline is the selector's "all": the whole document in one (as OpenAPI 3.0 already: as
    // 3.1, what /docs served before, Swagger UI took 34 s to minutes for it on this machine under load).
    const sections = await timeDocs(browser, `${srv.url}/docs`);
    const whole = await timeDocs(browser, `${srv.url}/docs?urls.primaryName=all`);
    const load = os.loadavg()[0]!;
    console.log(`# inventory /docs: first tag shown in ${sections.tags} ms (whole document: ${whole.tags} ms), POST /api/dcim/devices/ found and opened in ${sections.operation} ms (whole: ${whole.operation} ms); load average ${load.toFixed(1)}`);
    // The bound, 2 s, on a machine that is not busier than its cores; on a loaded one (a
    // whole suite running beside it) a bound that still catches a document Swagger UI chokes on.
    const budget = load <= os.cpus().length ? 2_000 : 10_000;
    assert.ok(sections.tags <= budget, `first tag after ${sections.tags} ms (bound ${budget} ms at load ${load.toFixed(1)})`);
    assert.ok(sections.operation <= budget, `operation opened after ${sections.operation} ms (bound ${budget} ms at load ${load.toFixed(1)})`);
  });
});
