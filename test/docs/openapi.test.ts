import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
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
 * The inventory's document before it shared its schemas was 887 KB (issue 22), 1.18 MB by the
 * time they were shared. /openapi.json keeps every parameter inline (NetBox clients read their
 * names); the copy Swagger UI reads (/docs/json) shares them and folds filter lookups.
 */
const INVENTORY_MAX_BYTES = 500_000;
const INVENTORY_DOCS_MAX_BYTES = 300_000;

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

  test(`inventory: Token and Bearer, no HTML routes, at most ${INVENTORY_MAX_BYTES / 1000} KB (/docs: ${INVENTORY_DOCS_MAX_BYTES / 1000} KB)`, async () => {
    const { doc, bytes, docs, docsBytes } = await documentOf(buildInventory, 'inventory');
    assert.ok(docs && docsBytes);
    assert.deepEqual(lint(docs), []);
    assert.ok(docsBytes <= INVENTORY_DOCS_MAX_BYTES, `/docs/json: ${docsBytes} bytes`);
    assert.deepEqual(lint(doc), []);
    const schemes = doc.components?.securitySchemes as Record<string, any>;
    assert.deepEqual(schemes.tokenAuth, { type: 'apiKey', in: 'header', name: 'Authorization', description: schemes.tokenAuth.description });
    assert.equal(schemes.bearerAuth.scheme, 'bearer');
    assert.deepEqual(doc.security, [{ tokenAuth: [] }, { bearerAuth: [] }]);
    assert.deepEqual(doc.paths['/api/users/tokens/provision/']?.post?.security, []);
    assert.deepEqual(Object.keys(doc.paths).filter((u) => u === '/' || u.startsWith('/ui')), []);
    for (const u of ['/api/extras/webhooks/', '/api/extras/event-rules/', '/api/core/background-tasks/']) assert.ok(doc.paths[u]?.get?.summary, u);
    assert.ok(bytes <= INVENTORY_MAX_BYTES, `${bytes} bytes`);
    // Models are components, referenced from the operations.
    assert.ok(doc.components?.schemas?.Device, 'Device is a component');
    assert.match(JSON.stringify(doc.paths['/api/dcim/devices/{id}/']), /#\/components\//);
    // Clients read every filter's name from the operation's own list (Ansible's inventory plugin does).
    assert.ok(doc.paths['/api/dcim/devices/']!.get.parameters.some((p: any) => p.name === 'name__ic'));
    assert.ok(doc.paths['/api/dcim/devices/']!.get.parameters.every((p: any) => typeof p.name === 'string'));
    // In the copy /docs shows, a filter's lookup variants are named in its description, not listed one by one.
    const params = docs.paths['/api/dcim/devices/']!.get.parameters.map((p: any) => (p.$ref ? (docs.components!.parameters as any)[p.$ref.split('/').pop()] : p));
    assert.ok(!params.some((p: any) => p.name === 'name__ic'));
    assert.match(params.find((p: any) => p.name === 'name').description, /name__\{.*ic.*\}/);
    console.log(`# inventory /openapi.json: ${bytes} bytes, /docs/json ${docsBytes} bytes, ${Object.keys(doc.paths).length} paths, ${Object.keys(doc.components?.schemas ?? {}).length} schemas`);
  });
});

const CHROMIUM = '/usr/bin/chromium';
const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install -y chromium)`;

/** The document with every $ref replaced by its target: what the service served before it shared its components. */
function inlined(doc: Doc): Doc {
  const resolve = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(resolve);
    if (!v || typeof v !== 'object') return v;
    const ref = (v as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && Object.keys(v).length === 1) return resolve(ref.slice(2).split('/').reduce<any>((o, k) => o[k], doc));
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)]));
  };
  return { ...doc, paths: resolve(doc.paths) as Doc['paths'], components: { securitySchemes: doc.components?.securitySchemes ?? {} } };
}

/**
 * Times the /docs page at `base`: until the tag list shows, then opening the
 * dcim tag and its largest operation.
 */
async function timeDocs(browser: Browser, base: string) {
  const page = await browser.newPage();
  page.setDefaultTimeout(180_000);
  try {
    const t0 = Date.now();
    await page.goto(`${base}/docs`);
    await page.locator('h3.opblock-tag[data-tag="dcim"]').waitFor();
    const tags = Date.now() - t0;
    await page.locator('button.authorize').first().waitFor();
    const t1 = Date.now();
    await page.locator('h3.opblock-tag[data-tag="dcim"]').click();
    const op = page.locator('.opblock-post:has(.opblock-summary-path[data-path="/api/dcim/devices/"])').first();
    await op.waitFor();
    await op.locator('.opblock-summary').first().click();
    await op.locator('.opblock-body').waitFor();
    return { tags, operation: Date.now() - t1 };
  } finally {
    await page.close();
  }
}

/** The service's own /docs page and assets, proxied, with its document replaced by `doc` (the baseline). */
async function docsWith(serviceUrl: string, doc: string): Promise<http.Server> {
  const server = http.createServer(async (req, res) => {
    if (req.url === '/docs/json') return void res.writeHead(200, { 'content-type': 'application/json' }).end(doc);
    const r = await fetch(`${serviceUrl}${req.url}`, { redirect: 'manual' });
    const headers: Record<string, string> = { 'content-type': r.headers.get('content-type') ?? 'application/octet-stream' };
    const location = r.headers.get('location');
    if (location) headers.location = location;
    res.writeHead(r.status, headers).end(Buffer.from(await r.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe('inventory /docs in headless Chromium', { skip }, () => {
  let srv: TestServer;
  let browser: Browser;
  let baseline: http.Server;
  let baselineUrl = '';
  before(async () => {
    srv = await startTestServer('docs_inventory_browser', 'sqlite', buildInventory);
    const doc = (await (await fetch(`${srv.url}/docs/json`)).json()) as Doc;
    const text = JSON.stringify(inlined(doc));
    baseline = await docsWith(srv.url, text);
    baselineUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}`;
    console.log(`# inventory /docs/json ${JSON.stringify(doc).length} bytes; inlined ${text.length} bytes`);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  });
  after(async () => {
    await browser?.close();
    await new Promise((r) => (baseline ? baseline.close(r) : r(null)));
    await srv?.close();
  });

  test('shows its tags, Authorize and the largest operation faster than the inlined document', async () => {
    // The service's /docs page itself (its settings: tags collapsed, models hidden, Authorize).
    const page = await browser.newPage();
    page.setDefaultTimeout(180_000);
    await page.goto(`${srv.url}/docs`);
    await page.locator('button.authorize').first().click();
    await page.locator('.auth-container').filter({ hasText: 'tokenAuth' }).first().waitFor();
    await page.locator('.auth-container').filter({ hasText: 'bearerAuth' }).first().waitFor();
    await page.close();

    const shared = await timeDocs(browser, srv.url);
    const inline = await timeDocs(browser, baselineUrl);
    console.log(`# inventory /docs: tags shown in ${shared.tags} ms (inlined document: ${inline.tags} ms), POST /api/dcim/devices/ opened in ${shared.operation} ms (inlined: ${inline.operation} ms)`);
    assert.ok(shared.tags < inline.tags, 'the shared document shows its tags sooner');
    assert.ok(shared.operation < inline.operation, 'the shared document opens an operation sooner');
  });
});
