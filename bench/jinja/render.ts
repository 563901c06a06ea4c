// Benchmark: compile once, render a typical webhook body repeatedly.
//   npx tsx bench/jinja/render.ts
// Reports renders/s (median of several rounds) by wall clock and per CPU-second of this process,
// the JSON.stringify baseline on the same context, and the ratio between the two.

import os from 'node:os';
import { Environment } from '../../packages/jinja/src/index.ts';
import { TEMPLATE, context } from './webhook-fixture.ts';

/** Operations per second of wall-clock time, and per second of this process's CPU time. */
function measureBoth(fn: () => unknown, minMs: number): { wall: number; cpu: number } {
  let n = 0;
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  let now = start;
  while (now - start < minMs) {
    for (let i = 0; i < 100; i++) fn();
    n += 100;
    now = performance.now();
  }
  const cpu = process.cpuUsage(cpu0);
  return { wall: (n * 1000) / (now - start), cpu: (n * 1e6) / (cpu.user + cpu.system) };
}
function measure(fn: () => unknown, minMs: number): number {
  return measureBoth(fn, minMs).wall;
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const env = new Environment();
const tmpl = env.fromString(TEMPLATE);
const ctx = context();
JSON.parse(tmpl.render(ctx)); // the output is valid JSON

const ROUNDS = 7;
const renderRates: number[] = [];
const jsonRates: number[] = [];
const renderCpu: number[] = [];
const jsonCpu: number[] = [];
measure(() => tmpl.render(ctx), 300); // warm-up
measure(() => JSON.stringify(ctx), 100);
for (let i = 0; i < ROUNDS; i++) {
  const a = measureBoth(() => tmpl.render(ctx), 400);
  const b = measureBoth(() => JSON.stringify(ctx), 200);
  renderRates.push(a.wall);
  renderCpu.push(a.cpu);
  jsonRates.push(b.wall);
  jsonCpu.push(b.cpu);
}
const out = tmpl.render(ctx);
const fmt = (n: number) => Math.round(n).toLocaleString('en-US').padStart(8);
const wall = { render: median(renderRates), json: median(jsonRates) };
const cpu = { render: median(renderCpu), json: median(jsonCpu) };
console.log(`template: ${TEMPLATE.split('\n').length} lines, loop over ${ctx.data.interfaces.length} items, output ${out.length} chars`);
console.log(`median of ${ROUNDS} rounds, load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} CPUs`);
console.log('');
const row = (label: string, a: string, b: string) => console.log(label.padEnd(16) + a.padEnd(34) + b);
row('', 'wall clock', 'per CPU-second of this process');
row('render', `${fmt(wall.render)} renders/s (${(1e6 / wall.render).toFixed(1)} µs)`, `${fmt(cpu.render)} renders (${(1e6 / cpu.render).toFixed(1)} µs CPU)`);
row('JSON.stringify', `${fmt(wall.json)} ops/s (baseline)`, `${fmt(cpu.json)} ops (baseline)`);
row('ratio', `render = ${(wall.json / wall.render).toFixed(2)}x JSON.stringify`, `render = ${(cpu.json / cpu.render).toFixed(2)}x JSON.stringify`);
// On a shared machine wall-clock rates swing with other jobs; CPU time of this process is steadier.
const met = (n: number) => (n >= 50_000 ? 'met' : 'NOT met');
console.log(`goal >= 50,000 renders/s: ${met(wall.render)} (wall clock), ${met(cpu.render)} (per CPU-second)`);
