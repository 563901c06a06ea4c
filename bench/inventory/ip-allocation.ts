/**
 * `available-ips` allocation throughput (issue 12: ≥ 500 allocations/s from 16 concurrent clients
 * on SQLite, no duplicates). Each round allocates from a fresh /16 with 16 clients for a fixed
 * time; the baseline, in the same run, is the same clients creating IP addresses with explicit,
 * distinct addresses (the same write path without the allocation search and prefix lock).
 * Prints the median of the rounds and the ratio.
 *
 *   node --import tsx bench/inventory/ip-allocation.ts [--seconds 5] [--rounds 3] [--clients 16]
 */
import http from 'node:http';
import { median, startInventory, TOKEN } from './server.ts';

const arg = (name: string, dflt: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || dflt;
const seconds = arg('seconds', 5);
const rounds = arg('rounds', 3);
const clients = arg('clients', 16);

// node:http with keep-alive rather than fetch: fetch spent ~3x the CPU per request of the server's own
// request handling on this 2-core machine, and client and server share those cores.
const agent = new http.Agent({ keepAlive: true, maxSockets: clients * 2 });
function call(u: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(u);
  const data = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string | number> = { authorization: `Token ${TOKEN}` };
  if (data !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

const server = await startInventory();
try {
  let seq = 0;
  const allocRates: number[] = [];
  const createRates: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const p = (await call(`${server.url}/api/ipam/prefixes/`, 'POST', { prefix: `10.${100 + round}.0.0/16` })).body;
    const addresses: string[] = [];
    let errors = 0;
    let end = performance.now() + seconds * 1000;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < end) {
          const r = await call(`${server.url}/api/ipam/prefixes/${p.id}/available-ips/`, 'POST', {});
          if (r.status === 201) addresses.push(r.body.address);
          else errors++;
        }
      }),
    );
    const allocRate = addresses.length / ((performance.now() - t0) / 1000);
    if (new Set(addresses).size !== addresses.length) throw new Error(`round ${round}: duplicate addresses allocated`);
    allocRates.push(allocRate);
    // Baseline: explicit addresses, same clients, same time.
    let created = 0;
    end = performance.now() + seconds * 1000;
    const t1 = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < end) {
          const n = seq++;
          const r = await call(`${server.url}/api/ipam/ip-addresses/`, 'POST', { address: `172.${16 + round}.${(n >> 8) & 255}.${n & 255}/16` });
          if (r.status === 201) created++;
          else errors++;
        }
      }),
    );
    createRates.push(created / ((performance.now() - t1) / 1000));
    console.log(`round ${round + 1}: ${allocRate.toFixed(0)} allocations/s (${addresses.length}, no duplicates), baseline ${createRates.at(-1)!.toFixed(0)} creates/s, non-2xx ${errors}`);
  }
  const a = median(allocRates);
  const c = median(createRates);
  console.log(`available-ips allocation, ${clients} clients, SQLite, median of ${rounds} rounds of ${seconds} s:`);
  console.log(`  allocations     ${a.toFixed(0)}/s   (goal ≥ 500/s)`);
  console.log(`  plain creates   ${c.toFixed(0)}/s   ratio allocation/create ${(a / c).toFixed(2)}`);
} finally {
  agent.destroy();
  await server.close();
}
