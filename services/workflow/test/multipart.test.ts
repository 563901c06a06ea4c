import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { MultipartError, multipartBoundary, parseMultipart, type MultipartLimits, type MultipartPart } from '../src/http/multipart.ts';
import { upload } from './files-helpers.ts';
import { startWorkflow } from './helpers.ts';

/**
 * The in-memory multipart parser of the upload routes (src/http/multipart.ts):
 * the same parts as the streaming parser (@fastify/busboy, which the routes
 * use for bodies past the spool limit) on random forms, its bounds, and
 * hostile bodies — mutated, truncated, random — that must end in a part list
 * or a MultipartError (400/413), never another exception, within a time bound;
 * over HTTP, hostile uploads are 4xx and the server stays up.
 */

const LIMITS: MultipartLimits = { maxFiles: 8, maxFields: 32, maxParts: 40, maxFieldBytes: 1024 * 1024, maxHeaderPairs: 100, maxHeaderBytes: 80 * 1024 };
const busboy = createRequire(createRequire(import.meta.url).resolve('@fastify/multipart'))('@fastify/busboy');

/** A seeded generator (mulberry32), so that a failing case can be replayed from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What FormData sends, as the bytes and the Content-Type a client puts on the wire. */
async function encode(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const req = new Request('http://localhost/', { method: 'POST', body: form });
  return { body: Buffer.from(await req.arrayBuffer()), contentType: req.headers.get('content-type')! };
}

interface Seen {
  name: string | undefined;
  filename?: string;
  value?: string;
  data?: Buffer;
  contentType?: string;
}

/** The parts as the streaming parser sees them (the routes' other path, with the routes' options). */
function viaBusboy(body: Buffer, contentType: string): Promise<Seen[]> {
  return new Promise((resolve, reject) => {
    const seen: Seen[] = [];
    const pending: Promise<void>[] = [];
    const bb = busboy({ headers: { 'content-type': contentType }, preservePath: true, limits: { fileSize: Infinity, files: 8, fields: 32, parts: 40, fieldSize: 1024 * 1024, headerPairs: 100 } });
    bb.on('file', (name: string, file: Readable, filename: string, _enc: string, mimetype: string) => {
      const entry: Seen = { name, filename, contentType: mimetype };
      seen.push(entry);
      pending.push(
        (async () => {
          const chunks: Buffer[] = [];
          for await (const c of file) chunks.push(c as Buffer);
          entry.data = Buffer.concat(chunks);
        })(),
      );
    });
    bb.on('field', (name: string, value: string) => seen.push({ name, value }));
    bb.on('finish', () => Promise.all(pending).then(() => resolve(seen), reject));
    bb.on('error', reject);
    Readable.from([body]).pipe(bb);
  });
}

function ours(parts: MultipartPart[]): Seen[] {
  return parts.map((p) => (p.file ? { name: p.name, filename: p.filename, contentType: p.contentType, data: Buffer.from(p.data) } : { name: p.name, value: p.value }));
}

function randomText(r: () => number, max: number): string {
  const alphabet = ['a', 'b', 'Z', '0', ' ', '.', '-', '_', '"', "'", '\\', '/', ';', '=', '%', 'é', 'ß', '日', '😀', '\t', ':', '(', ')'];
  let s = '';
  const n = Math.floor(r() * max);
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)];
  return s;
}

function randomBytes(r: () => number, max: number): Buffer {
  const b = Buffer.alloc(Math.floor(r() * max));
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(r() * 256);
  // Now and then bytes that look like a boundary or a header end inside the data.
  if (b.length > 8 && r() < 0.3) b.write('\r\n--', Math.floor(r() * (b.length - 4)), 'latin1');
  if (b.length > 8 && r() < 0.3) b.write('\r\n\r\n', Math.floor(r() * (b.length - 4)), 'latin1');
  return b;
}

async function randomForm(r: () => number): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  const n = 1 + Math.floor(r() * 6);
  for (let i = 0; i < n; i++) {
    const name = r() < 0.2 ? 'image' : randomText(r, 12) || 'f';
    if (r() < 0.5) form.append(name, new Blob([new Uint8Array(randomBytes(r, r() < 0.1 ? 200_000 : 3000))], { type: r() < 0.5 ? 'image/png' : '' }), randomText(r, 20) || 'x.png');
    else form.append(name, randomText(r, 40));
  }
  return encode(form);
}

