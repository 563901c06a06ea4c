/**
 * What rendering webhook templates in worker threads costs a delivery loop, in the same run:
 * batches of 64 deliveries (the worker's chunk), each rendering the bench/jinja webhook body plus
 * a header template, once in this thread (what deliveries did before) and once through the
 * IsolatedTemplates render pool (what they do now). Prints renders/s of each and the ratio.
 *
 *   node --import tsx bench/inventory/render-threads.ts [--seconds 5]
 */
import { TEMPLATE, context } from '../jinja/webhook-fixture.ts';
import { createTemplateEngine, IsolatedTemplates } from '../../services/inventory/src/events/templates.ts';

const seconds = Number(process.argv[process.argv.indexOf('--seconds') + 1]) || 5;
const ctxText = JSON.stringify(context());
const HEADERS = 'X-Event: {{ event }}\nX-Device: {{ data.name | header_safe }}';
const BATCH = 64;

const inThread = createTemplateEngine([]);
const pool = new IsolatedTemplates([], { workers: 1, heapMb: 256, hardTimeoutMs: 5000 });

async function runInThread(): Promise<number> {
  let n = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < BATCH; i++) {
      const ctx = JSON.parse(ctxText);
      inThread.render(HEADERS, ctx, 'headers');
      inThread.render(TEMPLATE, ctx, 'other');
      n++;
    }
    await new Promise((r) => setImmediate(r));
  }
  return n / seconds;
}

async function runPool(): Promise<number> {
  let n = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const batch = Array.from({ length: BATCH }, () => pool.render([{ source: HEADERS, kind: 'headers' }, { source: TEMPLATE, kind: 'other' }], ctxText));
    const rs = await Promise.all(batch);
    if (!rs.every((r) => r.every((x) => x.ok))) throw new Error('render failed');
    n += BATCH;
  }
  return n / seconds;
}

await pool.render([{ source: TEMPLATE, kind: 'other' }], ctxText); // boot the thread
const results: Array<[number, number]> = [];
for (let round = 0; round < 3; round++) results.push([await runInThread(), await runPool()]);
const med = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const a = med(results.map((r) => r[0]));
const b = med(results.map((r) => r[1]));
console.log(`webhook renders (body + headers), median of 3 rounds of ${seconds} s:`);
console.log(`  in this thread   ${a.toFixed(0)} deliveries/s`);
console.log(`  render pool (1)  ${b.toFixed(0)} deliveries/s   ratio ${(b / a).toFixed(2)}`);
await pool.close();
