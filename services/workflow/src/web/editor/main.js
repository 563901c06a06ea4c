// The built-in page: a node-graph editor (the graph library
// @comfyorg/litegraph, bundled at build time) for workflows in the reference
// frontend's format, run against this service.
import '@comfyorg/litegraph/style.css';
import '../style.css';
import { CanvasPointer, ContextMenu, LGraph, LGraphCanvas, LGraphGroup, LiteGraph, SubgraphNode } from '@comfyorg/litegraph';
import { api, errorText, runtime } from './api.js';
import { $, el, escapeHtml, toast } from './dom.js';
import { History } from './history.js';
import { setUploadedFile } from './images.js';
import { applyTypeColours, defs, registerNodeDefs } from './nodes.js';
import { loadSettings, refreshQueue, renderGallery, renderLibrary, renderSettings, renderTemplates, settings, showTab, toggleTab } from './panels.js';
import { graphToPrompt, serializeWorkflow } from './prompt.js';
import { clearErrors, clearQueue, connect, decorateNode, exec, interrupt, queueGraph } from './run.js';
import { invalidateSearchIndex, openSearch } from './search.js';
import {
  deleteUserWorkflow,
  download,
  kindOf,
  listWorkflows,
  loadApiPrompt,
  loadWorkflow,
  readUserWorkflow,
  readWorkflowFile,
  saveUserWorkflow,
  workflowPath,
} from './workflow-io.js';
import { TEMPLATES } from './templates.js';
import { installTextareaLayer } from './textarea.js';
import { chooseUser } from './users.js';
import { signIn } from './cloud.js';

const STORE_KEY = 'wf-page:workflow';

// The library's menus set entries as HTML: names from the server (node titles, file names) go in as text.
const addItem = ContextMenu.prototype.addItem;
ContextMenu.prototype.addItem = function (name, value, options) {
  return addItem.call(this, name === null || name === undefined ? name : escapeHtml(name), value, options);
};
// Its colour menu styles entries inline, which the page's CSP refuses: plain names instead.
LGraphCanvas.onMenuNodeColors = function (value, options, e, menu, node) {
  const values = [{ value: null, content: 'No color' }, ...Object.keys(LGraphCanvas.node_colors).map((k) => ({ value: k, content: k }))];
  new LiteGraph.ContextMenu(values, {
    event: e,
    parentMenu: menu,
    node,
    callback: (v) => {
      const option = v.value ? LGraphCanvas.node_colors[v.value] : null;
      const targets = canvas.selectedItems.size > 1 ? [...canvas.selectedItems].filter((x) => x.setColorOption) : [node];
      for (const t of targets) t.setColorOption(option);
      canvas.setDirty(true, true);
    },
  });
  return false;
};

const graph = new LGraph();
const canvasEl = $('#graph-canvas');
const canvas = new LGraphCanvas(canvasEl, graph);
installTextareaLayer(canvas, $('#canvas-wrap'));
applyTypeColours(canvas);
LiteGraph.release_link_on_empty_shows_menu = true;
LiteGraph.alt_drag_do_clone_nodes = true;
LiteGraph.macGesturesRequireMac = false;
canvas.allow_searchbox = true;
canvas.render_canvas_border = false;
canvas.showSearchBox = (event, opts) => openSearch(canvas, event, opts);
const showConnectionMenu = canvas.showConnectionMenu.bind(canvas);
canvas.showConnectionMenu = (o) => {
  const action = settings['Comfy.LinkRelease.Action'] ?? 'search box';
  if (action === 'no action') return;
  if (action === 'context menu') return showConnectionMenu(o);
  openSearch(canvas, o.e, o.nodeFrom ? { node_from: o.nodeFrom, slot_from: o.slotFrom, type_filter_in: o.slotFrom?.type, afterRerouteId: o.afterRerouteId } : { node_to: o.nodeTo, slot_to: o.slotTo, type_filter_out: o.slotTo?.type, afterRerouteId: o.afterRerouteId });
};

// Muted nodes are drawn faded, bypassed ones purple, as in the reference.
const drawNode = canvas.drawNode.bind(canvas);
canvas.drawNode = (node, ctx) => {
  if (node.mode !== 2 && node.mode !== 4) return drawNode(node, ctx);
  const alpha = canvas.editor_alpha;
  const bg = node.bgcolor;
  if (node.mode === 2) canvas.editor_alpha = 0.4;
  else {
    node.bgcolor = '#FF00FF';
    canvas.editor_alpha = 0.2;
  }
  try {
    drawNode(node, ctx);
  } finally {
    canvas.editor_alpha = alpha;
    node.bgcolor = bg;
  }
};

