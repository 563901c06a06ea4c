// Differential test: @svc/jinja against Python Jinja2 3.1 (SandboxedEnvironment, autoescape off).
//
// Cases live in test/corpus/cases/<topic>.json, the outputs recorded from Python in
// test/corpus/expected/<topic>.json (see test/corpus/README.md). A single failing case
// does not fail the suite: the pass rate must be >= JINJA_DIFF_MIN (default 0.99) and
// every failing case is printed with expected vs actual.
//
//   node --import tsx --test packages/jinja/test/differential.test.ts
//   JINJA_DIFF_MIN=1 JINJA_DIFF_FILTER=filters- node --import tsx --test packages/jinja/test/differential.test.ts

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkgRoot = resolve(here, '..');
const casesDir = join(here, 'corpus', 'cases');
const expectedDir = join(here, 'corpus', 'expected');
const generator = join(pkgRoot, 'scripts', 'generate-expected.py');

interface CaseOptions {
  trim_blocks?: boolean;
  lstrip_blocks?: boolean;
  keep_trailing_newline?: boolean;
}

interface Case {
  name: string;
  template: string;
  context?: Record<string, unknown>;
  options?: CaseOptions;
}

type Expected = { output: string } | { error: string };

interface Outcome {
  file: string;
  name: string;
  ok: boolean;
  expected: string;
  actual: string;
}

interface EngineTemplate {
  render(ctx?: Record<string, unknown>): string;
}
interface EngineEnvironment {
  fromString(src: string): EngineTemplate;
}
interface EngineModule {
  Environment: new (opts?: {
    trimBlocks?: boolean;
    lstripBlocks?: boolean;
    keepTrailingNewline?: boolean;
  }) => EngineEnvironment;
  parseJsonPreservingFloats: (text: string) => unknown;
}

const MAX_SHOWN = 300;

function minRate(): number {
  const raw = process.env.JINJA_DIFF_MIN;
  if (raw === undefined || raw.trim() === '') return 0.99;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0 || v > 1) {
    throw new Error(`JINJA_DIFF_MIN must be a number between 0 and 1, got ${JSON.stringify(raw)}`);
  }
  return v;
}

function show(s: string): string {
  const j = JSON.stringify(s);
  return j.length > MAX_SHOWN ? `${j.slice(0, MAX_SHOWN)}… (${s.length} chars)` : j;
}

/** Names of the error's class and of every class it extends (e.g. SecurityError → TemplateRuntimeError). */
function errorClassNames(err: unknown): string[] {
  const names: string[] = [];
  if (err && typeof err === 'object') {
    const own = (err as { name?: unknown }).name;
    if (typeof own === 'string') names.push(own);
    let proto: unknown = Object.getPrototypeOf(err);
    while (proto && proto !== Object.prototype) {
      const ctor = (proto as { constructor?: { name?: unknown } }).constructor;
      if (ctor && typeof ctor.name === 'string' && !names.includes(ctor.name)) names.push(ctor.name);
      proto = Object.getPrototypeOf(proto);
    }
  }
  return names;
}

function describeError(err: unknown): string {
  const names = errorClassNames(err);
  const msg = err instanceof Error ? err.message : String(err);
  return `${names[0] ?? typeof err}: ${msg.length > 160 ? msg.slice(0, 160) + '…' : msg}`;
}

async function loadEngine(): Promise<EngineModule> {
  // A computed specifier keeps `tsc` from resolving the engine statically, so the
  // project still type-checks while packages/jinja/src is being written.
  // JINJA_DIFF_ENGINE=<path> runs the corpus against another implementation.
  const override = process.env.JINJA_DIFF_ENGINE;
  const specifier = override
    ? pathToFileURL(resolve(override)).href
    : new URL('../src/index.ts', import.meta.url).href;
  try {
    const mod = (await import(specifier)) as Partial<EngineModule>;
    if (typeof mod.Environment !== 'function' || typeof mod.parseJsonPreservingFloats !== 'function') {
      throw new Error('module does not export Environment and parseJsonPreservingFloats');
    }
    return mod as EngineModule;
  } catch (err) {
    throw new Error(
      `@svc/jinja could not be loaded from ${specifier} (${describeError(err)}); ` +
        'the differential corpus needs the engine to exist',
    );
  }
}

