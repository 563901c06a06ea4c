// Workflows in and out: the frontend's workflow JSON (0.4 and the 1.0
// schema), the API format, PNG files with a `workflow` (or `prompt`) text
// chunk, and the user's workflows/ folder through the userdata API.
import { LiteGraph } from '@comfyorg/litegraph';
import { api, errorText } from './api.js';
import { graphToPrompt, serializeWorkflow } from './prompt.js';
import { loading, restoreWidgetSockets } from './nodes.js';

/** What kind of thing a parsed JSON value is: 'workflow', 'api' or null. */
export function kindOf(data) {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return null;
  if (Array.isArray(data.nodes) && (Array.isArray(data.links) || data.version === 1 || data.version === 0.4)) return 'workflow';
  const values = Object.values(data);
  if (values.length && values.every((n) => n && typeof n === 'object' && typeof n.class_type === 'string')) return 'api';
  return null;
}

/** Loads a UI workflow into the graph; answers the node types this server does not have. */
export function loadWorkflow(graph, data) {
  const missing = new Set();
  for (const n of data.nodes ?? []) if (n && typeof n.type === 'string' && !LiteGraph.registered_node_types[n.type]) missing.add(n.type);
  for (const sg of data.definitions?.subgraphs ?? []) for (const n of sg.nodes ?? []) if (n && !LiteGraph.registered_node_types[n.type] && !data.definitions.subgraphs.some((s) => s.id === n.type)) missing.add(n.type);
  graph.clear();
  loading.configuring = true;
  try {
    graph.configure(structuredClone(data));
  } finally {
    loading.configuring = false;
  }
  for (const node of graph.nodes) if (LiteGraph.registered_node_types[node.type]?.nodeData) restoreWidgetSockets(node);
  // Links name their target slot by index: they follow the sockets as they are now.
  for (const node of graph.nodes) {
    (node.inputs ?? []).forEach((slot, i) => {
      const link = slot.link != null ? graph.links.get(slot.link) : null;
      if (link && link.target_id === node.id) link.target_slot = i;
    });
  }
  for (const node of graph.nodes) node.onAfterGraphConfigured?.();
  graph.setDirtyCanvas(true, true);
  return [...missing];
}

/** Builds a graph from an API-format prompt (as the reference's loadApiJson), laid out by depth. */
export function loadApiPrompt(graph, prompt) {
  const missing = new Set();
  graph.clear();
  const made = new Map();
  for (const [id, data] of Object.entries(prompt)) {
    const node = LiteGraph.createNode(data.class_type);
    if (!node) {
      missing.add(data.class_type);
      continue;
    }
    node.id = /^\d+$/.test(id) ? Number(id) : id;
    if (typeof data._meta?.title === 'string') node.title = data._meta.title;
    graph.add(node, true);
    made.set(id, node);
  }
  for (const [id, data] of Object.entries(prompt)) {
    const node = made.get(id);
    if (!node) continue;
    for (const [name, value] of Object.entries(data.inputs ?? {})) {
      if (Array.isArray(value) && value.length === 2 && typeof value[1] === 'number') {
        const from = made.get(String(value[0]));
        const slot = node.inputs?.findIndex((i) => i.name === name) ?? -1;
        if (from && slot >= 0) from.connect(value[1], node, slot);
        continue;
      }
      const w = node.widgets?.find((x) => x.name === name);
      if (w) w.value = value && typeof value === 'object' && '__value__' in value ? value.__value__ : value;
    }
    // A prompt says what to run: its seeds stay as they are.
    for (const w of node.widgets ?? []) if (w.controls) w.value = 'fixed';
  }
  layoutByDepth(graph, [...made.values()]);
  graph.setDirtyCanvas(true, true);
  return [...missing];
}

function layoutByDepth(graph, nodes) {
  const depth = new Map();
  const of = (node, seen = new Set()) => {
    if (depth.has(node.id)) return depth.get(node.id);
    if (seen.has(node.id)) return 0;
    seen.add(node.id);
    let d = 0;
    for (const input of node.inputs ?? []) {
      const link = input.link != null ? graph.links.get(input.link) : null;
      const from = link && graph.getNodeById(link.origin_id);
      if (from) d = Math.max(d, of(from, seen) + 1);
    }
    depth.set(node.id, d);
    return d;
  };
  const columns = new Map();
  for (const n of nodes) {
    const d = of(n);
    const col = columns.get(d) ?? [];
    col.push(n);
    columns.set(d, col);
  }
  let x = 50;
  for (const d of [...columns.keys()].sort((a, b) => a - b)) {
    let y = 80;
    let width = 0;
    for (const n of columns.get(d)) {
      n.pos = [x, y];
      y += n.size[1] + 60;
      width = Math.max(width, n.size[0]);
    }
    x += width + 80;
  }
}