graph.onNodeAdded = (node) => decorateNode(node);

// A subgraph (from a loaded workflow's definitions, or the canvas menu's Convert to Subgraph) becomes a node type of its own id.
graph.events.addEventListener('subgraph-created', (e) => {
  const { subgraph } = e.detail;
  class ComfySubgraphNode extends SubgraphNode {
    constructor() {
      super(graph, subgraph, { id: -1, type: subgraph.id, pos: [0, 0], size: [200, 60], inputs: [], outputs: [], flags: {}, order: 0, mode: 0, properties: {} });
    }
  }
  LiteGraph.registerNodeType(subgraph.id, ComfySubgraphNode);
  ComfySubgraphNode.category = 'subgraphs';
});
// Inside a subgraph, the top bar offers the way back.
canvasEl.addEventListener('litegraph:set-graph', () => {
  $('#root-graph').hidden = canvas.graph === graph;
  document.body.dataset.insideSubgraph = String(canvas.graph !== graph);
});
$('#root-graph').addEventListener('click', () => canvas.setGraph(graph));

const state = { path: null, modified: false, loading: false };
const history = new History(graph, (data) => loadInto(data, { keepView: true }), () => markModified());

function showName() {
  const name = state.path ? state.path.replace(/\.json$/, '') : 'Unsaved Workflow';
  $('#workflow-name').textContent = `${name}${state.modified ? ' *' : ''}`;
  document.title = `${state.modified ? '*' : ''}${name} — Workflow service`;
}

let persistTimer = null;
function persistNow() {
  clearTimeout(persistTimer);
  persistTimer = null;
  try {
    localStorage.setItem(STORE_KEY, JSON.stringify({ path: state.path, modified: state.modified, workflow: withView(serializeWorkflow(graph)) }));
  } catch {
    // Storage full or refused: the page still works, it just starts from a template next time.
  }
}
/** Keeps the open workflow for the next visit (debounced; written at once when the page is left). */
function persist() {
  clearTimeout(persistTimer);
  persistTimer = setTimeout(persistNow, 300);
}
window.addEventListener('pagehide', () => persistNow());

function markModified() {
  if (state.loading) return;
  state.modified = true;
  showName();
  persist();
}

function withView(workflow) {
  workflow.extra ??= {};
  workflow.extra.ds = { scale: canvas.ds.scale, offset: [canvas.ds.offset[0], canvas.ds.offset[1]] };
  return workflow;
}

/** Zooms and pans so every node is in view (at most 1:1). */
function fitView() {
  if (!graph.nodes.length) return;
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const n of graph.nodes) {
    const [x, y, w, h] = n.boundingRect;
    x0 = Math.min(x0, x);
    y0 = Math.min(y0, y);
    x1 = Math.max(x1, x + w);
    y1 = Math.max(y1, y + h);
  }
  const pad = 40;
  const width = canvasEl.clientWidth;
  const height = canvasEl.clientHeight;
  if (!width || !height) return;
  const scale = Math.min(1, (width - 2 * pad) / (x1 - x0), (height - 2 * pad) / (y1 - y0));
  canvas.ds.scale = Math.max(0.1, scale);
  canvas.ds.offset[0] = (width / canvas.ds.scale - (x1 - x0)) / 2 - x0;
  canvas.ds.offset[1] = (height / canvas.ds.scale - (y1 - y0)) / 2 - y0;
  canvas.setDirty(true, true);
}

/** Loads a UI workflow; missing node types are reported. */
function loadInto(data, { keepView = false } = {}) {
  if (canvas.graph !== graph) canvas.setGraph(graph);
  state.loading = true;
  try {
    const view = { scale: canvas.ds.scale, offset: [...canvas.ds.offset] };
    const missing = loadWorkflow(graph, data);
    const ds = data.extra?.ds;
    if (keepView) Object.assign(canvas.ds, { scale: view.scale }), canvas.ds.offset.splice(0, 2, ...view.offset);
    else if (ds && Array.isArray(ds.offset) && typeof ds.scale === 'number') {
      canvas.ds.scale = ds.scale;
      canvas.ds.offset[0] = ds.offset[0];
      canvas.ds.offset[1] = ds.offset[1];
    } else requestAnimationFrame(fitView);
    canvas.setDirty(true, true);
    return missing;
  } finally {
    state.loading = false;
  }
}

