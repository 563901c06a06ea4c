// Renders the benchmark template in a tight loop for profiling:
//   node --cpu-prof --import tsx bench/jinja/profile.ts [seconds]
// (for readable line numbers, bundle first: npx esbuild bench/jinja/profile.ts --bundle --platform=node --format=esm --outfile=/tmp/p.mjs)

import { Environment } from '../../packages/jinja/src/index.ts';
import { TEMPLATE, context } from './webhook-fixture.ts';

const tmpl = new Environment().fromString(TEMPLATE);
const ctx = context();
const until = performance.now() + Number(process.argv[2] ?? 3) * 1000;
let n = 0;
while (performance.now() < until) {
  for (let i = 0; i < 100; i++) tmpl.render(ctx);
  n += 100;
}
console.log(`${n} renders`);