function runCase(engine: EngineModule, c: Case, expected: Expected, file: string): Outcome {
  const opts = c.options ?? {};
  const base = { file, name: c.name };
  const expectedText = 'error' in expected ? `error ${expected.error}` : show(expected.output);
  let output: string;
  try {
    const env = new engine.Environment({
      trimBlocks: opts.trim_blocks === true,
      lstripBlocks: opts.lstrip_blocks === true,
      keepTrailingNewline: opts.keep_trailing_newline === true,
    });
    const tmpl = env.fromString(c.template);
    output = tmpl.render(c.context ?? {});
  } catch (err) {
    if ('error' in expected) {
      const ok = errorClassNames(err).includes(expected.error);
      return { ...base, ok, expected: expectedText, actual: `error ${describeError(err)}` };
    }
    return { ...base, ok: false, expected: expectedText, actual: `error ${describeError(err)}` };
  }
  if ('error' in expected) {
    return { ...base, ok: false, expected: expectedText, actual: `output ${show(String(output))}` };
  }
  return { ...base, ok: output === expected.output, expected: expectedText, actual: show(String(output)) };
}

test('differential corpus: @svc/jinja renders like Python Jinja2 3.1', async () => {
  const threshold = minRate();
  const engine = await loadEngine();
  const filter = process.env.JINJA_DIFF_FILTER ?? '';

  const files = readdirSync(casesDir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  assert.ok(files.length > 0, `no case files in ${casesDir}`);

  const outcomes: Outcome[] = [];
  const missing: string[] = [];
  for (const file of files) {
    const cases = engine.parseJsonPreservingFloats(readFileSync(join(casesDir, file), 'utf8')) as Case[];
    const expPath = join(expectedDir, file);
    assert.ok(existsSync(expPath), `missing ${expPath}: run python3 packages/jinja/scripts/generate-expected.py`);
    const expected = JSON.parse(readFileSync(expPath, 'utf8')) as Record<string, Expected>;
    for (const c of cases) {
      if (filter && !`${file}:${c.name}`.includes(filter)) continue;
      const exp = expected[c.name];
      if (!exp) {
        missing.push(`${file}: ${c.name}`);
        continue;
      }
      outcomes.push(runCase(engine, c, exp, file));
    }
  }
  assert.deepEqual(missing, [], 'cases without a recorded expectation: run generate-expected.py');
  assert.ok(outcomes.length > 0, 'no cases selected');

  const failing = outcomes.filter((o) => !o.ok);
  const rate = (outcomes.length - failing.length) / outcomes.length;
  const lines: string[] = [];
  for (const f of failing) {
    lines.push(`  ✗ ${f.file} :: ${f.name}`);
    lines.push(`      expected: ${f.expected}`);
    lines.push(`      actual:   ${f.actual}`);
  }
  const summary =
    `differential corpus: ${outcomes.length - failing.length}/${outcomes.length} identical ` +
    `(${(rate * 100).toFixed(2)}%, required ${(threshold * 100).toFixed(2)}%)`;
  console.log([summary, ...lines].join('\n'));

  assert.ok(rate >= threshold, `${summary}; ${failing.length} failing case(s) listed above`);
});

test('differential corpus: checked-in expectations match Python Jinja2', (t) => {
  const probe = spawnSync('python3', ['-c', 'import jinja2, sys; sys.exit(0 if jinja2.__version__.startswith("3.1.") else 3)'], {
    encoding: 'utf8',
  });
  if (probe.error || probe.status !== 0) {
    const why = probe.error
      ? `python3 not runnable (${probe.error.message})`
      : probe.status === 3
        ? 'installed Jinja2 is not 3.1.x'
        : 'python3 cannot import jinja2';
    t.skip(`skipped: ${why}; expectations are not re-checked against Python`);
    return;
  }
  const res = spawnSync('python3', [generator, '--check'], { encoding: 'utf8', timeout: 120_000 });
  if (res.status !== 0) console.log(res.stdout + res.stderr);
  assert.equal(res.status, 0, `generate-expected.py --check failed:\n${res.stderr || res.stdout}`);
});
