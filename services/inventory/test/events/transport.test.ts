import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { DestinationGuard, DestinationRefused, parseCidrList } from '../../src/events/guard.ts';
import { HttpSender } from '../../src/events/sender.ts';

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
