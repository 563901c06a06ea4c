/**
 * Engine overhead: validate + schedule + run of 1,000 trivial nodes in three
 * shapes (chain, wide DAG, binary tree), a fully cached re-run, and a
 * 10,000-node chain, each against a same-run baseline: the same node
 * functions called directly in topological order. Medians of --rounds runs;
 * CPU time is reported beside wall time because the machine is shared.
 *
 *   npx tsx bench/workflow/engine.ts [--rounds 15] [--nodes 1000]
 */
import { parseArgs } from 'node:util';
import { Executor, InterruptSignal } from '../../services/workflow/src/engine/executor.ts';
import { NodeRegistry } from '../../services/workflow/src/engine/registry.ts';
import { validatePrompt, type PromptGraph } from '../../services/workflow/src/engine/validate.ts';
import type { NodeDefinition } from '../../services/workflow/src/nodes/api.ts';

const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '15' }, nodes: { type: 'string', default: '1000' } }, strict: false });
const ROUNDS = Number(args.rounds);
const N = Number(args.nodes);

/** Trivial nodes: an int source, a binary add, and an output. */
const defs: NodeDefinition[] = [
  { name: 'Src', category: 'bench', inputs: { required: { v: ['INT', { default: 0, min: -1e15, max: 1e15 }] } }, outputs: ['INT'], execute: ({ v }) => [v] },
  { name: 'Add', category: 'bench', inputs: { required: { a: ['INT', {}] }, optional: { b: ['INT', {}] } }, outputs: ['INT'], execute: ({ a, b }) => [a + (b ?? 1)] },
  { name: 'Out', category: 'bench', inputs: { required: { v: ['INT', {}] } }, outputs: [], outputNode: true, execute: ({ v }) => ({ ui: { v: [v] } }) },
];

function chain(n: number): PromptGraph {
  const p: PromptGraph = { '0': { class_type: 'Src', inputs: { v: 1 } } };
  for (let i = 1; i < n - 1; i++) p[String(i)] = { class_type: 'Add', inputs: { a: [String(i - 1), 0] } };
  p.out = { class_type: 'Out', inputs: { v: [String(n - 2), 0] } };
  return p;
}

/** n-2 independent sources summed pairwise into one output would be a tree; here every source feeds one reducer chain. */
function wide(n: number): PromptGraph {
  const k = Math.floor((n - 1) / 2);
  const p: PromptGraph = {};
  for (let i = 0; i < k; i++) p[`s${i}`] = { class_type: 'Src', inputs: { v: i } };
  p.r0 = { class_type: 'Add', inputs: { a: ['s0', 0] } };
  for (let i = 1; i < k; i++) p[`r${i}`] = { class_type: 'Add', inputs: { a: [`r${i - 1}`, 0], b: [`s${i}`, 0] } };
  p.out = { class_type: 'Out', inputs: { v: [`r${k - 1}`, 0] } };
  return p;
}

function tree(n: number): PromptGraph {
  const leaves = Math.ceil(n / 2);
  const p: PromptGraph = {};
  let level: string[] = [];
  for (let i = 0; i < leaves; i++) {
    p[`l${i}`] = { class_type: 'Src', inputs: { v: i } };
    level.push(`l${i}`);
  }
  let id = 0;
  while (level.length > 1) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const name = `t${id++}`;
      p[name] = level[i + 1] ? { class_type: 'Add', inputs: { a: [level[i]!, 0], b: [level[i + 1]!, 0] } } : { class_type: 'Add', inputs: { a: [level[i]!, 0] } };
      next.push(name);
    }
    level = next;
  }
  p.out = { class_type: 'Out', inputs: { v: [level[0]!, 0] } };
  return p;
}

/** The baseline: the node functions called in a precomputed topological order with plain values. */
function baseline(prompt: PromptGraph, reg: NodeRegistry): void {
  const order: string[] = [];
  const state = new Map<string, number>();
  for (const root of Object.keys(prompt)) {
    const stack: Array<[string, boolean]> = [[root, false]];
    while (stack.length) {
      const [id, done] = stack.pop()!;
      if (done) {
        if (state.get(id) !== 2) {
          state.set(id, 2);
          order.push(id);
        }
        continue;
      }
      if (state.has(id)) continue;
      state.set(id, 1);
      stack.push([id, true]);
      for (const v of Object.values(prompt[id]!.inputs)) if (Array.isArray(v)) stack.push([v[0] as string, false]);
    }
  }
  const values = new Map<string, unknown[]>();
  for (const id of order) {
    const node = prompt[id]!;
    const args: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node.inputs)) args[k] = Array.isArray(v) ? values.get(v[0] as string)![v[1] as number] : v;
    const r = reg.get(node.class_type)!.def.execute(args, undefined as never);
    values.set(id, Array.isArray(r) ? r : []);
  }
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const reg = new NodeRegistry();
for (const d of defs) reg.add(d);
reg.freeze();
const sink = { send() {}, progress() {}, progressState() {}, preview() {} };

/** Validation coerces inputs in place, as the reference: each run gets a fresh copy, made before the clock starts. */
const fresh = (p: PromptGraph): PromptGraph => JSON.parse(JSON.stringify(p));

async function engineRun(ex: Executor, copy: PromptGraph): Promise<void> {
  const v = await validatePrompt(reg, copy, undefined);
  if (!v.ok) throw new Error(JSON.stringify(v.error));
  const r = await ex.run({ promptId: 'bench', prompt: copy, outputs: v.outputs, extraData: {}, sink, interrupt: new InterruptSignal(), env: { dirs: {} as never } });
  if (r.status !== 'success') throw new Error(JSON.stringify(r.messages.at(-1)));
}

async function measure(label: string, prompt: PromptGraph): Promise<void> {
  const wall: number[] = [];
  const cpu: number[] = [];
  const cachedWall: number[] = [];
  const base: number[] = [];
  const ex = new Executor(reg);
  for (let r = 0; r < ROUNDS + 3; r++) {
    ex.freeMemory();
    const [first, second] = [fresh(prompt), fresh(prompt)];
    let t = performance.now();
    const c = cpuMs();
    await engineRun(ex, first);
    const w = performance.now() - t;
    const cc = cpuMs() - c;
    t = performance.now();
    await engineRun(ex, second);
    const cw = performance.now() - t;
    t = performance.now();
    baseline(prompt, reg);
    const bw = performance.now() - t;
    if (r < 3) continue; // warm-up
    wall.push(w);
    cpu.push(cc);
    cachedWall.push(cw);
    base.push(bw);
  }
  const b = median(base);
  console.log(
    `${label.padEnd(22)} run ${median(wall).toFixed(2)} ms (cpu ${median(cpu).toFixed(2)})  cached re-run ${median(cachedWall).toFixed(2)} ms  baseline ${b.toFixed(3)} ms  run/baseline ${(median(wall) / b).toFixed(0)}x`,
  );
}

await measure(`chain ${N}`, chain(N));
await measure(`wide DAG ${N}`, wide(N));
await measure(`binary tree ${N}`, tree(N));
await measure('chain 10000', chain(10_000));
