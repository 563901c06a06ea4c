import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startApiProcesses } from './helpers.ts';

// The HTTP time-outs are the kernel's (packages/kernel/test/timeouts.test.ts); this checks the started service applies its settings.
let procs: Awaited<ReturnType<typeof startApiProcesses>>;
before(async () => {
  procs = await startApiProcesses('sqlite', 1, { env: { HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_HEADERS_TIMEOUT_MS: '1000' } });
});
after(() => procs?.close());

it('the inventory process closes a socket that trickles a request body', { timeout: 60_000 }, async () => {
  const u = new URL(procs.procs[0]!.url);
  const socket = net.connect(Number(u.port), '127.0.0.1');
  socket.on('error', () => {});
  let received = '';
  socket.on('data', (c) => (received += c.toString()));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const body = JSON.stringify({ name: 'x'.repeat(300), slug: 'slow' });
  socket.write(`POST /api/dcim/sites/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  let sent = 0;
  let done = false;
  void closed.then(() => (done = true));
  // One byte per 50 ms would need 15 s; the 1.5 s request time-out ends it first.
  while (!done && sent < body.length) {
    socket.write(body[sent++]!);
    await new Promise((r) => setTimeout(r, 50));
  }
  await closed;
  assert.ok(sent < body.length, `the whole body (${sent} bytes) was accepted`);
  assert.match(received, /^HTTP\/1\.1 408/);
});
