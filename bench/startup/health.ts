/**
 * Start-up time to the first 200 from /health, per service and for `npm start`:
 *
 *   npx tsx bench/startup/health.ts [--runs 5] [--only memory,workflow,inventory]
 *
 * For each service, run alternately: plain node over its bundle (what `npm run
 * <service>` and `npm start` run) and, as the baseline, the TypeScript sources
 * through tsx (what memory and inventory ran before). Each start gets a fresh
 * SQLite data directory (first start: migrations, admin token). Then
 * `npm start` itself, from the command to all three /health answering 200.
 * Medians; the ratio is bundle / tsx in the same run. Bundles are built first
 * (as npm install does), so no run pays for a build.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const root = path.resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, only: { type: 'string' } } });
const runs = Number(values.runs);
const services = (values.only ?? 'memory,workflow,inventory').split(',');

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

async function healthy(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health`)).status === 200;
  } catch {
    return false;
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
}

/** Milliseconds from spawning `args` to every port's /health answering 200. */
async function timeToHealth(cmd: string, args: string[], ports: number[]): Promise<number> {
  const t0 = performance.now();
  const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: '' } });
  let err = '';
  child.stderr!.on('data', (c) => (err += String(c)));
  try {
    const pending = new Set(ports);
    while (pending.size > 0) {
      if (child.exitCode !== null) throw new Error(`${cmd} ${args.join(' ')} exited: ${err}`);
      for (const p of [...pending]) if (await healthy(p)) pending.delete(p);
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 20));
    }
    return performance.now() - t0;
  } finally {
    await stop(child);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), 'bench-start-'));

const build = spawn(process.execPath, [path.join(root, 'scripts', 'build.mjs'), ...services], { cwd: root, stdio: 'inherit' });
await new Promise((r) => build.once('exit', r));

console.log(`start-up to /health 200, median of ${runs} (fresh SQLite data dir each; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')})`);
for (const s of services) {
  const bundle: number[] = [];
  const tsx: number[] = [];
  for (let i = 0; i < runs; i++) {
    let port = await freePort();
    let dir = tmp();
    bundle.push(await timeToHealth(process.execPath, [path.join(root, 'scripts', 'run-service.mjs'), s, '--port', String(port), '--data-dir', dir], [port]));
    fs.rmSync(dir, { recursive: true, force: true });
    port = await freePort();
    dir = tmp();
    tsx.push(await timeToHealth(process.execPath, ['--import', 'tsx', path.join(root, 'services', s, 'src', 'main.ts'), '--port', String(port), '--data-dir', dir], [port]));
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`${s.padEnd(10)} bundle ${median(bundle).toFixed(0).padStart(6)} ms   tsx ${median(tsx).toFixed(0).padStart(6)} ms   ratio ${(median(bundle) / median(tsx)).toFixed(2)}   (bundle runs: ${bundle.map((x) => x.toFixed(0)).join(', ')})`);
}

const all: number[] = [];
for (let i = 0; i < runs; i++) {
  const ports = [await freePort(), await freePort(), await freePort()];
  const dir = tmp();
  const args = ['start', '--silent', '--', '--data-dir', dir, '--memory-port', String(ports[0]), '--workflow-port', String(ports[1]), '--inventory-port', String(ports[2]), '--only', services.join(',')];
  const wanted = services.map((s) => ports[['memory', 'workflow', 'inventory'].indexOf(s)]!);
  all.push(await timeToHealth('npm', args, wanted));
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`npm start  all of ${services.join(', ')} healthy after ${median(all).toFixed(0)} ms (runs: ${all.map((x) => x.toFixed(0)).join(', ')})`);