describe('multipart parser', () => {
  test('a FormData body: fields decoded, the file a view of the body with its name and type', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10, 0, 1, 2]);
    const form = new FormData();
    form.append('image', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'ça va "x".png');
    form.append('overwrite', 'true');
    form.append('subfolder', 'a/b ü');
    const { body, contentType } = await encode(form);
    const parts = parseMultipart(body, multipartBoundary(contentType)!, LIMITS);
    assert.deepEqual(
      parts.map((p) => [p.name, p.filename, p.file, p.contentType, p.value]),
      [
        ['image', 'ça va %22x%22.png', true, 'image/png', undefined],
        ['overwrite', undefined, false, 'text/plain', 'true'],
        ['subfolder', undefined, false, 'text/plain', 'a/b ü'],
      ],
    );
    assert.ok(parts[0]!.data.equals(png));
    assert.equal(parts[0]!.data.buffer, body.buffer, 'the file is not copied');
    assert.deepEqual(ours(parts), await viaBusboy(body, contentType));
  });

  test('random forms give the parts the streaming parser gives (200 seeds)', async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { body, contentType } = await randomForm(rng(seed));
      const expected = await viaBusboy(body, contentType);
      assert.deepEqual(ours(parseMultipart(body, multipartBoundary(contentType)!, LIMITS)), expected, `seed ${seed}`);
    }
  });

  test('hand-written bodies: preamble and epilogue, padding after a boundary, quoted escapes, RFC 5987 names, skipped parts, octet-stream without a name', () => {
    const b = 'XyZ';
    const body = Buffer.from(
      [
        'preamble ignored',
        `--${b}  `,
        'Content-Disposition: form-data; name="a"; filename="q\\"uote\\\\d\\x.png"',
        '',
        'A',
        `--${b}`,
        "content-disposition: form-data; name=b; filename*=UTF-8''%E6%97%A5%20x.png; filename=\"fallback.png\"",
        'Content-Type: IMAGE/PNG; charset=whatever',
        '',
        'B',
        `--${b}`,
        'Content-Disposition: attachment; name="skipped"',
        '',
        'S',
        `--${b}`,
        'Content-Type: text/plain',
        '',
        'no disposition: skipped',
        `--${b}`,
        'Content-Disposition: form-data; name="line\rbreak"',
        '',
        'bare CR in a name: skipped',
        `--${b}`,
        'Content-Disposition: form-data; name="bin"',
        'Content-Type: application/octet-stream',
        '',
        'raw',
        `--${b}`,
        'Content-Disposition: form-data; name="latin"',
        'Content-Type: text/plain; charset=iso-8859-1',
        '',
        '\xe9t\xe9',
        `--${b}`,
        'Content-Disposition: form-data; name="empty"',
        '',
        '',
        `--${b}--`,
        'epilogue ignored',
      ].join('\r\n'),
      'latin1',
    );
    const parts = parseMultipart(body, b, LIMITS);
    assert.deepEqual(
      parts.map((p) => [p.name, p.filename, p.file, p.contentType, p.file ? p.data.toString('latin1') : p.value]),
      [
        ['a', 'q"uote\\d\\x.png', true, 'text/plain', 'A'],
        ['b', '日 x.png', true, 'image/png', 'B'],
        ['bin', undefined, true, 'application/octet-stream', 'raw'],
        ['latin', undefined, false, 'text/plain', 'été'],
        ['empty', undefined, false, 'text/plain', ''],
      ],
    );
  });

  test('a NUL or a path in a file name reaches the route as sent (the route refuses it)', () => {
    const b = 'b0';
    const body = Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="image"; filename="a\0b/../c.png"\r\n\r\nx\r\n--${b}--\r\n`, 'latin1');
    assert.equal(parseMultipart(body, b, LIMITS)[0]!.filename, 'a\0b/../c.png');
  });

  test('boundaries: only multipart/form-data with a valid boundary (quoted or not, 1-70 characters)', () => {
    assert.equal(multipartBoundary('multipart/form-data; boundary=abc'), 'abc');
    assert.equal(multipartBoundary('Multipart/Form-Data; charset=utf-8; boundary="a b:c"'), 'a b:c');
    for (const bad of [undefined, '', 'multipart/form-data', 'multipart/form-data; boundary=', 'multipart/form-data; boundary="x "', `multipart/form-data; boundary=${'x'.repeat(71)}`, 'multipart/form-data; boundary=a\x00b', 'multipart/form-data; boundary=a"b', 'multipart/mixed; boundary=abc', 'text/plain; boundary=abc', 'multipart/form-data; boundary=é']) {
      assert.equal(multipartBoundary(bad), undefined, String(bad));
    }
  });

  test('limits: parts, files and fields counted as met; a part header searched no further than its bound; header lines; a field cut at its size', () => {
    const b = 'lim';
    const field = (name: string, v = 'v') => `--${b}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${v}\r\n`;
    const file = (name: string) => `--${b}\r\nContent-Disposition: form-data; name="${name}"; filename="f"\r\n\r\nx\r\n`;
    const end = `--${b}--\r\n`;
    const refused = (body: string, status: number, re: RegExp, limits = LIMITS) =>
      assert.throws(
        () => parseMultipart(Buffer.from(body, 'latin1'), b, limits),
        (e: unknown) => e instanceof MultipartError && e.status === status && re.test(e.message),
      );
    refused(Array.from({ length: 41 }, (_, i) => `--${b}\r\nContent-Disposition: attachment\r\n\r\n${i}\r\n`).join('') + end, 413, /parts limit/);
    refused(Array.from({ length: 9 }, (_, i) => file(`f${i}`)).join('') + end, 413, /files limit/);
    refused(Array.from({ length: 33 }, (_, i) => field(`f${i}`)).join('') + end, 413, /fields limit/);
    refused(`--${b}\r\nX-Big: ${'a'.repeat(81 * 1024)}\r\n\r\nx\r\n${end}`, 413, /header larger/);
    refused(`--${b}\r\n${Array.from({ length: 101 }, (_, i) => `X-${i}: y`).join('\r\n')}\r\n\r\nx\r\n${end}`, 413, /header lines/);
    const cut = parseMultipart(Buffer.from(field('big', 'x'.repeat(2000)) + end, 'latin1'), b, { ...LIMITS, maxFieldBytes: 100 });
    assert.equal(cut[0]!.value, 'x'.repeat(100));
    // The header search stops at its bound even when the body goes on for megabytes without CRLF CRLF.
    const t0 = performance.now();
    refused(`--${b}\r\nContent-Disposition: form-data; name="a"\r\n` + 'h'.repeat(8 * 1024 * 1024), 413, /header larger/);
    assert.ok(performance.now() - t0 < 1000);
  });

  test('malformed bodies are 400: no boundary, garbage after a boundary, a header line without a colon, a body that ends inside a part', () => {
    const b = 'mal';
    for (const body of [
      'no boundary at all',
      `--${b}`,
      `--${b}garbage\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n--${b}--`,
      `--${b}\r\nno colon here\r\n\r\nx\r\n--${b}--`,
      `--${b}\r\n folded first line: x\r\n\r\nx\r\n--${b}--`,
      `--${b}\r\nContent-Disposition: form-data; name="a"\r\n\r\nx`,
      `--${b}\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n--${b}`,
      `--${b}\r\nContent-Disposition: form-data; name="a"`,
    ]) {
      assert.throws(
        () => parseMultipart(Buffer.from(body, 'latin1'), b, LIMITS),
        (e: unknown) => e instanceof MultipartError && e.status === 400,
        JSON.stringify(body),
      );
    }
    assert.deepEqual(parseMultipart(Buffer.alloc(0), b, LIMITS), [], 'an empty body is an empty form');
  });

  test('fuzz: 3,000 hostile bodies (mutated, truncated, spliced, random) end in parts or a MultipartError, quickly', async () => {
    const seeds = await Promise.all([1, 2, 3, 4, 5].map((s) => randomForm(rng(1000 + s))));
    const r = rng(42);
    let refused = 0;
    for (let i = 0; i < 3000; i++) {
      const { body: base, contentType } = seeds[i % seeds.length]!;
      const boundary = multipartBoundary(contentType)!;
      let body: Buffer = Buffer.from(base);
      const kind = i % 6;
      if (kind === 0) for (let k = 0; k < 1 + r() * 20; k++) body[Math.floor(r() * body.length)] = Math.floor(r() * 256);
      else if (kind === 1) body = body.subarray(0, Math.floor(r() * body.length));
      else if (kind === 2) {
        // Splice in fragments of the syntax: boundaries, header ends, dashes, lone CR/LF.
        const frags = [`\r\n--${boundary}`, `--${boundary}--`, '\r\n\r\n', '\r\n', '\r', '\n', '--', ';', '"', `\r\n--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="x"\r\n\r\n`];
        const at = Math.floor(r() * body.length);
        body = Buffer.concat([body.subarray(0, at), Buffer.from(frags[Math.floor(r() * frags.length)]!, 'latin1'), body.subarray(at)]);
      } else if (kind === 3) body = randomBytes(r, 5000);
      else if (kind === 4) body = Buffer.concat([Buffer.from(`--${boundary}\r\n`), randomBytes(r, 3000)]);
      else {
        // Headers of random text, bounded or not.
        body = Buffer.from(`--${boundary}\r\n${randomText(r, 300).replace(/\r|\n/g, '')}: ${randomText(r, 300)}\r\n\r\n${randomText(r, 50)}\r\n--${boundary}--`, 'utf8');
      }
      const t0 = performance.now();
      try {
        const parts = parseMultipart(body, boundary, LIMITS);
        assert.ok(parts.length <= LIMITS.maxParts);
        for (const p of parts) {
          if (p.file) assert.equal(p.data.buffer, body.buffer, 'a file is a view of the body');
          else assert.equal(typeof p.value, 'string');
        }
      } catch (err) {
        assert.ok(err instanceof MultipartError, `case ${i} (kind ${kind}): ${(err as Error).stack}`);
        assert.ok(err.status === 400 || err.status === 413);
        refused++;
      }
      assert.ok(performance.now() - t0 < 500, `case ${i} took ${performance.now() - t0} ms`);
    }
    assert.ok(refused > 300, `only ${refused} refused: the mutations do not reach the error paths`);
  });
});

describe('uploads through the in-memory parser, over HTTP', () => {
  let srv: Awaited<ReturnType<typeof startWorkflow>>;
  let port: number;
  before(async () => {
    srv = await startWorkflow('sqlite', { maxUploadSize: '1' });
    port = Number(new URL(srv.url).port);
  });
  after(async () => {
    await srv.close();
  });

  /** Sends raw bytes (declared length as given) and reads the status line and body; a reset counts as an answer too. */
  function raw(headers: Record<string, string | number>, body: Buffer, opts: { endEarly?: boolean } = {}): Promise<{ status: number | 'closed'; body: string }> {
    return new Promise((resolve) => {
      const sock = net.connect(port, '127.0.0.1');
      let got = '';
      sock.on('data', (d) => (got += d.toString('latin1')));
      sock.on('error', () => undefined);
      sock.on('close', () => {
        const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
        resolve({ status: m ? Number(m[1]) : 'closed', body: got.slice(got.indexOf('\r\n\r\n') + 4) });
      });
      const head = [`POST /upload/image HTTP/1.1`, `Host: 127.0.0.1`, 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
      sock.write(head);
      sock.write(body);
      if (opts.endEarly) setTimeout(() => sock.end(), 50);
      else sock.end();
    });
  }

  const ok = async () => {
    const r = await upload(srv.url, '/upload/image', Buffer.from('still fine'), 'alive.png', { overwrite: 'true' });
    assert.equal(r.status, 200, r.text);
  };

  test('hostile bodies are 4xx with an error body, nothing is stored, and the server goes on', async () => {
    const b = 'hb';
    const part = (disp: string, data: string) => `--${b}\r\nContent-Disposition: ${disp}\r\n\r\n${data}\r\n`;
    const cases: Array<[string, Buffer, Record<string, string | number>?]> = [
      ['bad boundary', Buffer.from(part('form-data; name="image"; filename="a.png"', 'x') + `--${b}--`), { 'content-type': 'multipart/form-data; boundary="bad"b"' }],
      ['no boundary in the body', Buffer.from('just bytes')],
      ['truncated', Buffer.from(part('form-data; name="image"; filename="a.png"', 'x').slice(0, 60))],
      ['NUL in the file name', Buffer.from(part('form-data; name="image"; filename="a\0.png"', 'x') + `--${b}--`, 'latin1')],
      ['odd file name', Buffer.from(part('form-data; name="image"; filename=".."', 'x') + `--${b}--`)],
      ['path in the file name', Buffer.from(part('form-data; name="image"; filename="../../x.png"', 'x') + `--${b}--`)],
      ['huge part header', Buffer.from(`--${b}\r\nX: ${'a'.repeat(100 * 1024)}\r\n\r\nx\r\n--${b}--`)],
      ['too many parts', Buffer.from(Array.from({ length: 60 }, (_, i) => part(`form-data; name="f${i}"`, 'v')).join('') + `--${b}--`)],
      ['prototype field name', Buffer.from(part('form-data; name="__proto__"', 'v') + part('form-data; name="image"; filename="p.png"', 'x') + `--${b}--`)],
      ['constructor field name', Buffer.from(part('form-data; name="constructor"', 'v') + part('form-data; name="image"; filename="p.png"', 'x') + `--${b}--`)],
      ['file over max_upload_size', Buffer.from(part('form-data; name="image"; filename="big.png"', 'x'.repeat(1024 * 1024 + 1)) + `--${b}--`)],
      ['no image', Buffer.from(part('form-data; name="overwrite"', 'true') + `--${b}--`)],
      ['empty body', Buffer.alloc(0)],
    ];
    const before = fs.readdirSync(path.join(srv.cfg.dataDir, 'input'));
    for (const [what, body, headers] of cases) {
      const r = await raw({ 'content-type': `multipart/form-data; boundary=${b}`, 'content-length': body.length, ...headers }, body);
      assert.ok(typeof r.status === 'number' && r.status >= 400 && r.status < 500, `${what}: ${r.status} ${r.body}`);
      assert.ok(JSON.parse(r.body).error, `${what}: ${r.body}`);
    }
    assert.deepEqual(fs.readdirSync(path.join(srv.cfg.dataDir, 'input')), before, 'nothing stored');
    await ok();
  });

  test('a body shorter than its Content-Length (the client stops sending) is not stored and the server goes on', async () => {
    const b = 'short';
    const body = Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="image"; filename="short.png"\r\n\r\nabc`);
    const r = await raw({ 'content-type': `multipart/form-data; boundary=${b}`, 'content-length': body.length + 1000 }, body, { endEarly: true });
    assert.ok(r.status === 'closed' || (r.status >= 400 && r.status < 500), String(r.status));
    assert.equal(fs.existsSync(path.join(srv.cfg.dataDir, 'input', 'short.png')), false);
    await ok();
  });

  test('consecutive and concurrent uploads through the reused body buffer keep their own bytes', async () => {
    const bodies = Array.from({ length: 6 }, (_, i) => Buffer.alloc(200_000 + i * 50_000, i + 1));
    for (const [i, body] of bodies.entries()) assert.equal((await upload(srv.url, '/upload/image', body, `seq${i}.bin`)).status, 200);
    const rs = await Promise.all(bodies.map((body, i) => upload(srv.url, '/upload/image', body, `con${i}.bin`)));
    for (const [i, r] of rs.entries()) assert.equal(r.status, 200, r.text);
    for (const [i, body] of bodies.entries()) {
      assert.ok(fs.readFileSync(path.join(srv.cfg.dataDir, 'input', `seq${i}.bin`)).equals(body), `seq${i}`);
      assert.ok(fs.readFileSync(path.join(srv.cfg.dataDir, 'input', `con${i}.bin`)).equals(body), `con${i}`);
    }
  });
});
