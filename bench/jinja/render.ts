// Benchmark: compile once, render a typical webhook body repeatedly.
//   npx tsx bench/jinja/render.ts
// Reports renders/s (median of several rounds) and the ratio to JSON.stringify of the same context.

import os from 'node:os';
import { Environment } from '../../packages/jinja/src/index.ts';

const TEMPLATE = `{
  "event": "{{ event }}",
  "timestamp": "{{ timestamp }}",
  "model": "{{ model }}",
  "username": "{{ username }}",
  "request_id": "{{ request_id }}",
  "device": {
    "id": {{ data.id }},
    "name": "{{ data.name }}",
    "status": "{{ data.status.value }}",
    "site": "{{ data.site.name|upper }}",
    "tags": {{ data.tags|map(attribute='name')|list|tojson }}
  },
  "interfaces": [
  {%- for iface in data.interfaces %}
    {"name": "{{ iface.name }}", "enabled": {{ iface.enabled|lower }}, "mtu": {{ iface.mtu or 1500 }}, "speed": "{{ '%.1f'|format(iface.speed / 1000) }}G"}{{ "," if not loop.last }}
  {%- endfor %}
  ],
  "summary": "{{ data.interfaces|selectattr('enabled')|list|length }} of {{ data.interfaces|length }} interfaces enabled",
  "custom_fields": {{ data.custom_fields|tojson }}
}`;

function context() {
  return {
    event: 'updated',
    timestamp: '2026-03-06T15:11:23.503186+00:00',
    model: 'device',
    username: 'admin',
    request_id: '17af32f0-852a-46ca-a7d4-33ecd0c13de6',
    data: {
      id: 42,
      name: 'edge-rtr-01',
      status: { value: 'active', label: 'Active' },
      site: { id: 5, name: 'Amsterdam DC1', slug: 'ams-dc1' },
      tags: [
        { id: 1, name: 'Foo', slug: 'foo' },
        { id: 2, name: 'Bar', slug: 'bar' },
      ],
      interfaces: Array.from({ length: 50 }, (_, i) => ({
        name: `xe-0/0/${i}`,
        enabled: i % 3 !== 0,
        mtu: i % 5 === 0 ? null : 9216,
        speed: 10000 + (i % 4) * 15000,
      })),
      custom_fields: { monitoring: true, owner_email: 'noc@example.com', sla_hours: 4, cost: 1250.5 },
    },
  };
}

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
const render = median(renderRates);
const json = median(jsonRates);
const out = tmpl.render(ctx);
console.log(`template: ${TEMPLATE.split('\n').length} lines, loop over ${ctx.data.interfaces.length} items, output ${out.length} chars`);
console.log(`render:         ${Math.round(render).toLocaleString('en-US')} renders/s (median of ${ROUNDS} rounds, ${(1e6 / render).toFixed(1)} µs/render)`);
console.log(`JSON.stringify: ${Math.round(json).toLocaleString('en-US')} ops/s (same context, baseline)`);
console.log(`ratio:          render takes ${(json / render).toFixed(1)}x the time of JSON.stringify`);
// On a shared machine wall-clock rates swing with other jobs; CPU time of this process is steadier.
console.log(
  `per CPU-second: ${Math.round(median(renderCpu)).toLocaleString('en-US')} renders vs ${Math.round(median(jsonCpu)).toLocaleString('en-US')} JSON.stringify ` +
    `(ratio ${(median(jsonCpu) / median(renderCpu)).toFixed(1)}x), load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} CPUs`,
);
console.log(`goal >= 50,000 renders/s: ${render >= 50_000 ? 'met' : 'NOT met'}`);
