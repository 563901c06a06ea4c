// Running prompts: queueing the graph (batch count, front), the socket's
// messages drawn on the nodes (executing outline, progress bars, live
// previews, output images and text), and errors: /prompt's node_errors mark
// nodes and inputs, execution errors open a panel with the traceback.
import { api, clientId, errorText, newId, token, workspace } from './api.js';
import { $, el, toast } from './dom.js';
import { applyControls } from './controls.js';
import { graphToPrompt } from './prompt.js';
import { loadImageElement } from './api.js';
import { setNodeImages, setNodeText, showOutputImages } from './images.js';

export const exec = { promptId: null, nodeId: null, mine: new Set(), onStatus: () => {}, onFinished: () => {} };

function nodeOf(graph, id) {
  if (id === null || id === undefined) return null;
  const s = String(id);
  // An id inside a subgraph ("5:2") is shown on the subgraph node that holds it.
  return graph.getNodeById(s) ?? graph.getNodeById(Number(s)) ?? graph.getNodeById(Number(s.split(':')[0])) ?? null;
}

export function clearErrors(graph) {
  for (const node of graph.nodes) {
    node.has_errors = false;
    node.errorLines = null;
    for (const slot of node.inputs ?? []) slot.hasErrors = false;
  }
  $('#prompt-errors').hidden = true;
  graph.setDirtyCanvas(true, true);
}

/** Marks the nodes and inputs /prompt refused, with the server's messages, and lists them. */
export function showPromptErrors(graph, body, status) {
  const list = $('#prompt-errors-list');
  const title = typeof body?.error === 'string' ? body.error : (body?.error?.message ?? `HTTP ${status}`);
  const lines = [];
  if (body?.error?.details && body.error.details !== body.error.message) lines.push({ text: String(body.error.details) });
  for (const [id, ne] of Object.entries(body?.node_errors ?? {})) {
    const node = nodeOf(graph, id);
    const texts = [];
    for (const e of ne?.errors ?? []) {
      const text = `${e.message}${e.details ? `: ${e.details}` : ''}`;
      texts.push(text);
      const input = e.extra_info?.input_name;
      const slot = input && node?.inputs?.find((s) => s.name === input);
      if (slot) slot.hasErrors = true;
      lines.push({ node: id, text: `#${id} ${node?.title ?? ne.class_type ?? ''}${input ? ` · ${input}` : ''}: ${text}` });
    }
    if (node) {
      node.has_errors = true;
      node.errorLines = texts;
    }
  }
  $('#prompt-errors-title').textContent = title;
  list.replaceChildren(
    ...lines.map((l) =>
      el('li', { 'data-node': l.node ?? '', text: l.text, onclick: () => l.node && focusNode(graph, l.node) }),
    ),
  );
  $('#prompt-errors').hidden = false;
  graph.setDirtyCanvas(true, true);
}

let canvasRef = null;
export function focusNode(graph, id) {
  const node = nodeOf(graph, id);
  if (!node || !canvasRef) return;
  canvasRef.centerOnNode(node);
  canvasRef.selectNode(node);
  canvasRef.setDirty(true, true);
}