function reportMissing(missing) {
  if (!missing.length) return;
  $('#prompt-errors-title').textContent = 'This server has no node of these types (they are shown as placeholders and will not run):';
  $('#prompt-errors-list').replaceChildren(...missing.map((t) => el('li', { text: t })));
  $('#prompt-errors').hidden = false;
}

/** Opens a workflow of any kind the page reads; `path` names it when it came from workflows/. A file the library cannot load leaves the graph as it was. */
function open(kind, data, path = null) {
  clearErrors(graph);
  const before = history.current;
  let missing;
  try {
    if (kind === 'api') {
      state.loading = true;
      try {
        missing = loadApiPrompt(graph, data);
      } finally {
        state.loading = false;
      }
      requestAnimationFrame(fitView);
    } else missing = loadInto(data);
  } catch (err) {
    loadInto(JSON.parse(before), { keepView: true });
    throw new Error(`This workflow could not be loaded: ${err?.message ?? err}`);
  }
  state.path = path;
  state.modified = false;
  history.reset();
  showName();
  persist();
  reportMissing(missing);
}

// ---------------------------------------------------------------- canvas size

function resizeCanvas() {
  const scale = Math.max(window.devicePixelRatio, 1);
  const { width, height } = canvasEl.getBoundingClientRect();
  canvasEl.width = Math.round(width * scale);
  canvasEl.height = Math.round(height * scale);
  canvasEl.getContext('2d').scale(scale, scale);
  canvas.draw(true, true);
}
new ResizeObserver(resizeCanvas).observe($('#canvas-wrap'));

// ---------------------------------------------------------------- dialogs

/** A small modal asking for a text; resolves to it, or null when cancelled. */
function ask(label, value = '') {
  const dialog = $('#ask-dialog');
  $('#ask-label').textContent = label;
  const input = $('#ask-input');
  input.value = value;
  dialog.showModal();
  input.select();
  return new Promise((resolve) => {
    dialog.onclose = () => resolve(dialog.returnValue === 'ok' ? input.value : null);
  });
}

function confirmDialog(text) {
  const dialog = $('#confirm-dialog');
  $('#confirm-text').textContent = text;
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.onclose = () => resolve(dialog.returnValue === 'ok');
  });
}

// ---------------------------------------------------------------- workflows

async function save(saveAs = false) {
  let path = state.path;
  if (!path || saveAs) {
    const name = settings['Comfy.PromptFilename'] === false && !saveAs ? 'Unsaved Workflow' : await ask('Save workflow as', (state.path ?? 'Unsaved Workflow.json').replace(/\.json$/, ''));
    if (name === null) return false;
    path = workflowPath(name);
    if (!path) {
      toast('A workflow name cannot be empty or contain "." or ".." folders.', 'error');
      return false;
    }
  }
  const workflow = withView(serializeWorkflow(graph));
  try {
    try {
      await saveUserWorkflow(path, workflow, path === state.path);
    } catch (err) {
      if (!/exists already/.test(err.message)) throw err;
      if (!(await confirmDialog(`${path} exists already. Overwrite it?`))) return false;
      await saveUserWorkflow(path, workflow, true);
    }
  } catch (err) {
    toast(err.message, 'error');
    return false;
  }
  state.path = path;
  state.modified = false;
  showName();
  persistNow();
  toast(`Saved workflows/${path}`);
  if (document.body.dataset.tab === 'workflows') refreshWorkflows();
  return true;
}

async function refreshWorkflows() {
  let files;
  try {
    files = await listWorkflows();
  } catch (err) {
    return toast(`Could not list workflows: ${err.message}`, 'error');
  }
  $('#workflows-list').replaceChildren(
    ...(files.length
      ? files.map((f) =>
          el(
            'li',
            { 'data-path': f.path, class: f.path === state.path ? 'current' : '' },
            el('button', { type: 'button', class: 'link open', text: f.path.replace(/\.json$/, ''), onclick: () => openSaved(f.path) }),
            el('button', {
              type: 'button',
              class: 'small danger delete',
              text: 'Delete',
              onclick: async () => {
                if (!(await confirmDialog(`Delete workflows/${f.path}?`))) return;
                try {
                  await deleteUserWorkflow(f.path);
                } catch (err) {
                  return toast(err.message, 'error');
                }
                if (state.path === f.path) {
                  state.path = null;
                  state.modified = true;
                  showName();
                }
                refreshWorkflows();
              },
            }),
          ),
        )
      : [el('li', { class: 'muted', text: 'No saved workflows yet. Ctrl+S saves this one.' })]),
  );
}

