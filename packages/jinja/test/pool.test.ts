// RenderPool: renders in worker threads with a heap limit and a hard time limit; a worker that
// dies is replaced, and the render that killed it fails with a clear error while others go on.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { RenderPool } from '../src/index.ts';

const pool = new RenderPool({
  setup: new URL('./fixtures/pool-setup.ts', import.meta.url).href,
  setupData: { greeting: 'hello' },
  heapMb: 64,
  hardTimeoutMs: 1500,
});
after(() => pool.close());

/** Resolves after this thread has gone round its event loop `n` times: it does only while nothing blocks the thread. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

test('renders with the setup module\'s environments, many at once, in order', async () => {
  const jobs = Array.from({ length: 200 }, (_, i) => pool.render([{ env: 'default', source: '{{ n|greet }} {{ n * 2 }}' }, { env: 'default', source: '{{ 1.0 }}' }], JSON.stringify({ n: i })));
  const results = await Promise.all(jobs);
  results.forEach((r, i) => {
    assert.deepEqual(r[0], { ok: true, out: `hello, ${i} ${i * 2}` });
    assert.deepEqual(r[1], { ok: true, out: '1.0' });
  });
  const [f] = await pool.render([{ env: 'default', source: '{{ x }}' }], '{"x": 1.0}', { floats: true });
  assert.deepEqual(f, { ok: true, out: '1.0' });
  const [miss] = await pool.render([{ env: 'nope', source: '{{ 1 }}' }], '{}');
  assert.equal(miss!.ok, false);
});

test('check reports syntax errors and unknown filters with the line', async () => {
  assert.equal(await pool.check('default', '{{ 1|greet }}'), null);
  const e = await pool.check('default', 'ok\n{% if %}');
  assert.equal(e?.name, 'TemplateSyntaxError');
  assert.equal(e?.lineno, 2);
  assert.match((await pool.check('default', '{{ 1|nosuch }}'))!.message, /No filter named 'nosuch'/);
});

test('engine limits fail inside the worker without killing it', async () => {
  const before = pool.deaths;
  const [r] = await pool.render([{ env: 'default', source: "{{ ('9'*1000000)|int }} {{ (2**20000) }}" }], '{}');
  assert.equal(r!.ok, false);
  assert.equal((r as { error: { pyClass?: string } }).error.pyClass, 'ValueError');
  assert.equal(pool.deaths, before);
});

test('a render past the heap limit kills only its worker; it fails after two tries, others succeed', async () => {
  // A time limit no loaded machine reaches first: this test is about the heap limit.
  const heapPool = new RenderPool({ setup: new URL('./fixtures/pool-setup.ts', import.meta.url).href, setupData: { greeting: 'hello' }, heapMb: 64, hardTimeoutMs: 120_000 });
  after(() => heapPool.close());
  const pool = heapPool;
  const before = pool.deaths;
  const bomb = pool.render([{ env: 'default', source: '{{ 1|hog }}' }], '{}');
  const others = Array.from({ length: 20 }, (_, i) => pool.render([{ env: 'default', source: '{{ n }}' }], JSON.stringify({ n: i })));
  // The caller's thread goes on while the bomb runs (a render on this thread would block it throughout).
  assert.equal(await Promise.race([bomb.then(() => 'bomb'), turns(100).then(() => 'turns')]), 'turns');
  const r = await bomb;
  assert.equal(r[0]!.ok, false);
  const err = (r[0] as { error: { kind?: string; killedWorker?: boolean; message: string } }).error;
  assert.equal(err.kind, 'memory', err.message);
  assert.equal(err.killedWorker, true);
  assert.match(err.message, /memory limit of its worker thread \(64 MB heap\)/);
  assert.equal(pool.deaths - before, 2, 'tried twice, then failed');
  (await Promise.all(others)).forEach((x, i) => assert.deepEqual(x[0], { ok: true, out: String(i) }));
});

test('a render that never returns is stopped by the hard time limit', async () => {
  const spin = pool.render([{ env: 'default', source: '{{ 1|spin }}' }], '{}');
  // While the worker spins, this thread keeps going round its event loop.
  assert.equal(await Promise.race([spin.then(() => 'spin'), turns(100).then(() => 'turns')]), 'turns');
  const r = await spin;
  const err = (r[0] as { error: { kind?: string; message: string } }).error;
  assert.equal(err.kind, 'time', err.message);
  assert.match(err.message, /hard time limit \(1500 ms\)/);
  const [ok] = await pool.render([{ env: 'default', source: 'still {{ "fine" }}' }], '{}');
  assert.deepEqual(ok, { ok: true, out: 'still fine' });
});

test('the env filter sees the environment as it is at render time', async () => {
  process.env.POOL_TEST_VAR = 'first';
  assert.deepEqual((await pool.render([{ env: 'default', source: "{{ 'POOL_TEST_VAR'|envvar }}" }], '{}'))[0], { ok: true, out: 'first' });
  process.env.POOL_TEST_VAR = 'second';
  assert.deepEqual((await pool.render([{ env: 'default', source: "{{ 'POOL_TEST_VAR'|envvar }}" }], '{}'))[0], { ok: true, out: 'second' });
});

test('a closed pool refuses new work', async () => {
  const p = new RenderPool();
  assert.deepEqual((await p.render([{ env: 'default', source: '{{ 6*7 }}' }], '{}'))[0], { ok: true, out: '42' });
  await p.close();
  await assert.rejects(p.render([{ env: 'default', source: '1' }], '{}'), /closed/);
});
