/**
 * A fresh clone's `npm install`, as a new user runs it: fails on any
 * EBADENGINE or other npm warning about the project's own dependency tree
 * (deprecations of transitive packages are listed, not fatal), reports the
 * time, then runs `npm install` again and reports that time (a no-op).
 *
 *   node scripts/check-fresh-install.mjs [--keep]
 *
 * Needs the npm registry (or a warm npm cache); the clone is of HEAD.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fresh-install-'));
execFileSync('git', ['clone', '--quiet', root, dir]);
const install = () => {
  const t0 = Date.now();
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: dir, encoding: 'utf8', env: { ...process.env, npm_config_loglevel: 'warn' } });
  return { ms: Date.now() - t0, status: r.status, out: `${r.stdout}\n${r.stderr}` };
};
const first = install();
const second = install();
const bad = first.out.split('\n').filter((l) => /EBADENGINE|ERR!|gyp ERR/.test(l));
console.log(`fresh clone npm install: ${(first.ms / 1000).toFixed(0)} s (exit ${first.status}); again: ${(second.ms / 1000).toFixed(1)} s (exit ${second.status})`);
for (const l of first.out.split('\n').filter((x) => /warn/.test(x))) console.log(`  ${l}`);
if (!process.argv.includes('--keep')) fs.rmSync(dir, { recursive: true, force: true });
else console.log(`kept ${dir}`);
if (first.status !== 0 || second.status !== 0 || bad.length > 0) {
  console.error(`FAILED:\n${bad.join('\n')}`);
  process.exit(1);
}