async function openSaved(path) {
  try {
    const data = await readUserWorkflow(path);
    const kind = kindOf(data);
    if (!kind) throw new Error(`${path} is not a workflow`);
    open(kind, data, kind === 'workflow' ? path : null);
    toast(`Opened ${path}`);
  } catch (err) {
    toast(err.message, 'error');
  }
}

async function openFile(file, at) {
  try {
    const { kind, data } = await readWorkflowFile(file);
    open(kind, data);
    toast(`Opened ${file.name}`);
  } catch (err) {
    // An image without a workflow becomes a Load Image node of that image, as in the reference.
    if (err.noWorkflow && file.type.startsWith('image/')) {
      const node = LiteGraph.createNode('LoadImage');
      if (node) {
        node.pos = at ?? canvas.convertOffsetToCanvas([canvasEl.clientWidth / 2, canvasEl.clientHeight / 2]);
        graph.add(node);
        const combo = node.widgets.find((w) => w.name === 'image');
        await setUploadedFile(node, combo, file);
        history.check();
        return;
      }
    }
    toast(err.message, 'error');
  }
}

function openJob(detail) {
  const w = detail?.workflow?.extra_data?.extra_pnginfo?.workflow;
  try {
    if (kindOf(w) === 'workflow' && w.nodes.length) open('workflow', w);
    else if (kindOf(detail?.workflow?.prompt) === 'api') open('api', detail.workflow.prompt);
    else toast('This job has no workflow to open.', 'error');
  } catch (err) {
    toast(err.message, 'error');
  }
}

function newWorkflow() {
  open('workflow', { version: 0.4, nodes: [], links: [], groups: [], config: {}, extra: {} });
}

// ---------------------------------------------------------------- node library

async function loadDefs() {
  const r = await api('/object_info');
  if (!r.ok) throw new Error(`Could not load the node definitions: ${errorText(r)}`);
  registerNodeDefs(r.body);
  invalidateSearchIndex();
  return r.body;
}

/** Fetches the definitions again (new files in the model and image lists) and updates the COMBOs on the canvas. */
async function refreshDefs() {
  try {
    await loadDefs();
  } catch (err) {
    return toast(err.message, 'error');
  }
  for (const node of graph.nodes) {
    const def = defs.get(node.type);
    if (!def) continue;
    for (const w of node.widgets ?? []) {
      if (w.type !== 'combo' || w.name === 'control_after_generate') continue;
      const fresh = new (LiteGraph.registered_node_types[node.type])().widgets?.find((x) => x.name === w.name);
      if (fresh) w.options.values = fresh.options.values;
    }
  }
  renderLibrary(addNodeAtCentre);
  canvas.setDirty(true, true);
  toast('Node definitions refreshed');
}

function addNodeAtCentre(type) {
  const node = LiteGraph.createNode(type);
  if (!node) return;
  const c = canvas.convertOffsetToCanvas([canvasEl.clientWidth / 2, canvasEl.clientHeight / 2]);
  node.pos = [c[0] - node.size[0] / 2, c[1] - node.size[1] / 2];
  graph.add(node);
  canvas.selectNode(node);
  history.check();
}

// ---------------------------------------------------------------- commands

function batchCount() {
  const n = Math.floor(Number($('#batch-count').value));
  return Number.isFinite(n) && n >= 1 ? Math.min(n, 100) : 1;
}

async function queue(front = false) {
  const ids = await queueGraph(graph, { front, count: batchCount(), controlMode: settings['Comfy.WidgetControlMode'] ?? 'after' });
  history.check();
  if (ids.length) scheduleRefresh();
}

function toggleMode(mode) {
  const nodes = [...canvas.selectedItems].filter((x) => graph.nodes.includes(x));
  if (!nodes.length) return;
  const all = nodes.every((n) => n.mode === mode);
  for (const n of nodes) n.mode = all ? 0 : mode;
  canvas.setDirty(true, true);
  history.check();
}

