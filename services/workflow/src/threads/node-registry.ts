import type { WorkflowConfig } from '../config.ts';
import { NodeRegistry } from '../engine/registry.ts';
import { apiNodes, openaiConfig } from '../nodes/api-nodes.ts';
import type { NodeDefinition } from '../nodes/api.ts';
import { builtinNodes } from '../nodes/index.ts';
import { loadPacks } from '../nodes/loader.ts';

type Log = { info(o: object, m: string): void; warn(o: object, m: string): void };

/** Built-in nodes, the test pack when enabled, and the packs under custom_nodes. */
export async function buildRegistry(config: WorkflowConfig, log: Log): Promise<NodeRegistry> {
  const registry = new NodeRegistry();
  for (const def of builtinNodes({ input: config.dirs.input, output: config.dirs.output, temp: config.dirs.temp, models: config.dirs.models })) registry.add(def);
  for (const def of apiNodes(openaiConfig(config.flags))) registry.add(def);
  if (config.enableTestNodes) {
    const { testingPackNodes } = await import('../nodes/testing-pack/index.ts');
    for (const def of testingPackNodes as NodeDefinition[]) registry.add(def);
  }
  const reports = await loadPacks(config.dirs.customNodes, (def) => registry.add(def));
  for (const r of reports) {
    if (r.error) log.warn({ pack: r.pack, error: r.error, loaded: r.nodes }, 'node pack failed to load');
    else log.info({ pack: r.pack, nodes: r.nodes.length }, 'node pack loaded');
  }
  registry.freeze();
  return registry;
}