/** Queues the graph `count` times; answers the ids queued. Stops at the first refusal, which it shows. */
export async function queueGraph(graph, { front = false, count = 1, controlMode = 'after' } = {}) {
  const ids = [];
  for (let i = 0; i < count; i++) {
    applyControls(graph, 'before', controlMode);
    const { workflow, output } = await graphToPrompt(graph);
    if (!Object.keys(output).length) {
      toast('Nothing to run: add a node that produces an output (Save Image, Preview Image, Preview Any…).', 'error');
      break;
    }
    const promptId = newId();
    exec.mine.add(promptId);
    const body = { client_id: clientId, prompt: output, extra_data: { extra_pnginfo: { workflow } }, prompt_id: promptId };
    if (front) body.front = true;
    let r;
    try {
      r = await api('/prompt', { method: 'POST', json: body });
    } catch (err) {
      toast(`Could not queue: ${err.message}`, 'error');
      break;
    }
    if (!r.ok || (r.body?.node_errors && Object.keys(r.body.node_errors).length && !r.body.prompt_id)) {
      exec.mine.delete(promptId);
      showPromptErrors(graph, r.body, r.status);
      toast(errorText(r), 'error');
      break;
    }
    clearErrors(graph);
    ids.push(r.body.prompt_id);
    document.body.dataset.lastPromptId = r.body.prompt_id;
    applyControls(graph, 'after', controlMode);
  }
  if (ids.length) document.body.dataset.queuedIds = ids.join(' ');
  if (ids.length) toast(ids.length === 1 ? `Queued #${ids[0].slice(0, 8)}` : `Queued ${ids.length} prompts`);
  return ids;
}

// ---------------------------------------------------------------- socket

function setRunning(graph, promptId, nodeId) {
  const prev = nodeOf(graph, exec.nodeId);
  if (prev) prev.progress = undefined;
  exec.promptId = promptId;
  exec.nodeId = nodeId;
  document.body.dataset.running = promptId ? 'true' : 'false';
  document.body.dataset.runningNode = nodeId ?? '';
  graph.setDirtyCanvas(true, false);
}

function showExecutionError(graph, data) {
  const node = nodeOf(graph, data.node_id);
  if (node) {
    node.has_errors = true;
    node.errorLines = [`${data.exception_type ?? 'Error'}: ${String(data.exception_message ?? '').trim()}`];
  }
  $('#exec-error-title').textContent = `${data.node_type ?? 'Prompt'}${data.node_id != null ? ` #${data.node_id}` : ''} failed`;
  $('#exec-error-message').textContent = `${data.exception_type ?? 'Error'}: ${String(data.exception_message ?? '')}`;
  $('#exec-error-traceback').textContent = Array.isArray(data.traceback) ? data.traceback.join('') : '';
  $('#exec-error').hidden = false;
  $('#exec-error').dataset.promptId = data.prompt_id ?? '';
}

function onMessage(graph, type, data) {
  switch (type) {
    case 'status':
      exec.onStatus(data?.status?.exec_info?.queue_remaining);
      break;
    case 'execution_start':
      for (const n of graph.nodes) {
        n.progress = undefined;
        if (n.errorLines && !n.has_errors) n.errorLines = null;
      }
      setRunning(graph, data.prompt_id, null);
      break;
    case 'executing':
      if (data.node === null || data.node === undefined) setRunning(graph, null, null);
      else setRunning(graph, data.prompt_id ?? exec.promptId, data.display_node ?? data.node);
      break;
    case 'progress': {
      const node = nodeOf(graph, data.display_node ?? data.node ?? exec.nodeId);
      if (node && data.max) node.progress = data.value / data.max;
      graph.setDirtyCanvas(true, false);
      break;
    }
    case 'progress_state':
      for (const [id, s] of Object.entries(data.nodes ?? {})) {
        const node = nodeOf(graph, s.display_node_id ?? id);
        if (!node) continue;
        node.progress = s.state === 'running' && s.max ? s.value / s.max : undefined;
      }
      graph.setDirtyCanvas(true, false);
      break;
    case 'executed': {
      const node = nodeOf(graph, data.display_node ?? data.node);
      if (!node) break;
      const out = data.output ?? {};
      const images = [...(Array.isArray(out.images) ? out.images : []), ...(Array.isArray(out.gifs) ? out.gifs : [])];
      if (images.length) showOutputImages(node, images);
      if (Array.isArray(out.text)) setNodeText(node, out.text.map(String));
      document.body.dataset.executed = `${document.body.dataset.executed ?? ''} ${data.display_node ?? data.node}`.trim();
      break;
    }
    case 'execution_error':
      setRunning(graph, null, null);
      showExecutionError(graph, data);
      exec.onFinished();
      break;
    case 'execution_success':
    case 'execution_interrupted':
      setRunning(graph, null, null);
      exec.onFinished();
      break;
  }
}

