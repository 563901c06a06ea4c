/**
 * `npm install` builds every service's bundle (root postinstall), so the
 * first `npm start` or `npm run <service>` starts at once. A build that
 * fails here does not fail the install: the bundle is built again, with its
 * error shown, when the service starts.
 *
 *   node scripts/build.mjs [service…]
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildNativeWebp } from './build-native.mjs';
import { bundleIsStale, bundleService, stopBundler, THREAD_ENTRIES } from './run-service.mjs';

const root = path.resolve(import.meta.dirname, '..');
const services = process.argv.length > 2 ? process.argv.slice(2) : fs.readdirSync(path.join(root, 'services')).filter((s) => fs.existsSync(path.join(root, 'services', s, 'src', 'main.ts')));
const names = services.flatMap((s) => [s, ...(THREAD_ENTRIES[s] ?? [])]).filter((n) => bundleIsStale(n));
const t0 = Date.now();
let failed = 0;
for (const name of names) {
  try {
    await bundleService(name);
  } catch (err) {
    failed++;
    process.stderr.write(`could not build ${name} (it is built again when it starts): ${err instanceof Error ? err.message.split('\n')[0] : err}\n`);
  }
}
await stopBundler();
if (services.includes('workflow')) buildNativeWebp();
if (names.length > 0) process.stdout.write(`built ${names.length - failed} bundle(s) (${names.join(", ")}) in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
