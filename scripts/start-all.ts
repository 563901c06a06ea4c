/**
 * `npm start`: every service on its embedded defaults (SQLite under ./data,
 * in-process queue), each as its own process so one crash does not take the
 * others down. Ctrl-C stops them all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const services = [
  { name: 'memory', port: 8000 },
  { name: 'workflow', port: 8188 },
  { name: 'inventory', port: 8080 },
].filter((s) => fs.existsSync(path.join(root, 'services', s.name, 'src', 'main.ts')));

/** Services run from an esbuild bundle (scripts/run-service.mjs): faster start, no tsx loader thread. */
const bundled = new Set(['workflow']);

const children: ChildProcess[] = [];
for (const s of services) {
  const dataDir = path.join(root, 'data', s.name);
  const entry = bundled.has(s.name)
    ? [path.join(root, 'scripts', 'run-service.mjs'), s.name]
    : ['--import', 'tsx', path.join(root, 'services', s.name, 'src', 'main.ts')];
  const child = spawn(process.execPath, [...entry, '--port', String(s.port), '--data-dir', dataDir], { stdio: 'inherit', cwd: root, env: process.env });
  child.on('exit', (code, signal) => {
    if (!stopping) console.error(`${s.name} exited (${signal ?? code})`);
  });
  children.push(child);
}

let stopping = false;
function stop() {
  if (stopping) return;
  stopping = true;
  for (const c of children) c.kill('SIGTERM');
  setTimeout(() => process.exit(0), 5000).unref();
  Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.on('exit', r))))).then(() => process.exit(0));
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
