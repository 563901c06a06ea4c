// The graph as the API format, built as the reference frontend builds it:
// virtual nodes apply themselves first, then every node that runs (mode 0,
// not virtual) sends its widget values and its resolved links — a bypassed
// node (mode 4) passes its matching input through, a muted one (mode 2) is
// left out with the inputs that pointed at it, reroutes are followed.
import { ExecutableNodeDTO, LGraphEventMode } from '@comfyorg/litegraph';

/** The workflow as saved: unconnected widget sockets left out (the reference's compressWidgetInputSlots). */
export function serializeWorkflow(graph) {
  const workflow = graph.serialize({ sortNodes: false });
  for (const node of workflow.nodes) {
    for (const slot of node.inputs ?? []) delete slot.localized_name;
    for (const slot of node.outputs ?? []) delete slot.localized_name;
  }
  compressWidgetSockets(workflow);
  return workflow;
}

function compressWidgetSockets(workflow) {
  for (const node of workflow.nodes) {
    if (!node.inputs) continue;
    const kept = node.inputs.filter((i) => !(i.widget && i.link == null));
    if (kept.length === node.inputs.length) continue;
    node.inputs = kept;
    // Links name their target slot by index: point them at the new ones.
    kept.forEach((slot, i) => {
      if (slot.link == null) return;
      const link = workflow.links.find((l) => (Array.isArray(l) ? l[0] : l.id) === slot.link);
      if (Array.isArray(link)) link[4] = i;
      else if (link) link.target_slot = i;
    });
  }
}

/** { workflow, output } — output is the API-format prompt. */
export async function graphToPrompt(graph) {
  for (const node of graph.computeExecutionOrder(false)) if (node.isVirtualNode) node.applyToGraph?.();
  const workflow = serializeWorkflow(graph);
  const dtos = new Map();
  for (const node of graph.computeExecutionOrder(false)) {
    const dto = new ExecutableNodeDTO(node, [], dtos, undefined);
    for (const inner of dto.getInnerNodes()) dtos.set(inner.id, inner);
    dtos.set(dto.id, dto);
  }
  const output = {};
  for (const node of dtos.values()) {
    if (node.isVirtualNode || node.mode !== LGraphEventMode.ALWAYS || node.node.isSubgraphNode?.()) continue;
    const inputs = {};
    for (const [i, widget] of (node.widgets ?? []).entries()) {
      if (!widget.name || widget.options?.serialize === false) continue;
      const value = widget.serializeValue ? await widget.serializeValue(node.node, i) : widget.value;
      // A list would read as a link: the server unwraps {__value__}.
      inputs[widget.name] = Array.isArray(value) ? { __value__: value } : value;
    }
    for (const [i, input] of node.inputs.entries()) {
      const resolved = node.resolveInput(i);
      if (!resolved) continue;
      if (resolved.widgetInfo) {
        const value = resolved.widgetInfo.value;
        inputs[input.name] = Array.isArray(value) ? { __value__: value } : value;
        continue;
      }
      inputs[input.name] = [String(resolved.origin_id), parseInt(resolved.origin_slot)];
    }
    output[String(node.id)] = { inputs, class_type: node.comfyClass, _meta: { title: node.title } };
  }
  // Links to nodes that do not run (muted, or only reached through them) are dropped.
  for (const { inputs } of Object.values(output)) {
    for (const [name, v] of Object.entries(inputs)) if (Array.isArray(v) && v.length === 2 && !output[v[0]]) delete inputs[name];
  }
  return { workflow, output };
}
