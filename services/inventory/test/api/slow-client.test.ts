import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { onStorage } from '@svc/testkit';
import { startApiProcesses } from './helpers.ts';

// The HTTP time-outs are the kernel's (packages/kernel/test/timeouts.test.ts); this checks the started service applies
// its settings (on SQLite: the cut-off happens before a request reaches the storage). The clients below trickle on their own pace; what is asserted is that the server
// ends the request (408, socket closed) before the client finished sending — at 50 ms a byte the body or headers
// would take 15 s or more, ten times the configured limit, so a loaded machine only makes the margin larger.
onStorage('sqlite', 'inventory: slow clients are cut off by the HTTP time-outs', (storage) => {
  let procs: Awaited<ReturnType<typeof startApiProcesses>>;
  before(async () => {
    procs = await startApiProcesses(storage, 1, { env: { HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_HEADERS_TIMEOUT_MS: '1000' } });
  });
  after(() => procs?.close());

  /** Writes `head` at once, then `trickle` one byte per 50 ms until the server closes the socket. */
  async function trickle(head: string, trickled: string) {
    const u = new URL(procs.procs[0]!.url);
    const socket = net.connect(Number(u.port), '127.0.0.1');
    socket.on('error', () => {});
    let received = '';
    socket.on('data', (c) => (received += c.toString()));
    let done = false;
    const closed = new Promise<void>((r) => socket.once('close', () => r())).then(() => (done = true));
    socket.write(head);
    let sent = 0;
    while (!done && sent < trickled.length) {
      socket.write(trickled[sent++]!);
      await new Promise((r) => setTimeout(r, 50));
    }
    await closed;
    return { sent, received };
  }

  it('closes a socket that trickles a request body', { timeout: 120_000 }, async () => {
    const body = JSON.stringify({ name: 'x'.repeat(300), slug: 'slow' });
    const { sent, received } = await trickle(`POST /api/dcim/sites/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    assert.ok(sent < body.length, `the whole body (${sent} bytes) was accepted`);
    assert.match(received, /^HTTP\/1\.1 408/);
  });

  it('closes a socket that trickles its headers', { timeout: 120_000 }, async () => {
    const headers = `X-Padding: ${'p'.repeat(300)}\r\n\r\n`;
    const { sent, received } = await trickle('GET /health HTTP/1.1\r\nHost: x\r\n', headers);
    assert.ok(sent < headers.length, `all the headers (${sent} bytes) were accepted`);
    assert.match(received, /^HTTP\/1\.1 408/);
  });

  it('keeps answering other clients while slow ones are held', { timeout: 120_000 }, async () => {
    const padding = `X-Padding: ${'p'.repeat(300)}\r\n\r\n`;
    const slow = Array.from({ length: 20 }, () => trickle('GET /health HTTP/1.1\r\nHost: x\r\n', padding));
    const r = await procs.procs[0]!.http.get('/api/dcim/sites/');
    assert.equal(r.status, 200);
    // Each is cut off before it finished. Node writes the 408 from a periodic check; a socket it reaches only while it is
    // already being torn down (seen at load 16) is closed without one, so here an empty answer counts too.
    for (const s of await Promise.all(slow)) {
      assert.ok(s.sent < padding.length, `all the headers (${s.sent} bytes) were accepted`);
      assert.ok(s.received === '' || /^HTTP\/1\.1 408/.test(s.received), s.received.slice(0, 100));
    }
  });
});
