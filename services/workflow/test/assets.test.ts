import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { blake3 } from 'hash-wasm';
import sharp from 'sharp';
import { forEachStorage } from '@svc/testkit';
import { pollPause, startWorkflow, WsClient } from './helpers.ts';

/**
 * Assets over real HTTP on both storages: every route and its error body
 * (`{"error": {code, message, details}}`), content stored once per BLAKE3
 * hash, cursor pagination, tags, job outputs as assets (their id in the
 * `executed` message), multi-user isolation, seeding and pruning.
 */

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

async function solidPng(w: number, h: number, rgb: [number, number, number]): Promise<Buffer> {
  return sharp({ create: { width: w, height: h, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).png().toBuffer();
}

async function hashOf(buf: Buffer): Promise<string> {
  return `blake3:${await blake3(buf)}`;
}

interface Res {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

async function res(r: Response): Promise<Res> {
  const text = await r.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: r.status, body, text, headers: r.headers };
}

/** POST /api/assets as a browser's FormData: the file in `file`, the rest as text fields (tags may repeat). */
async function uploadAsset(srv: Srv, file: Buffer | undefined, filename: string, fields: Record<string, string | string[]> = {}, headers: Record<string, string> = {}): Promise<Res> {
  const form = new FormData();
  if (file) form.append('file', new Blob([new Uint8Array(file)], { type: 'application/octet-stream' }), filename);
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) form.append(k, x);
  return res(await fetch(`${srv.url}/api/assets`, { method: 'POST', body: form, headers }));
}

async function call(srv: Srv, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  return res(await fetch(srv.url + p, init));
}

function assertError(r: Res, status: number, code: string): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.body?.error?.code, code, r.text);
  assert.equal(typeof r.body.error.message, 'string');
  assert.ok(r.body.error.details && typeof r.body.error.details === 'object', r.text);
}

function blobFiles(srv: Srv): string[] {
  const root = path.join(srv.cfg.dataDir, 'assets', 'blobs');
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      if (e.isDirectory()) walk(path.join(d, e.name));
      else out.push(path.join(d, e.name));
    }
  };
  if (fs.existsSync(root)) walk(root);
  return out;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

