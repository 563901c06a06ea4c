import { NodeRegistry } from './src/engine/registry.ts';
import { validatePrompt } from './src/engine/validate.ts';
import { Executor, InterruptSignal } from './src/engine/executor.ts';
import { builtinNodes } from './src/nodes/index.ts';
const reg = new NodeRegistry();
for (const d of builtinNodes({input:'/tmp/wi',output:'/tmp/wo',temp:'/tmp/wt',models:'/tmp/wm'})) reg.add(d);
reg.freeze();
const ex = new Executor(reg);
const sink = { send: () => {}, progress() {}, progressState() {}, preview() {} };
function chain(n: number) {
  const p: any = { '0': { class_type: 'PrimitiveString', inputs: { value: 'x' } } };
  for (let i = 1; i < n; i++) p[String(i)] = { class_type: 'StringConcatenate', inputs: { string_a: [String(i-1), 0], string_b: 'b', delimiter: String(i) } };
  p['out'] = { class_type: 'PreviewAny', inputs: { source: [String(n - 1), 0] } };
  return p;
}
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
for (let k = 0; k < 8; k++) {
  const p = chain(1000);
  let c = cpu(), t = performance.now();
  const v = await validatePrompt(reg, p, undefined);
  const cv = cpu() - c;
  ex.freeMemory();
  c = cpu(); t = performance.now();
  const r = await ex.run({ promptId: 'x', prompt: p, outputs: v.outputs, extraData: {}, sink, interrupt: new InterruptSignal(), env: { dirs: {} as any } });
  const cr = cpu() - c, tr = performance.now() - t;
  c = cpu(); t = performance.now();
  const r2 = await ex.run({ promptId: 'y', prompt: p, outputs: v.outputs, extraData: {}, sink, interrupt: new InterruptSignal(), env: { dirs: {} as any } });
  console.log('validate cpu', cv.toFixed(1), 'run cpu', cr.toFixed(1), 'wall', tr.toFixed(1), 'cached cpu', (cpu() - c).toFixed(1), 'wall', (performance.now() - t).toFixed(1));
}