function groupSelected() {
  const items = [...canvas.selectedItems];
  if (!items.length) return;
  const group = new LGraphGroup('Group');
  group.resizeTo(items, 10);
  graph.add(group);
  canvas.setDirty(true, true);
  history.check();
}

function collapseSelected() {
  for (const n of canvas.selectedItems) if (graph.nodes.includes(n)) n.collapse();
  canvas.setDirty(true, true);
  history.check();
}

const COMMANDS = {
  queue: () => queue(false),
  'queue-front': () => queue(true),
  interrupt: () => interrupt(),
  'clear-queue': () => clearQueue().then(scheduleRefresh),
  new: () => newWorkflow(),
  save: () => save(false),
  'save-as': () => save(true),
  open: () => $('#file-input').click(),
  export: () => download(`${(state.path ?? 'workflow').replace(/\.json$/, '')}.json`, JSON.stringify(serializeWorkflow(graph), null, 2)),
  'export-api': async () => download(`${(state.path ?? 'workflow').replace(/\.json$/, '')}_api.json`, JSON.stringify((await graphToPrompt(graph)).output, null, 2)),
  undo: () => history.undo(),
  redo: () => history.redo(),
  refresh: () => refreshDefs(),
  fit: () => fitView(),
  search: () => openSearch(canvas, null, {}),
};

for (const b of document.querySelectorAll('[data-command]')) {
  b.addEventListener('click', () => {
    $('#menu').open = false;
    COMMANDS[b.dataset.command]?.();
  });
}

function inField(e) {
  const t = e.target;
  return t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName));
}

document.addEventListener('keydown', (e) => {
  const ctrl = e.ctrlKey || e.metaKey;
  if (ctrl && e.key === 'Enter') {
    e.preventDefault();
    queue(e.shiftKey);
    return;
  }
  if (document.querySelector('dialog[open]')) return;
  if (ctrl && e.key.toLowerCase() === 's') {
    e.preventDefault();
    save(e.shiftKey);
  } else if (ctrl && e.key.toLowerCase() === 'o') {
    e.preventDefault();
    COMMANDS.open();
  } else if (inField(e)) return;
  else if (ctrl && !e.shiftKey && e.key.toLowerCase() === 'z') {
    e.preventDefault();
    history.undo();
  } else if (ctrl && (e.key.toLowerCase() === 'y' || (e.shiftKey && e.key.toLowerCase() === 'z'))) {
    e.preventDefault();
    history.redo();
  } else if (ctrl && e.key.toLowerCase() === 'm') {
    e.preventDefault();
    toggleMode(2);
  } else if (ctrl && e.key.toLowerCase() === 'b') {
    e.preventDefault();
    toggleMode(4);
  } else if (ctrl && e.key.toLowerCase() === 'g') {
    e.preventDefault();
    groupSelected();
  } else if (e.altKey && e.key.toLowerCase() === 'c') {
    e.preventDefault();
    collapseSelected();
  } else if (!ctrl && !e.altKey && e.key === '.') {
    fitView();
  } else if (!ctrl && !e.altKey && e.key.toLowerCase() === 'r') {
    refreshDefs();
  } else if (e.target === document.body && !ctrl) {
    // Keys typed with nothing focused go to the canvas (delete, copy, paste).
    canvas.processKey(e);
  }
});
document.addEventListener('keyup', (e) => {
  if (!inField(e)) history.check();
});
// Text typed on a node is one undo step, recorded when the text area is left.
document.addEventListener('focusout', (e) => {
  if (e.target instanceof HTMLElement && e.target.classList.contains('comfy-multiline-input')) history.check();
});
canvasEl.addEventListener('pointerdown', () => canvasEl.focus());
window.addEventListener('pointerup', () => history.check());

// Workflow files and images dropped anywhere on the page.
document.addEventListener('dragover', (e) => e.preventDefault());
document.addEventListener('drop', (e) => {
  e.preventDefault();
  const file = e.dataTransfer?.files?.[0];
  if (file) openFile(file, canvas.convertEventToCanvasOffset(e));
});
$('#file-input').addEventListener('change', (e) => {
  const file = e.target.files?.[0];
  e.target.value = '';
  if (file) openFile(file);
});

// ---------------------------------------------------------------- panels