forEachStorage('workflow assets', (storage) => {
  let srv: Srv;
  before(async () => {
    srv = await startWorkflow(storage);
  });
  after(async () => {
    await srv.close();
  });

  test('features reports assets on; /openapi.json documents every asset operation', async () => {
    const f = await call(srv, 'GET', '/api/features');
    assert.equal(f.body.assets, true);
    const spec = (await call(srv, 'GET', '/openapi.json')).body;
    const ids = new Set<string>();
    for (const item of Object.values<any>(spec.paths)) for (const op of Object.values<any>(item)) if (op.operationId) ids.add(op.operationId);
    assert.equal(spec.paths['/api/assets/hash/{hash}']?.head?.operationId, 'checkAssetByHash', 'the HEAD operation is documented under its own id');
    for (const id of ['checkAssetByHash', 'listAssets', 'createAsset', 'createAssetFromHash', 'getAsset', 'updateAsset', 'deleteAsset', 'getAssetContent', 'addAssetTags', 'removeAssetTags', 'listTags', 'refineAssetTags', 'seedAssets', 'getAssetSeedStatus', 'cancelAssetSeed', 'pruneAssets']) {
      assert.ok(ids.has(id), `missing ${id}`);
    }
  });

  test('upload: hash, deprecated aliases, image metadata nested, tags normalised; the same bytes again return the same asset', async () => {
    const img = await solidPng(7, 5, [10, 20, 30]);
    const h = await hashOf(img);
    const r = await uploadAsset(srv, img, 'photo.png', { tags: ['Input, Pictures', 'pictures'], user_metadata: JSON.stringify({ k: 'v', n: 3 }), name: 'My photo' });
    assert.equal(r.status, 201, r.text);
    const a = r.body;
    assert.match(a.id, UUID);
    assert.equal(a.name, 'My photo');
    assert.equal(a.hash, h);
    assert.equal(a.asset_hash, h);
    assert.equal(a.size, img.length);
    assert.equal(a.mime_type, 'image/png');
    assert.deepEqual(a.tags, ['input', 'pictures']);
    assert.deepEqual(a.user_metadata, { k: 'v', n: 3 });
    assert.deepEqual(a.metadata, { kind: 'image', width: 7, height: 5 });
    assert.equal(a.width, undefined);
    assert.equal(a.height, undefined);
    assert.equal(a.job_id, null);
    assert.equal(a.prompt_id, null);
    assert.equal(a.created_new, true);
    for (const k of ['created_at', 'updated_at', 'last_access_time']) assert.ok(!Number.isNaN(Date.parse(a[k])), k);
    assert.equal(blobFiles(srv).filter((f) => f.endsWith(h.slice(7))).length, 1);

    const again = await uploadAsset(srv, img, 'photo.png', { tags: 'input', name: 'My photo' });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.id, a.id);
    assert.equal(again.body.created_new, false);

    // Another name: another asset, still one stored copy of the bytes.
    const other = await uploadAsset(srv, img, 'copy.png', { tags: 'input' });
    assert.equal(other.status, 201);
    assert.notEqual(other.body.id, a.id);
    assert.equal(other.body.name, 'copy.png');
    assert.equal(blobFiles(srv).filter((f) => f.endsWith(h.slice(7))).length, 1);

    const got = await call(srv, 'GET', `/api/assets/${a.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.hash, h);
    assert.equal(got.body.created_new, undefined);
    // Every route answers at its bare path too (issue 28); a frontend build's own /assets/<file> is served first.
    assert.equal((await call(srv, 'GET', `/assets/${a.id}`)).status, 200, 'bare twin');
  });

  test('idempotent creation with a client id', async () => {
    const id = '3f2b7a3e-5a1c-4e0b-9b7e-1d2c3b4a5f60';
    const bytes = Buffer.from('idempotent bytes');
    const first = await uploadAsset(srv, bytes, 'a.bin', { id });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.id, id);
    assert.equal(first.body.mime_type, 'application/octet-stream');
    const retry = await uploadAsset(srv, bytes, 'a.bin', { id });
    assert.equal(retry.status, 200);
    assert.equal(retry.body.id, id);
    assert.equal(retry.body.created_new, false);
    assertError(await uploadAsset(srv, bytes, 'a.bin', { id: 'not-a-uuid' }), 400, 'INVALID_BODY');
  });

  test('upload error bodies', async () => {
    assertError(await call(srv, 'POST', '/api/assets', { file: 'x' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    assertError(await uploadAsset(srv, undefined, '', { name: 'x' }), 400, 'MISSING_FILE');
    assertError(await uploadAsset(srv, Buffer.alloc(0), 'empty.bin'), 400, 'EMPTY_UPLOAD');
    const bytes = Buffer.from('some bytes');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { hash: 'blake3:' + '0'.repeat(64) }), 400, 'HASH_MISMATCH');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { hash: 'md5:abc' }), 400, 'INVALID_HASH');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { user_metadata: '{not json' }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { user_metadata: '[1,2]' }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { user_metadata: '{"a":"\\u0000"}' }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { user_metadata: '{"a":"\\ud800"}' }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { user_metadata: '{"a":'.repeat(40) + '1' + '}'.repeat(40) }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { name: 'a\u0000b' }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { tags: 'ok,\u0000' }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { preview_id: 'nope' }), 400, 'INVALID_BODY');
    assertError(await uploadAsset(srv, bytes, 'x.bin', { preview_id: '00000000-0000-4000-8000-000000000000' }), 404, 'ASSET_NOT_FOUND');
    // A known hash without the file registers a new name for the stored bytes.
    const h = await hashOf(bytes);
    const up = await uploadAsset(srv, bytes, 'x.bin');
    assert.equal(up.status, 201);
    const byHash = await uploadAsset(srv, undefined, '', { hash: h, name: 'by hash' });
    assert.equal(byHash.status, 201, byHash.text);
    assert.equal(byHash.body.hash, h);
    assert.equal(byHash.body.name, 'by hash');
    // A client file name with control characters is cleaned, never stored raw.
    const odd = await uploadAsset(srv, Buffer.from('odd'), 'we\u0001ird.txt');
    assert.equal(odd.status, 201, odd.text);
    assert.equal(odd.body.name, 'weird.txt');
  });

  test('from-hash', async () => {
    const bytes = Buffer.from('from-hash content');
    const h = await hashOf(bytes);
    assertError(await call(srv, 'POST', '/api/assets/from-hash', { hash: h, name: 'n' }), 404, 'ASSET_NOT_FOUND');
    assert.equal((await uploadAsset(srv, bytes, 'orig.txt')).status, 201);
    const r = await call(srv, 'POST', '/api/assets/from-hash', { hash: h.toUpperCase().replace('BLAKE3', 'blake3'), name: 'second', tags: ['Models', 'x'], user_metadata: { a: 1 }, mime_type: 'text/plain' });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.hash, h);
    assert.equal(r.body.name, 'second');
    assert.deepEqual(r.body.tags, ['models', 'x']);
    assert.deepEqual(r.body.user_metadata, { a: 1 });
    assert.equal(r.body.mime_type, 'text/plain');
    assert.equal(r.body.created_new, true);
    assertError(await call(srv, 'POST', '/api/assets/from-hash', { hash: 'blake3:xyz', name: 'n' }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'POST', '/api/assets/from-hash', { name: 'n' }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'POST', '/api/assets/from-hash', { hash: h, user_metadata: 'x' }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'POST', '/api/assets/from-hash', { hash: h, name: 'a\u0000' }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'POST', '/api/assets/from-hash', '{"hash": '), 400, 'INVALID_JSON');
    assertError(await call(srv, 'POST', '/api/assets/from-hash', '[1]'), 400, 'INVALID_JSON');
  });

  test('get, update (AssetUpdated fields), delete; unknown ids', async () => {
    const up = await uploadAsset(srv, Buffer.from('to update'), 'u.txt', { tags: 'input' });
    const id = up.body.id;
    const missing = '00000000-0000-4000-8000-000000000000';
    const nf = await call(srv, 'GET', `/api/assets/${missing}`);
    assertError(nf, 404, 'ASSET_NOT_FOUND');
    assert.equal(nf.body.error.details.id, missing);
    const plain = await call(srv, 'GET', '/api/assets/not-a-uuid');
    assert.equal(plain.status, 404);

    const put = await call(srv, 'PUT', `/api/assets/${id}`, { name: 'renamed', user_metadata: { x: [1, 2] } });
    assert.equal(put.status, 200, put.text);
    for (const k of ['id', 'updated_at', 'name', 'hash', 'asset_hash', 'tags', 'mime_type', 'user_metadata', 'prompt_id', 'job_id']) assert.ok(k in put.body, k);
    assert.equal(put.body.name, 'renamed');
    assert.deepEqual(put.body.user_metadata, { x: [1, 2] });
    assert.ok(Date.parse(put.body.updated_at) >= Date.parse(up.body.updated_at));
    assertError(await call(srv, 'PUT', `/api/assets/${id}`, {}), 400, 'INVALID_BODY');
    assertError(await call(srv, 'PUT', `/api/assets/${id}`, { name: 5 }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'PUT', `/api/assets/${id}`, { user_metadata: { '\u0000': 1 } }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'PUT', `/api/assets/${id}`, '{'), 400, 'INVALID_JSON');
    assertError(await call(srv, 'PUT', `/api/assets/${missing}`, { name: 'x' }), 404, 'ASSET_NOT_FOUND');

    const img = await uploadAsset(srv, await solidPng(2, 2, [1, 2, 3]), 'p.png');
    const withPreview = await call(srv, 'PUT', `/api/assets/${id}`, { preview_id: img.body.id });
    assert.equal(withPreview.body.preview_id, img.body.id);
    assert.equal(withPreview.body.preview_url, `/api/assets/${img.body.id}/content?disposition=inline`);

    assert.equal((await call(srv, 'DELETE', `/api/assets/${id}`)).status, 204);
    assertError(await call(srv, 'GET', `/api/assets/${id}`), 404, 'ASSET_NOT_FOUND');
    assertError(await call(srv, 'DELETE', `/api/assets/${id}`), 404, 'ASSET_NOT_FOUND');
  });

  test('delete_content removes the bytes only once no asset holds them', async () => {
    const bytes = Buffer.from('shared bytes for delete');
    const h = await hashOf(bytes);
    const a = (await uploadAsset(srv, bytes, 'one.bin')).body;
    const b = (await uploadAsset(srv, bytes, 'two.bin')).body;
    const blob = () => blobFiles(srv).filter((f) => f.endsWith(h.slice(7))).length;
    assert.equal(blob(), 1);
    assert.equal((await call(srv, 'DELETE', `/api/assets/${a.id}?delete_content=true`)).status, 204);
    assert.equal(blob(), 1, 'still held by the other asset');
    assert.equal((await call(srv, 'GET', `/api/assets/${b.id}/content`)).status, 200);
    assert.equal((await call(srv, 'HEAD', `/api/assets/hash/${h}`)).status, 200);
    assert.equal((await call(srv, 'DELETE', `/api/assets/${b.id}?delete_content=true`)).status, 204);
    assert.equal(blob(), 0);
    assert.equal((await call(srv, 'HEAD', `/api/assets/hash/${h}`)).status, 404);
    assertError(await call(srv, 'POST', '/api/assets/from-hash', { hash: h, name: 'gone' }), 404, 'ASSET_NOT_FOUND');
    assertError(await call(srv, 'DELETE', `/api/assets/${b.id}?delete_content=maybe`), 400, 'INVALID_QUERY');
  });

  test('content: bytes, type, disposition, ranges; active types download', async () => {
    const img = await solidPng(4, 3, [200, 100, 50]);
    const a = (await uploadAsset(srv, img, 'pic name.png')).body;
    const r = await fetch(`${srv.url}/api/assets/${a.id}/content`);
    assert.equal(r.status, 200);
    assert.deepEqual(Buffer.from(await r.arrayBuffer()), img);
    assert.equal(r.headers.get('content-type'), 'image/png');
    assert.equal(r.headers.get('content-disposition'), "attachment; filename*=UTF-8''pic%20name.png");
    assert.equal(r.headers.get('accept-ranges'), 'bytes');
    const inline = await fetch(`${srv.url}/api/assets/${a.id}/content?disposition=inline`);
    await inline.arrayBuffer();
    assert.match(inline.headers.get('content-disposition')!, /^inline;/);
    const part = await fetch(`${srv.url}/api/assets/${a.id}/content`, { headers: { range: 'bytes=2-9' } });
    assert.equal(part.status, 206);
    assert.deepEqual(Buffer.from(await part.arrayBuffer()), img.subarray(2, 10));
    assert.equal(part.headers.get('content-range'), `bytes 2-9/${img.length}`);
    const bad = await fetch(`${srv.url}/api/assets/${a.id}/content`, { headers: { range: `bytes=${img.length + 10}-` } });
    await bad.arrayBuffer();
    assert.equal(bad.status, 416);

    const html = (await uploadAsset(srv, Buffer.from('<script>alert(1)</script>'), 'x.html', { mime_type: 'text/html' })).body;
    const h = await fetch(`${srv.url}/api/assets/${html.id}/content?disposition=inline`);
    await h.arrayBuffer();
    assert.equal(h.headers.get('content-type'), 'application/octet-stream');
    assert.match(h.headers.get('content-disposition')!, /^attachment;/);
    assert.equal(h.headers.get('x-content-type-options'), 'nosniff');
    assertError(await call(srv, 'GET', '/api/assets/00000000-0000-4000-8000-000000000000/content'), 404, 'ASSET_NOT_FOUND');
  });

  test('HEAD /api/assets/hash/{hash}', async () => {
    const bytes = Buffer.from('head check');
    const h = await hashOf(bytes);
    assert.equal((await call(srv, 'HEAD', `/api/assets/hash/${h}`)).status, 404);
    await uploadAsset(srv, bytes, 'h.bin');
    assert.equal((await call(srv, 'HEAD', `/api/assets/hash/${h}`)).status, 200);
    assert.equal((await call(srv, 'HEAD', `/api/assets/hash/${h.toUpperCase().replace('BLAKE3', 'blake3')}`)).status, 200);
    assert.equal((await call(srv, 'HEAD', '/api/assets/hash/sha256:abc')).status, 400);
  });
});

forEachStorage('workflow assets: listing, tags, cursors', (storage) => {
  let srv: Srv;
  const ids: string[] = [];
  before(async () => {
    srv = await startWorkflow(storage);
    // 25 assets: names n00..n24, sizes varying, tags by residue, metadata by parity.
    for (let i = 0; i < 25; i++) {
      const tags = ['all', i % 2 ? 'odd' : 'even', ...(i % 5 === 0 ? ['five'] : [])];
      const r = await uploadAsset(srv, Buffer.alloc(10 + ((i * 7) % 13), i), `n${String(i).padStart(2, '0')}.bin`, {
        tags: tags.join(','),
        user_metadata: JSON.stringify({ parity: i % 2 ? 'odd' : 'even', i, flag: i % 3 === 0, ...(i === 4 ? { opt: null } : {}) }),
      });
      assert.equal(r.status, 201, r.text);
      ids.push(r.body.id);
    }
  });
  after(async () => {
    await srv.close();
  });

  const list = async (qs: string) => {
    const r = await call(srv, 'GET', `/api/assets${qs ? '?' + qs : ''}`);
    assert.equal(r.status, 200, r.text);
    return r.body;
  };

  test('defaults: 20 newest first, total, has_more, next_cursor', async () => {
    const b = await list('');
    assert.equal(b.assets.length, 20);
    assert.equal(b.total, 25);
    assert.equal(b.has_more, true);
    assert.equal(typeof b.next_cursor, 'string');
    const created = b.assets.map((a: any) => Date.parse(a.created_at));
    assert.deepEqual(created, [...created].sort((x, y) => y - x));
    const tail = await list('offset=20');
    assert.equal(tail.assets.length, 5);
    assert.equal(tail.has_more, false);
    assert.equal(tail.next_cursor, undefined);
  });

  test('filters: tags (AND, exclude, comma or repeated), name, metadata', async () => {
    assert.equal((await list('include_tags=odd&limit=100')).total, 12);
    assert.equal((await list('include_tags=odd&include_tags=five&limit=100')).total, 2);
    assert.equal((await list('include_tags=odd,five&limit=100')).total, 2);
    assert.equal((await list('include_tags=ODD&exclude_tags=five&limit=100')).total, 10);
    assert.equal((await list('exclude_tags=odd,five')).total, 10);
    assert.equal((await list('name_contains=N1')).total, 10);
    assert.equal((await list('name_contains=%25')).total, 0, 'LIKE wildcards are literal');
    assert.equal((await list('name_contains=_')).total, 0);
    const mf = (o: unknown) => `metadata_filter=${encodeURIComponent(JSON.stringify(o))}&limit=100`;
    assert.equal((await list(mf({ parity: 'odd' }))).total, 12);
    assert.equal((await list(mf({ i: 7 }))).assets[0].name, 'n07.bin');
    assert.equal((await list(mf({ i: [1, 2, 3] }))).total, 3);
    assert.equal((await list(mf({ flag: true, parity: 'even' }))).total, 5);
    assert.equal((await list(mf({ opt: null }))).total, 25, 'null matches missing and null');
    assert.equal((await list(mf({ i: '7' }))).total, 0, 'types compare strictly');
    assert.equal((await list('asset_hash=' + (await list('limit=1')).assets[0].hash)).total >= 1, true);
  });

  test('sorts and orders', async () => {
    const byName = await list('sort=name&order=asc&limit=100');
    assert.deepEqual(byName.assets.map((a: any) => a.name), Array.from({ length: 25 }, (_, i) => `n${String(i).padStart(2, '0')}.bin`));
    const bySize = await list('sort=size&order=desc&limit=100');
    const sizes = bySize.assets.map((a: any) => a.size);
    assert.deepEqual(sizes, [...sizes].sort((x: number, y: number) => y - x));
    assert.equal((await list('sort=last_access_time')).assets.length, 20);
    assert.equal((await list('sort=updated_at&order=asc')).assets.length, 20);
  });

  test('cursor pagination walks every asset once, for every cursor sort and order', async () => {
    for (const sort of ['created_at', 'updated_at', 'name', 'size']) {
      for (const order of ['asc', 'desc']) {
        const seen: string[] = [];
        let after: string | undefined;
        let pages = 0;
        for (;;) {
          const b = await list(`sort=${sort}&order=${order}&limit=4${after ? `&after=${encodeURIComponent(after)}&offset=999` : ''}`);
          seen.push(...b.assets.map((a: any) => a.id));
          assert.equal(b.total, 25);
          pages++;
          if (after) assert.equal(b.has_more, b.next_cursor !== undefined);
          if (!b.next_cursor) break;
          after = b.next_cursor;
        }
        assert.equal(pages, 7, `${sort} ${order}`);
        assert.equal(seen.length, 25);
        assert.equal(new Set(seen).size, 25);
        const full = (await list(`sort=${sort}&order=${order}&limit=100`)).assets.map((a: any) => a.id);
        assert.deepEqual(seen, full, `${sort} ${order}: same order as one page`);
      }
    }
  });

  test('INVALID_CURSOR and INVALID_QUERY', async () => {
    const first = await list('sort=name&order=asc&limit=2');
    const c = first.next_cursor;
    assertError(await call(srv, 'GET', `/api/assets?sort=name&order=desc&after=${c}`), 400, 'INVALID_CURSOR');
    assertError(await call(srv, 'GET', `/api/assets?sort=size&order=asc&after=${c}`), 400, 'INVALID_CURSOR');
    assertError(await call(srv, 'GET', `/api/assets?sort=last_access_time&after=${c}`), 400, 'INVALID_CURSOR');
    assertError(await call(srv, 'GET', '/api/assets?after=%%%'), 400, 'INVALID_CURSOR');
    assertError(await call(srv, 'GET', '/api/assets?after=bm90IGpzb24'), 400, 'INVALID_CURSOR');
    const forge = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    assertError(await call(srv, 'GET', `/api/assets?after=${forge({ s: 'created_at', v: '1e400', id: 'x', o: 'desc' })}`), 400, 'INVALID_CURSOR');
    assertError(await call(srv, 'GET', `/api/assets?after=${forge({ s: 'created_at', v: '99999999999999999999', id: 'x', o: 'desc' })}`), 400, 'INVALID_CURSOR');
    assertError(await call(srv, 'GET', `/api/assets?sort=name&order=asc&after=${forge({ s: 'name', v: 'a\u0000', id: 'x', o: 'asc' })}`), 400, 'INVALID_CURSOR');
    assertError(await call(srv, 'GET', `/api/assets?after=${'A'.repeat(9000)}`), 400, 'INVALID_CURSOR');
    // A forged but well-formed cursor is just a position.
    const ok = await call(srv, 'GET', `/api/assets?sort=name&order=asc&after=${forge({ s: 'name', v: 'n20', id: 'zz', o: 'asc' })}`);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.assets[0].name, 'n20.bin');

    for (const q of ['limit=0', 'limit=501', 'limit=abc', 'offset=-1', 'sort=bogus', 'order=up', 'metadata_filter=%7Bx', 'metadata_filter=%5B1%5D', 'name_contains=a%00b', 'include_tags=x%00', 'exclude_tags=%00', 'limit=1&limit=2']) {
      assertError(await call(srv, 'GET', `/api/assets?${q}`), 400, 'INVALID_QUERY');
    }
  });

  test('tags: add, remove, list with counts, search, paging; refine', async () => {
    const id = ids[0]!;
    const add = await call(srv, 'POST', `/api/assets/${id}/tags`, { tags: ['New', 'even', 'new', ' spaced '] });
    assert.equal(add.status, 200, add.text);
    assert.deepEqual(add.body, { added: ['new', 'spaced'], already_present: ['even'], total_tags: 5 });
    const rem = await call(srv, 'DELETE', `/api/assets/${id}/tags`, { tags: ['spaced', 'nope'] });
    assert.deepEqual(rem.body, { removed: ['spaced'], not_present: ['nope'], total_tags: 4 });
    assertError(await call(srv, 'POST', `/api/assets/${id}/tags`, { tags: [] }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'POST', `/api/assets/${id}/tags`, { tags: [1] }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'POST', `/api/assets/${id}/tags`, {}), 400, 'INVALID_BODY');
    assertError(await call(srv, 'POST', `/api/assets/${id}/tags`, { tags: ['a\ud800'] }), 400, 'INVALID_BODY');
    assertError(await call(srv, 'DELETE', `/api/assets/${id}/tags`, 'nope'), 400, 'INVALID_JSON');
    assertError(await call(srv, 'POST', '/api/assets/00000000-0000-4000-8000-000000000000/tags', { tags: ['x'] }), 404, 'ASSET_NOT_FOUND');

    const all = await call(srv, 'GET', '/api/tags');
    assert.equal(all.status, 200);
    const counts = Object.fromEntries(all.body.tags.map((t: any) => [t.name, t.count]));
    assert.equal(counts.all, 25);
    assert.equal(counts.odd, 12);
    assert.equal(counts.even, 13);
    assert.equal(counts.five, 5);
    assert.equal(counts.new, 1);
    assert.equal(all.body.tags[0].name, 'all', 'most used first');
    assert.equal(all.body.total, 5);
    assert.equal(all.body.has_more, false);
    const page = await call(srv, 'GET', '/api/tags?limit=2&offset=1');
    assert.equal(page.body.tags.length, 2);
    assert.equal(page.body.has_more, true);
    const search = await call(srv, 'GET', '/api/tags?search=VE');
    assert.deepEqual(search.body.tags.map((t: any) => t.name).sort(), ['even', 'five']);
    assert.deepEqual((await call(srv, 'GET', '/api/tags?order=name_asc')).body.tags.map((t: any) => t.name), ['all', 'even', 'five', 'new', 'odd']);
    assertError(await call(srv, 'GET', '/api/tags?limit=0'), 400, 'INVALID_QUERY');
    assertError(await call(srv, 'GET', '/api/tags?search=%00'), 400, 'INVALID_QUERY');

    const refine = await call(srv, 'GET', '/api/assets/tags/refine?include_tags=odd');
    assert.equal(refine.status, 200);
    assert.deepEqual(refine.body, { tag_counts: { all: 12, five: 2 } });
    assertError(await call(srv, 'GET', '/api/assets/tags/refine?metadata_filter=nope'), 400, 'INVALID_QUERY');
  });
});

forEachStorage('workflow assets: job outputs, isolation, concurrency, seeding', (storage) => {
  test('every image a job saves is an asset whose id is in the executed message', async () => {
    const srv = await startWorkflow(storage);
    try {
      const ws = new WsClient(srv.url, 'asset-client');
      await ws.opened;
      const prompt = {
        '1': { class_type: 'EmptyImage', inputs: { width: 6, height: 4, batch_size: 2, color: 0xff0000 } },
        '2': { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'assets/test' } },
      };
      const r = await call(srv, 'POST', '/api/prompt', { prompt, client_id: 'asset-client' });
      assert.equal(r.status, 200, r.text);
      const msgs = await ws.promptDone(r.body.prompt_id);
      ws.close();
      const executed = msgs.find((m) => m.type === 'executed' && m.data.node === '2');
      assert.ok(executed, JSON.stringify(msgs.map((m) => m.type)));
      const images = executed!.data.output.images;
      assert.equal(images.length, 2);
      for (const img of images) {
        assert.match(img.id, UUID);
        const a = await call(srv, 'GET', `/api/assets/${img.id}`);
        assert.equal(a.status, 200, a.text);
        assert.equal(a.body.job_id, r.body.prompt_id);
        assert.equal(a.body.prompt_id, r.body.prompt_id);
        assert.equal(a.body.name, img.filename);
        assert.ok(a.body.tags.includes('output'));
        assert.deepEqual(a.body.metadata, { kind: 'image', width: 6, height: 4 });
        assert.equal(a.body.file_path, `output/assets/${img.filename}`);
        assert.equal(a.body.user_metadata.filename, `assets/${img.filename}`);
        assert.equal(a.body.preview_url, `/api/view?type=output&filename=${encodeURIComponent(img.filename)}&subfolder=assets`);
        const onDisk = fs.readFileSync(path.join(srv.cfg.dataDir, 'output', 'assets', img.filename));
        assert.equal(a.body.hash, await hashOf(onDisk));
        const content = await fetch(`${srv.url}/api/assets/${img.id}/content`);
        assert.deepEqual(Buffer.from(await content.arrayBuffer()), onDisk);
      }
      const job = await call(srv, 'GET', `/api/jobs/${r.body.prompt_id}`);
      assert.deepEqual(job.body.outputs['2'].images.map((i: any) => i.id), images.map((i: any) => i.id));
      const outs = await call(srv, 'GET', '/api/assets?include_tags=output');
      assert.equal(outs.body.total, 2);
    } finally {
      await srv.close();
    }
  });

  test('/upload/image answers the asset; /view serves blake3:<hash> names', async () => {
    const srv = await startWorkflow(storage);
    try {
      const img = await solidPng(5, 4, [9, 8, 7]);
      const h = await hashOf(img);
      const form = new FormData();
      form.append('image', new Blob([new Uint8Array(img)], { type: 'image/png' }), 'up.png');
      form.append('subfolder', 'sub');
      const r = await res(await fetch(`${srv.url}/api/upload/image`, { method: 'POST', body: form }));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.name, 'up.png');
      const a = r.body.asset;
      assert.match(a.id, UUID);
      assert.equal(a.name, 'up.png');
      assert.equal(a.asset_hash, h);
      assert.equal(a.size, img.length);
      assert.equal(a.mime_type, 'image/png');
      assert.deepEqual(a.tags, ['input']);
      const got = await call(srv, 'GET', `/api/assets/${a.id}`);
      assert.equal(got.body.file_path, 'input/sub/up.png');
      assert.deepEqual(got.body.metadata, { kind: 'image', width: 5, height: 4 });
      const view = await fetch(`${srv.url}/api/view?filename=${encodeURIComponent(h)}`);
      assert.equal(view.status, 200);
      assert.deepEqual(Buffer.from(await view.arrayBuffer()), img);
      const unknown = await fetch(`${srv.url}/api/view?filename=blake3:${'0'.repeat(64)}`);
      await unknown.arrayBuffer();
      assert.equal(unknown.status, 404);
      // The same file uploaded again is the same asset.
      const form2 = new FormData();
      form2.append('image', new Blob([new Uint8Array(img)], { type: 'image/png' }), 'up.png');
      form2.append('subfolder', 'sub');
      const again = await res(await fetch(`${srv.url}/api/upload/image`, { method: 'POST', body: form2 }));
      assert.equal(again.body.asset.id, a.id);
    } finally {
      await srv.close();
    }
  });

  test('--disable-assets: every asset route is 503 SERVICE_DISABLED, outputs carry no id', async () => {
    const srv = await startWorkflow(storage, { disableAssets: true });
    try {
      assert.equal((await call(srv, 'GET', '/api/features')).body.assets, false);
      const id = '00000000-0000-4000-8000-000000000000';
      for (const [m, p] of [
        ['GET', '/api/assets'],
        ['POST', '/api/assets'],
        ['POST', '/api/assets/from-hash'],
        ['GET', `/api/assets/${id}`],
        ['PUT', `/api/assets/${id}`],
        ['DELETE', `/api/assets/${id}`],
        ['GET', `/api/assets/${id}/content`],
        ['POST', `/api/assets/${id}/tags`],
        ['DELETE', `/api/assets/${id}/tags`],
        ['GET', '/api/tags'],
        ['GET', '/api/assets/tags/refine'],
        ['POST', '/api/assets/seed'],
        ['GET', '/api/assets/seed/status'],
        ['POST', '/api/assets/seed/cancel'],
        ['POST', '/api/assets/prune'],
      ]) {
        assertError(await call(srv, m!, p!, m === 'GET' ? undefined : {}), 503, 'SERVICE_DISABLED');
      }
      assert.equal((await call(srv, 'HEAD', `/api/assets/hash/blake3:${'0'.repeat(64)}`)).status, 503);
      const r = await call(srv, 'POST', '/api/prompt', { prompt: { '1': { class_type: 'EmptyImage', inputs: { width: 2, height: 2, batch_size: 1, color: 0 } }, '2': { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'x' } } } });
      let job: any;
      do job = (await call(srv, 'GET', `/api/jobs/${r.body.prompt_id}`)).body;
      while (!['completed', 'failed'].includes(job.status));
      assert.equal(job.status, 'completed');
      assert.equal(job.outputs['2'].images[0].id, undefined);
    } finally {
      await srv.close();
    }
  });

  test('--multi-user: assets are per user; shared seeded files are read-only', async () => {
    const srv = await startWorkflow(storage, { multiUser: true });
    try {
      const A = { 'comfy-user': 'alice' };
      const B = { 'comfy-user': 'bob' };
      const bytes = Buffer.from('alice private bytes');
      const h = await hashOf(bytes);
      const a = await uploadAsset(srv, bytes, 'secret.txt', { tags: 'private' }, A);
      assert.equal(a.status, 201);
      assert.equal((await call(srv, 'GET', '/api/assets', undefined, A)).body.total, 1);
      assert.equal((await call(srv, 'GET', '/api/assets', undefined, B)).body.total, 0);
      assertError(await call(srv, 'GET', `/api/assets/${a.body.id}`, undefined, B), 404, 'ASSET_NOT_FOUND');
      assertError(await call(srv, 'GET', `/api/assets/${a.body.id}/content`, undefined, B), 404, 'ASSET_NOT_FOUND');
      assertError(await call(srv, 'PUT', `/api/assets/${a.body.id}`, { name: 'x' }, B), 404, 'ASSET_NOT_FOUND');
      assertError(await call(srv, 'DELETE', `/api/assets/${a.body.id}`, undefined, B), 404, 'ASSET_NOT_FOUND');
      assertError(await call(srv, 'POST', `/api/assets/${a.body.id}/tags`, { tags: ['x'] }, B), 404, 'ASSET_NOT_FOUND');
      assert.equal((await call(srv, 'HEAD', `/api/assets/hash/${h}`, undefined, B)).status, 404);
      assertError(await call(srv, 'POST', '/api/assets/from-hash', { hash: h, name: 'steal' }, B), 404, 'ASSET_NOT_FOUND');
      assert.deepEqual((await call(srv, 'GET', '/api/tags', undefined, B)).body.tags, []);
      // The same bytes uploaded by Bob: his own asset, one stored copy.
      const b = await uploadAsset(srv, bytes, 'mine.txt', {}, B);
      assert.equal(b.status, 201);
      assert.notEqual(b.body.id, a.body.id);
      assert.equal(blobFiles(srv).length, 1);
      // A client id Alice already used is a conflict for Bob, not Alice's asset.
      const id = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
      assert.equal((await uploadAsset(srv, Buffer.from('x1'), 'x', { id }, A)).status, 201);
      assertError(await uploadAsset(srv, Buffer.from('x1'), 'x', { id }, B), 409, 'ID_CONFLICT');
      // Seeded input files are shared: everyone sees them, nobody changes them.
      fs.writeFileSync(path.join(srv.cfg.dataDir, 'input', 'shared.txt'), 'shared');
      const seed = await call(srv, 'POST', '/api/assets/seed?wait=true', { roots: ['input'] }, A);
      assert.equal(seed.status, 200, seed.text);
      const seen = await call(srv, 'GET', '/api/assets?include_tags=input', undefined, B);
      assert.equal(seen.body.total, 1);
      assertError(await call(srv, 'PUT', `/api/assets/${seen.body.assets[0].id}`, { name: 'mine' }, B), 403, 'FORBIDDEN');
    } finally {
      await srv.close();
    }
  });

  test('concurrent uploads of the same bytes from two clients: one stored blob, one asset', async () => {
    const srv = await startWorkflow(storage);
    try {
      const bytes = Buffer.alloc(3 * 1024 * 1024);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) & 0xff;
      const h = await hashOf(bytes);
      const results = await Promise.all(Array.from({ length: 6 }, () => uploadAsset(srv, bytes, 'same.bin', { tags: 'race' })));
      for (const r of results) assert.ok(r.status === 201 || r.status === 200, r.text);
      assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
      assert.equal(results.filter((r) => r.body.created_new).length, 1);
      const blobs = blobFiles(srv);
      assert.equal(blobs.length, 1);
      assert.ok(blobs[0]!.endsWith(h.slice(7)));
      assert.deepEqual(fs.readFileSync(blobs[0]!), bytes);
      assert.deepEqual(fs.readdirSync(path.join(srv.cfg.dataDir, 'assets', 'blobs', '.uploads')), [], 'no temporary file left');
      // Different names at once: several assets, still one blob.
      const named = await Promise.all(Array.from({ length: 4 }, (_, i) => uploadAsset(srv, bytes, `n${i}.bin`)));
      assert.equal(new Set(named.map((r) => r.body.id)).size, 4);
      assert.equal(blobFiles(srv).length, 1);
    } finally {
      await srv.close();
    }
  });

  test('concurrent /upload/image overwrites of one name: the asset describes the bytes the file ends with', async () => {
    const srv = await startWorkflow(storage);
    try {
      const images = await Promise.all(Array.from({ length: 8 }, (_, i) => solidPng(64 + i, 32, [i * 20, 100, 200 - i * 20])));
      const upload = async (img: Buffer) => {
        const form = new FormData();
        form.append('image', new Blob([new Uint8Array(img)], { type: 'image/png' }), 'race.png');
        form.append('overwrite', 'true');
        return res(await fetch(`${srv.url}/api/upload/image`, { method: 'POST', body: form }));
      };
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(images.map(upload));
        for (const r of answers) assert.equal(r.status, 200, r.text);
        const ids = new Set(answers.map((r) => r.body.asset.id));
        assert.equal(ids.size, 1, 'one asset per path');
        const onDisk = fs.readFileSync(path.join(srv.cfg.dataDir, 'input', 'race.png'));
        const got = await call(srv, 'GET', `/api/assets/${[...ids][0]}`);
        assert.equal(got.body.hash, await hashOf(onDisk));
        assert.equal(got.body.size, onDisk.length);
        const meta = await sharp(onDisk).metadata();
        assert.deepEqual(got.body.metadata, { kind: 'image', width: meta.width, height: meta.height });
      }
    } finally {
      await srv.close();
    }
  });

  test('upload larger than max_upload_size: 413', async () => {
    const srv = await startWorkflow(storage, { maxUploadSize: '1' });
    try {
      const r = await uploadAsset(srv, Buffer.alloc(1024 * 1024 + 10), 'big.bin');
      assertError(r, 413, 'FILE_TOO_LARGE');
      assert.equal(blobFiles(srv).length, 0);
      assert.equal((await call(srv, 'GET', '/api/assets')).body.total, 0);
    } finally {
      await srv.close();
    }
  });

  test('seed, status, cancel, prune', async () => {
    const srv = await startWorkflow(storage);
    try {
      const d = srv.cfg.dataDir;
      fs.mkdirSync(path.join(d, 'models', 'checkpoints', 'sub'), { recursive: true });
      fs.writeFileSync(path.join(d, 'models', 'checkpoints', 'sub', 'm.safetensors'), 'weights');
      fs.writeFileSync(path.join(d, 'input', 'in.png'), await solidPng(3, 2, [0, 0, 0]));
      fs.writeFileSync(path.join(d, 'input', '.hidden'), 'x');
      fs.writeFileSync(path.join(d, 'output', 'out.txt'), 'out');
      fs.symlinkSync('/etc', path.join(d, 'input', 'escape'));
      assert.deepEqual((await call(srv, 'GET', '/api/assets/seed/status')).body, { state: 'IDLE', progress: null, errors: [] });
      assert.deepEqual((await call(srv, 'POST', '/api/assets/seed/cancel')).body, { status: 'idle' });
      assertError(await call(srv, 'POST', '/api/assets/seed', { roots: ['etc'] }), 400, 'INVALID_BODY');
      assertError(await call(srv, 'POST', '/api/assets/seed', { roots: 'input' }), 400, 'INVALID_BODY');
      const r = await call(srv, 'POST', '/api/assets/seed?wait=true', {});
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { status: 'completed', progress: { scanned: 3, total: 3, created: 3, skipped: 0 }, errors: [] });
      const models = await call(srv, 'GET', '/api/assets?include_tags=models');
      assert.equal(models.body.total, 1);
      assert.deepEqual(models.body.assets[0].tags, ['models', 'checkpoints']);
      assert.equal(models.body.assets[0].file_path, 'models/checkpoints/sub/m.safetensors');
      const input = (await call(srv, 'GET', '/api/assets?include_tags=input')).body.assets[0];
      assert.deepEqual(input.metadata, { kind: 'image', width: 3, height: 2 });
      assert.equal(input.preview_url, '/api/view?type=input&filename=in.png');
      // A second scan finds nothing new.
      const again = await call(srv, 'POST', '/api/assets/seed?wait=1');
      assert.deepEqual(again.body.progress, { scanned: 3, total: 3, created: 0, skipped: 3 });
      const started = await call(srv, 'POST', '/api/assets/seed', { roots: ['output'] });
      assert.equal(started.status, 202, started.text);
      const busy = await call(srv, 'POST', '/api/assets/seed', { roots: ['output'] });
      if (busy.status === 409) {
        assert.equal(busy.body.status, 'already_running');
        assert.equal(busy.body.error.code, 'SCAN_IN_PROGRESS');
      } else assert.equal(busy.status, 202, 'the first scan may already have ended');
      for (let attempt = 0; ; attempt++) {
        const s = await call(srv, 'GET', '/api/assets/seed/status');
        if (s.body.state === 'IDLE') break;
        await pollPause(attempt);
      }
      fs.rmSync(path.join(d, 'output', 'out.txt'));
      const pruned = await call(srv, 'POST', '/api/assets/prune');
      assert.deepEqual(pruned.body, { status: 'completed', marked: 1 });
      assert.equal((await call(srv, 'GET', '/api/assets')).body.total, 2);
      assert.deepEqual((await call(srv, 'POST', '/api/assets/prune')).body, { status: 'completed', marked: 0 });
      // The file comes back: seeding restores its asset.
      fs.writeFileSync(path.join(d, 'output', 'out.txt'), 'out');
      await call(srv, 'POST', '/api/assets/seed?wait=true', { roots: ['output'] });
      assert.equal((await call(srv, 'GET', '/api/assets')).body.total, 3);
    } finally {
      await srv.close();
    }
  });
});

describe('asset cursors are opaque and bound to their sort', () => {
  test('round trip', async () => {
    const { encodeCursor, decodeCursor } = await import('../src/domain/assets/cursor.ts');
    const c = encodeCursor('size', 'asc', 42, 'id-1');
    assert.deepEqual(decodeCursor(c, 'size', 'asc'), { value: 42, id: 'id-1' });
    assert.throws(() => decodeCursor(c, 'name', 'asc'), /INVALID_CURSOR|Invalid cursor/);
  });
});
