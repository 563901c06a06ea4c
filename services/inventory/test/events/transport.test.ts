import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { DestinationGuard, DestinationRefused, parseCidrList } from '../../src/events/guard.ts';
import { HttpSender, Stopper } from '../../src/events/sender.ts';
import { until } from './helpers.ts';

describe('destination guard', () => {
  const guard = (allow: string[] = [], deny: string[] = []) => new DestinationGuard({ allow: parseCidrList(allow, 'allow'), deny: parseCidrList(deny, 'deny') });

  it('refuses link-local and metadata addresses by default, after DNS resolution', async () => {
    const g = guard();
    for (const ip of ['169.254.169.254', '169.254.1.1', 'fe80::1', '::ffff:169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '0.0.0.0']) {
      assert.ok(g.refusal(ip), ip);
    }
    for (const ip of ['127.0.0.1', '10.1.2.3', '192.168.1.1', '8.8.8.8', '::1']) assert.equal(g.refusal(ip), undefined, ip);
    await assert.rejects(g.resolve('[fe80::1]'), DestinationRefused);
    assert.deepEqual(await g.resolve('127.0.0.1'), { address: '127.0.0.1', family: 4 });
    const viaDns = await g.resolve('localhost');
    assert.ok(['127.0.0.1', '::1'].includes(viaDns.address));
  });

  it('applies operator deny and allow lists (checked on resolved addresses)', async () => {
    const denyLoopback = guard([], ['127.0.0.0/8', '::1/128']);
    await assert.rejects(denyLoopback.resolve('localhost'), /INVENTORY_WEBHOOK_DENY/);
    const strict = guard(['10.0.0.0/8']);
    assert.match(strict.refusal('127.0.0.1')!, /not in INVENTORY_WEBHOOK_ALLOW/);
    assert.equal(strict.refusal('10.9.9.9'), undefined);
    assert.equal(guard(['169.254.0.0/16']).refusal('169.254.169.254'), undefined, 'an explicit allow overrides the default');
    assert.throws(() => parseCidrList(['10.0.0.0/33'], 'INVENTORY_WEBHOOK_ALLOW'), /INVENTORY_WEBHOOK_ALLOW/);
    assert.throws(() => parseCidrList(['example.com'], 'INVENTORY_WEBHOOK_DENY'), /not an IP network/);
  });
});

describe('TLS', { skip: !fs.existsSync('/usr/bin/openssl') && 'openssl not available' }, () => {
  let dir: string;
  let server: https.Server;
  let url: string;
  const sender = new HttpSender(new DestinationGuard({ allow: [], deny: [] }));
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inv-tls-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
    server = https.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }, (_req, res) => res.writeHead(200).end('tls ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://localhost:${(server.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    sender.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const send = (sslVerification: boolean, caFilePath: string | null) =>
    sender.send({ method: 'POST', url, headers: [['Content-Type', 'application/json']], body: Buffer.from('{}'), timeoutMs: 5000, sslVerification, caFilePath });

  it('refuses a self-signed certificate when verifying', async () => {
    const r = await send(true, null);
    assert.equal(r.status, undefined);
    assert.match(r.error!, /self[- ]signed|SELF_SIGNED/i);
  });
  it('accepts it with ssl_verification false', async () => {
    const r = await send(false, null);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'tls ok');
  });
  it('verifies against ca_file_path', async () => {
    const r = await send(true, path.join(dir, 'cert.pem'));
    assert.equal(r.status, 200);
    const missing = await send(true, path.join(dir, 'nope.pem'));
    assert.match(missing.error!, /ca_file_path/);
  });
});

describe('HTTP sender paths (undici pools, node:http fallback)', () => {
  let server: http.Server;
  let base: string;
  const seen: Array<{ url: string; headers: http.IncomingHttpHeaders; rawHeaders: string[]; body: string }> = [];
  const sender = new HttpSender(new DestinationGuard({ allow: [], deny: [] }));
  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString() });
        if (req.url === '/busy') return void res.writeHead(429, { 'retry-after': '7' }).end('slow down');
        if (req.url === '/huge') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          const chunk = Buffer.alloc(64 * 1024, 'y');
          let n = 0;
          const more = () => {
            while (n < 40) {
              n++;
              if (!res.write(chunk)) return void res.once('drain', more);
            }
            res.end();
          };
          return more();
        }
        if (req.url === '/hang') return; // never answers
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    sender.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const send = (p: string, headers: Array<[string, string]> = [['Content-Type', 'application/json']], extra: Partial<Parameters<HttpSender['send']>[0]> = {}) =>
    sender.send({ method: 'POST', url: base + p, headers, body: Buffer.from('{"a": 1}'), timeoutMs: 5000, sslVerification: true, caFilePath: null, ...extra });

  it('sends headers in order with one Content-Length (a header of that name from the webhook is replaced)', async () => {
    const r = await send('/ok', [['Content-Type', 'application/json'], ['content-length', '999'], ['X-One', '1'], ['webhook-id', 'msg_1']]);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'ok');
    const got = seen.at(-1)!;
    assert.equal(got.body, '{"a": 1}');
    assert.equal(got.headers['content-length'], '8');
    const names = got.rawHeaders.filter((_, i) => i % 2 === 0);
    assert.deepEqual(names.filter((n) => ['Content-Type', 'X-One', 'webhook-id'].includes(n)), ['Content-Type', 'X-One', 'webhook-id']);
    assert.equal(names.filter((n) => n.toLowerCase() === 'content-length').length, 1);
  });

  it('falls back to node:http for a request undici will not form (a Keep-Alive header), and still sends it', async () => {
    const r = await send('/ok', [['Content-Type', 'application/json'], ['Keep-Alive', 'timeout=5']]);
    assert.equal(r.status, 200, r.error);
    assert.equal(seen.at(-1)!.headers['keep-alive'], 'timeout=5');
  });

  it('reports a header value node:http refuses as an error forming the request, sending nothing', async () => {
    const before = seen.length;
    const r = await send('/ok', [['X-Bad', 'a\u0000b']]);
    assert.equal(r.status, undefined);
    assert.match(r.error!, /Error forming HTTP request|Invalid character|ERR_INVALID_CHAR/);
    assert.equal(seen.length, before);
  });

  it('reads Retry-After and the response excerpt', async () => {
    const r = await send('/busy');
    assert.equal(r.status, 429);
    assert.equal(r.body, 'slow down');
    assert.equal(r.retryAfterMs, 7000);
  });

  it('keeps the status and a 2 KB excerpt of a response over 1 MB, reading no further', async () => {
    const r = await send('/huge');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'y'.repeat(2048));
  });

  it('times out and stops a request that gets no answer', async () => {
    const t = await send('/hang', undefined, { timeoutMs: 300 });
    assert.match(t.error!, /timed out after 0.3 seconds/);
    const stopper = new Stopper();
    const p = send('/hang', undefined, { stopper });
    await until(async () => seen.filter((s) => s.url === '/hang').length >= 2, 5000, 'second hanging request');
    stopper.stop();
    assert.match((await p).error!, /was stopped/);
  });

  it('answers connection errors with the system error', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const r = await sender.send({ method: 'POST', url: `http://127.0.0.1:${port}/x`, headers: [], body: Buffer.from(''), timeoutMs: 5000, sslVerification: true, caFilePath: null });
    assert.match(r.error!, /ECONNREFUSED/);
  });
});
