/**
 * `npm test`: every *.test.ts under packages/<name>/test, services/<name>/test and test/, run by
 * node's test runner with tsx. Arguments narrow the run to paths containing
 * them (`npm test -- memory`). Says plainly when the PostgreSQL half is skipped.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { postgresAvailable, TEST_DATABASE_URL } from '@svc/testkit';

function findTests(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules' && entry.name !== 'fixtures') out.push(...findTests(p));
    else if (entry.isFile() && entry.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const root = path.resolve(import.meta.dirname, '..');
const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const extra = process.argv.slice(2).filter((a) => a.startsWith('-'));
// test/ at the root holds what spans the services: npm start, the docs of all of them.
const files = ['packages', 'services']
  .flatMap((top) => fs.readdirSync(path.join(root, top)).map((d) => path.join(root, top, d, 'test')))
  .concat(path.join(root, 'test'))
  .flatMap(findTests)
  .map((f) => path.relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

// The longest files start first: started last, a four-minute file would run alone at the end while the other slots
// sit idle. The seconds are a run's (the summary at the end of `npm test` lists the slowest suites); a file not listed
// counts as short and keeps its alphabetical place.
const durationsFile = path.join(root, 'scripts', 'test-durations.json');
const durations: Record<string, number> = fs.existsSync(durationsFile) ? JSON.parse(fs.readFileSync(durationsFile, 'utf8')) : {};
files.sort((a, b) => (durations[b] ?? 0) - (durations[a] ?? 0));

if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

let pg = false;
try {
  pg = await postgresAvailable();
} catch (err) {
  console.error(String(err));
  process.exit(1);
}
console.log(
  pg
    ? `PostgreSQL: ${TEST_DATABASE_URL} (tests run on SQLite and PostgreSQL)`
    : 'PostgreSQL: NOT AVAILABLE — the PostgreSQL half of the suite is SKIPPED; only SQLite is tested',
);

const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const r = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=300000',
    // TAP as before, then a summary of failures and slow files at the very end (where a CI log's tail shows it).
    '--test-reporter=tap',
    '--test-reporter-destination=stdout',
    `--test-reporter=${path.join(root, 'scripts', 'test-summary-reporter.mjs')}`,
    '--test-reporter-destination=stdout',
    ...extra,
    ...files,
  ],
  // One ONNX Runtime thread per operator (services/workflow/src/models/session.ts): two files share the cores, and a
  // thread per core only spins; the model tests then take about a third less CPU.
  { stdio: 'inherit', cwd: root, env: { WORKFLOW_MODEL_THREADS: '1', ...process.env, TEST_POSTGRES: pg ? '1' : '0' } },
);
if (!pg) console.log('NOTE: PostgreSQL tests were skipped (no server reachable).');
process.exit(r.status ?? 1);
