import fs from 'node:fs';
import net from 'node:net';

/**
 * A port nothing listens on, for a server that is given its port by flag.
 * Picked below the kernel's ephemeral range: a port there is never handed
 * out to another test's listen(0) or to an outgoing connection's local end,
 * either of which could take it between this check and the server's bind
 * (CI runs the test files side by side, with thousands of connections).
 */
export async function freePort(): Promise<number> {
  let low = 32768;
  try {
    low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: the usual default
  }
  const from = 10_000;
  const span = Math.max(1000, low - from);
  for (;;) {
    const port = from + Math.floor(Math.random() * span);
    const srv = net.createServer();
    const ok = await new Promise<boolean>((resolve) => {
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) {
      await new Promise((resolve) => srv.close(resolve));
      return port;
    }
  }
}