/** Text chunks of a PNG (tEXt, and iTXt, compressed or not). */
export async function pngTextChunks(buffer) {
  const bytes = new Uint8Array(buffer);
  const sig = [137, 80, 78, 71, 13, 10, 26, 10];
  if (bytes.length < 8 || sig.some((b, i) => bytes[i] !== b)) return null;
  const view = new DataView(buffer);
  const utf8 = new TextDecoder();
  const out = {};
  let pos = 8;
  while (pos + 12 <= bytes.length) {
    const len = view.getUint32(pos);
    const type = String.fromCharCode(...bytes.subarray(pos + 4, pos + 8));
    const data = bytes.subarray(pos + 8, pos + 8 + len);
    if (type === 'tEXt') {
      const nul = data.indexOf(0);
      if (nul > 0) out[utf8.decode(data.subarray(0, nul))] = utf8.decode(data.subarray(nul + 1));
    } else if (type === 'iTXt') {
      const nul = data.indexOf(0);
      if (nul > 0) {
        const key = utf8.decode(data.subarray(0, nul));
        const compressed = data[nul + 1] === 1;
        let p = nul + 3;
        p = data.indexOf(0, p) + 1; // language tag
        p = data.indexOf(0, p) + 1; // translated keyword
        let text = data.subarray(p);
        if (compressed) text = new Uint8Array(await new Response(new Blob([text]).stream().pipeThrough(new DecompressionStream('deflate'))).arrayBuffer());
        out[key] = utf8.decode(text);
      }
    } else if (type === 'IEND') break;
    pos += 12 + len;
  }
  return out;
}

/** Reads a dropped or opened file: {kind, data} or throws with a message for the user. */
export async function readWorkflowFile(file) {
  const buf = await file.arrayBuffer();
  const chunks = await pngTextChunks(buf);
  if (chunks) {
    for (const key of ['workflow', 'Workflow']) {
      if (chunks[key]) {
        const data = JSON.parse(chunks[key]);
        if (kindOf(data) === 'workflow') return { kind: 'workflow', data };
      }
    }
    if (chunks.prompt) {
      const data = JSON.parse(chunks.prompt);
      if (kindOf(data) === 'api') return { kind: 'api', data };
    }
    throw Object.assign(new Error(`${file.name} holds no workflow (no "workflow" or "prompt" text chunk)`), { noWorkflow: true });
  }
  let data;
  try {
    data = JSON.parse(new TextDecoder().decode(buf));
  } catch {
    throw Object.assign(new Error(`${file.name} is neither a workflow JSON file nor a PNG with a workflow`), { noWorkflow: true });
  }
  // A saved job's detail or a queue request: {prompt: …} / {workflow: …}
  if (kindOf(data) === null && kindOf(data?.workflow) === 'workflow') data = data.workflow;
  else if (kindOf(data) === null && kindOf(data?.prompt) === 'api') data = data.prompt;
  const kind = kindOf(data);
  if (!kind) throw new Error(`${file.name} is not a workflow: it has neither nodes and links nor API-format nodes`);
  return { kind, data };
}

export function download(name, text, type = 'application/json') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export async function exportWorkflow(graph, name) {
  download(`${name}.json`, JSON.stringify(serializeWorkflow(graph), null, 2));
}

export async function exportApi(graph, name) {
  const { output } = await graphToPrompt(graph);
  download(`${name}_api.json`, JSON.stringify(output, null, 2));
}

// ---------------------------------------------------------------- user data: workflows/

const enc = (p) => encodeURIComponent(`workflows/${p}`);

export async function listWorkflows() {
  const r = await api('/userdata', { query: { dir: 'workflows', recurse: 'true', split: 'false', full_info: 'true' } });
  if (r.status === 404) return [];
  if (!r.ok) throw new Error(errorText(r));
  return (Array.isArray(r.body) ? r.body : []).filter((f) => typeof f.path === 'string' && f.path.endsWith('.json')).sort((a, b) => a.path.localeCompare(b.path));
}

export async function readUserWorkflow(path) {
  const r = await api(`/userdata/${enc(path)}`);
  if (!r.ok) throw new Error(`Could not open ${path}: ${errorText(r)}`);
  return r.body;
}

export async function saveUserWorkflow(path, workflow, overwrite = true) {
  const r = await api(`/userdata/${enc(path)}`, { method: 'POST', query: { overwrite: String(overwrite), full_info: 'true' }, body: JSON.stringify(workflow), headers: { 'content-type': 'application/json' } });
  if (!r.ok) throw new Error(r.status === 409 ? `${path} exists already` : `Could not save ${path}: ${errorText(r)}`);
  return r.body;
}

export async function deleteUserWorkflow(path) {
  const r = await api(`/userdata/${enc(path)}`, { method: 'DELETE' });
  if (!r.ok && r.status !== 404) throw new Error(`Could not delete ${path}: ${errorText(r)}`);
}

/** Makes a user-typed name a file name under workflows/ ("a/b" keeps its folder). */
export function workflowPath(name) {
  const clean = String(name).trim().replace(/\\/g, '/').replace(/^\/+/, '');
  if (!clean || clean.split('/').some((p) => p === '..' || p === '.' || p === '')) return null;
  return clean.endsWith('.json') ? clean : `${clean}.json`;
}

