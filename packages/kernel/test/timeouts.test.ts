import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createHttpServer, fastApiErrorStyle, httpTimeoutsFrom, loadConfig, type App } from '@svc/kernel';

/** A raw socket to the server; resolves `closed` when the server hangs up. */
function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (c) => (received += c.toString()));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, closed, received: () => received };
}

/** Sends one byte every `everyMs` until the socket closes or the text runs out; returns how many were sent. */
async function trickle(socket: net.Socket, text: string, everyMs: number): Promise<number> {
  let sent = 0;
  for (const ch of text) {
    if (socket.destroyed || socket.writableEnded) break;
    socket.write(ch);
    sent++;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return sent;
}

describe('kernel http server: slow clients', () => {
  let app: App;
  let port: number;
  before(async () => {
    app = await createHttpServer({
      name: 'demo',
      version: '0.1.0',
      errorStyle: fastApiErrorStyle,
      logLevel: 'silent',
      timeouts: { headersTimeoutMs: 600, requestTimeoutMs: 1200, keepAliveTimeoutMs: 400, idleTimeoutMs: 0 },
    });
    app.post('/echo', async (req) => ({ n: JSON.stringify(req.body).length }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as net.AddressInfo).port;
  });
  after(() => app.close());

  it('closes a socket that sent its headers and then trickles the body', { timeout: 60_000 }, async () => {
    const c = connect(port);
    const body = JSON.stringify({ x: 'y'.repeat(400) });
    c.socket.write(`POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    // 400+ bytes at one per 50 ms would take 20 s; the request time-out (1.2 s) ends it long before.
    const sent = await Promise.race([trickle(c.socket, body, 50), c.closed.then(() => -1)]);
    await c.closed;
    assert.equal(sent, -1, 'the server closed the socket before the body was complete');
    assert.match(c.received(), /^HTTP\/1\.1 408/);
  });

  it('closes a socket that trickles its headers', { timeout: 60_000 }, async () => {
    const c = connect(port);
    const sent = await Promise.race([trickle(c.socket, `GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(400)}\r\n\r\n`, 50), c.closed.then(() => -1)]);
    await c.closed;
    assert.equal(sent, -1);
  });

  it('closes an idle keep-alive connection, after answering on it', { timeout: 60_000 }, async () => {
    const c = connect(port);
    c.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await c.closed;
    assert.match(c.received(), /^HTTP\/1\.1 200/);
    assert.match(c.received(), /keep-alive/i);
  });

  it('a normal request is not affected', async () => {
    const r = await fetch(`http://127.0.0.1:${port}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }) });
    assert.equal(r.status, 200);
  });
});

describe('http time-out settings', () => {
  it('come from flags, then env, then defaults', () => {
    assert.deepEqual(httpTimeoutsFrom({}, {}), { headersTimeoutMs: 15_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 10_000, idleTimeoutMs: 0 });
    assert.deepEqual(httpTimeoutsFrom({ requestTimeoutMs: '5000' }, { HTTP_REQUEST_TIMEOUT_MS: '7000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '3000', HTTP_HEADERS_TIMEOUT_MS: '9000' }), {
      headersTimeoutMs: 5000,
      requestTimeoutMs: 5000,
      keepAliveTimeoutMs: 3000,
      idleTimeoutMs: 0,
    });
    assert.throws(() => httpTimeoutsFrom({}, { HTTP_IDLE_TIMEOUT_MS: 'soon' }), /HTTP_IDLE_TIMEOUT_MS/);
    const cfg = loadConfig('svc', { port: 1 }, ['--headers-timeout-ms', '2500', '--idle-timeout-ms=90000'], {});
    assert.equal(cfg.httpTimeouts?.headersTimeoutMs, 2500);
    assert.equal(cfg.httpTimeouts?.idleTimeoutMs, 90_000);
  });
});