let refreshTimer = null;
function scheduleRefresh() {
  if (refreshTimer) return;
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    refreshQueue({ onOpenJob: openJob, maxHistory: settings['Comfy.Queue.MaxHistoryItems'] ?? 64 })
      .then((entries) => {
        if (document.body.dataset.tab === 'gallery') renderGallery(entries);
      })
      .catch(() => {});
  }, 80);
}
exec.onStatus = (remaining) => {
  if (typeof remaining === 'number') $('#queue-remaining').textContent = String(remaining);
  scheduleRefresh();
};
exec.onFinished = scheduleRefresh;

for (const b of document.querySelectorAll('#sidebar-tabs button')) {
  b.addEventListener('click', () =>
    toggleTab(b.dataset.tab, (name) => {
      if (name === 'queue' || name === 'gallery') scheduleRefresh();
      if (name === 'workflows') refreshWorkflows();
      if (name === 'library') $('#library-filter').focus();
    }),
  );
}
$('#library-filter').addEventListener('input', () => renderLibrary(addNodeAtCentre));
$('#prompt-errors-close').addEventListener('click', () => ($('#prompt-errors').hidden = true));
$('#exec-error-close').addEventListener('click', () => ($('#exec-error').hidden = true));
$('#toast').addEventListener('click', () => ($('#toast').hidden = true));

function applySetting(id, v) {
  if (id === 'Comfy.LinkRenderMode') canvas.links_render_mode = Number(v);
  if (id === 'Comfy.Graph.CanvasInfo') canvas.show_info = !!v;
  if (id === 'Comfy.SnapToGrid.GridSize') LiteGraph.CANVAS_GRID_SIZE = Number(v) || 10;
  if (id === 'Comfy.Queue.MaxHistoryItems') scheduleRefresh();
  // The reference frontend's pointer settings, for hands (and machines) slower than the graph library's defaults.
  if (id === 'Comfy.Pointer.DoubleClickTime') CanvasPointer.doubleClickTime = Number(v) || 300;
  if (id === 'Comfy.Pointer.ClickBufferTime') CanvasPointer.bufferTime = Number(v) || 0;
  if (id === 'Comfy.Pointer.ClickDrift') CanvasPointer.maxClickDrift = Number(v) || 0;
  canvas.setDirty(true, true);
}

// ---------------------------------------------------------------- start

async function start() {
  // Hosted runtime: signed in, in a workspace, before anything is loaded; --multi-user: a user chosen.
  if (runtime === 'cloud') await signIn();
  else await chooseUser();
  const [, , stored] = await Promise.all([loadDefs(), loadSettings(), Promise.resolve(localStorage.getItem(STORE_KEY))]);
  for (const [id, v] of Object.entries(settings)) applySetting(id, v);
  renderLibrary(addNodeAtCentre);
  renderTemplates((t) => {
    open('api', t.prompt);
    showTab(null);
  });
  renderSettings(applySetting);
  let restored = false;
  if (stored) {
    try {
      const s = JSON.parse(stored);
      if (kindOf(s.workflow) === 'workflow') {
        reportMissing(loadInto(s.workflow));
        state.path = typeof s.path === 'string' ? s.path : null;
        state.modified = !!s.modified;
        restored = true;
      }
    } catch {
      // A broken stored state starts the page from a template.
    }
  }
  if (!restored) {
    // First start: the first template, and the templates panel to pick another.
    showTab('templates');
    open('api', TEMPLATES[0].prompt);
  }
  history.reset();
  showName();
  connect(graph, canvas, { onOpen: scheduleRefresh });
  document.body.dataset.ready = 'true';
  // Navigation start to a usable graph (definitions registered, workflow on the canvas).
  document.body.dataset.readyMs = String(Math.round(performance.now()));
}

/** For tests and the console: where a point of the graph is on the screen. */
function toScreen([x, y]) {
  const r = canvasEl.getBoundingClientRect();
  return { x: r.left + (x + canvas.ds.offset[0]) * canvas.ds.scale, y: r.top + (y + canvas.ds.offset[1]) * canvas.ds.scale };
}

/** For tests and the console: adds a node of a type at a point of the graph. */
function addNode(type, pos = [0, 0]) {
  const node = LiteGraph.createNode(type);
  if (!node) throw new Error(`no node type ${type}`);
  node.pos = [pos[0], pos[1]];
  graph.add(node);
  return node;
}

window.wfPage = { graph, canvas, history, state, graphToPrompt, settings, open, toScreen, addNode, LiteGraph, CanvasPointer };

start().catch((err) => {
  toast(err.message, 'error');
  document.body.dataset.ready = 'error';
});