let previewUrl = null;
function onPreview(graph, buf) {
  const view = new DataView(buf);
  if (buf.byteLength < 8) return;
  const event = view.getUint32(0);
  let mime;
  let bytes;
  let nodeId = exec.nodeId;
  if (event === 1) {
    mime = view.getUint32(4) === 2 ? 'image/png' : 'image/jpeg';
    bytes = buf.slice(8);
  } else if (event === 4) {
    const len = view.getUint32(4);
    try {
      const meta = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 8, len)));
      nodeId = meta.display_node_id ?? meta.node_id ?? nodeId;
      mime = meta.image_type ?? 'image/jpeg';
    } catch {
      return;
    }
    bytes = buf.slice(8 + len);
  } else return;
  const node = nodeOf(graph, nodeId);
  if (!node) return;
  if (previewUrl) URL.revokeObjectURL(previewUrl);
  previewUrl = URL.createObjectURL(new Blob([bytes], { type: mime }));
  loadImageElement(previewUrl).then((img) => {
    setNodeImages(node, [img]);
    document.body.dataset.preview = String(node.id);
  });
}

/** The page's socket, reconnecting with back-off. */
export function connect(graph, canvas, { onOpen = () => {} } = {}) {
  canvasRef = canvas;
  let retry = 500;
  const open = () => {
    const u = new URL('ws', location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    u.searchParams.set('clientId', clientId);
    if (token) u.searchParams.set('token', token);
    // A socket cannot send headers: the chosen workspace goes in the query (hosted runtime).
    if (workspace.id) u.searchParams.set('workspace_id', workspace.id);
    const ws = new WebSocket(u);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      retry = 500;
      $('#conn').dataset.state = 'connected';
      $('#conn').textContent = 'connected';
      ws.send(JSON.stringify({ type: 'feature_flags', data: { supports_preview_metadata: true } }));
      onOpen();
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return onPreview(graph, ev.data);
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (msg && typeof msg.type === 'string') onMessage(graph, msg.type, msg.data ?? {});
    };
    ws.onclose = () => {
      $('#conn').dataset.state = 'disconnected';
      $('#conn').textContent = 'disconnected — retrying';
      setTimeout(open, retry);
      retry = Math.min(retry * 2, 10_000);
    };
  };
  open();
}

/** Outline of the running node and the error text under a refused node. */
export function decorateNode(node) {
  node.strokeStyles.running = function () {
    if (exec.nodeId !== null && String(this.id) === String(exec.nodeId).split(':')[0]) return { color: '#00d26a', lineWidth: 3, padding: 6 };
  };
  const prev = node.onDrawForeground;
  node.onDrawForeground = function (ctx, ...rest) {
    prev?.call(this, ctx, ...rest);
    if (!this.errorLines?.length || this.flags?.collapsed) return;
    ctx.save();
    ctx.font = '12px sans-serif';
    ctx.fillStyle = '#ff6b6b';
    this.errorLines.slice(0, 4).forEach((l, i) => ctx.fillText(l.length > 90 ? `${l.slice(0, 89)}…` : l, 0, this.size[1] + 16 + i * 15));
    ctx.restore();
  };
}

export async function interrupt() {
  const r = await api('/interrupt', { method: 'POST', json: exec.promptId ? { prompt_id: exec.promptId } : {} });
  if (!r.ok) toast(`Interrupt failed: ${errorText(r)}`, 'error');
}

export async function clearQueue() {
  const r = await api('/queue', { method: 'POST', json: { clear: true } });
  if (!r.ok) toast(`Clear failed: ${errorText(r)}`, 'error');
  else toast('Pending prompts cleared');
}

