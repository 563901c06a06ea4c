import { nodeInfo, render, type NodeRegistry, type Rendered } from './registry.ts';

/**
 * The static node schema of the hosted runtime: object_info rendered once,
 * with an empty model and user-file context (a node's static inputs, never
 * the file lists of its dynamic ones, which would show one workspace's
 * uploads to every other), identical for every caller.
 */
export interface StaticSchema {
  all: Rendered;
  perClass: Map<string, Rendered>;
}

export function renderStaticSchema(registry: NodeRegistry): StaticSchema {
  const all: Record<string, unknown> = {};
  const perClass = new Map<string, Rendered>();
  for (const name of registry.names()) {
    const def = registry.get(name)!.def;
    const info = nodeInfo({ ...def, dynamicInputs: undefined });
    all[name] = info;
    perClass.set(name, render(info));
  }
  return { all: render(all), perClass };
}
