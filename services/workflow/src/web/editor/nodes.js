// Node types from /object_info registered with the graph library: one class
// per node definition, with an input socket per linked input, a widget (and
// a widget socket) per INT/FLOAT/STRING/BOOLEAN/COMBO input, the outputs, and
// the reference frontend's extras (control_after_generate, image upload and
// preview). Plus the frontend-only nodes the reference's workflows contain:
// Reroute, Note, MarkdownNote and PrimitiveNode.
import { LGraphCanvas, LGraphNode, LiteGraph } from '@comfyorg/litegraph';
import { addControlWidget } from './controls.js';
import { addImageUpload, drawNodeImages } from './images.js';
import { addTextareaWidget } from './textarea.js';

const noop = () => {};

export const WIDGET_TYPES = new Set(['INT', 'FLOAT', 'STRING', 'BOOLEAN', 'COMBO']);

/** While a workflow is configured, links point at slots that are not rebuilt yet: nodes wait for onAfterGraphConfigured. */
export const loading = { configuring: false };

/** Node definitions by class name, as /object_info answered them. */
export const defs = new Map();

/** The reference frontend's dark palette for link and slot types. */
const TYPE_COLOURS = {
  CLIP: '#FFD500',
  CLIP_VISION: '#A8DADC',
  CLIP_VISION_OUTPUT: '#ad7452',
  CONDITIONING: '#FFA931',
  CONTROL_NET: '#6EE7B7',
  IMAGE: '#64B5F6',
  LATENT: '#FF9CF9',
  MASK: '#81C784',
  MODEL: '#B39DDB',
  STYLE_MODEL: '#C2FFAE',
  VAE: '#FF6E6E',
  NOISE: '#B0B0B0',
  GUIDER: '#66FFFF',
  SAMPLER: '#ECB4B4',
  SIGMAS: '#CDFFCD',
  TAESD: '#DCC274',
  INT: '#7cb3e0',
  FLOAT: '#9ccc65',
  STRING: '#e0c872',
  BOOLEAN: '#e57373',
  COMBO: '#a1887f',
};

export function applyTypeColours(canvas) {
  Object.assign(LGraphCanvas.link_type_colors, TYPE_COLOURS);
  Object.assign(canvas.default_connection_color_byType, TYPE_COLOURS);
}

/** [type, options] of an input spec; COMBO given as a list becomes ("COMBO", {options}). */
export function specOf(raw) {
  if (!Array.isArray(raw)) return null;
  const [t, opts = {}] = raw;
  if (Array.isArray(t)) return { type: 'COMBO', options: { ...opts, options: t } };
  if (typeof t !== 'string') return null;
  return { type: t, options: opts && typeof opts === 'object' ? opts : {} };
}

/** Inputs in the server's order: input_order when given, else the keys' order; required before optional. */
export function inputsOf(def) {
  const out = [];
  for (const group of ['required', 'optional']) {
    const specs = def.input?.[group] ?? {};
    const order = Array.isArray(def.input_order?.[group]) ? def.input_order[group] : Object.keys(specs);
    for (const name of order) {
      const spec = specOf(specs[name]);
      if (spec) out.push({ name, optional: group === 'optional', ...spec });
    }
  }
  return out;
}

function decimals(x) {
  if (!Number.isFinite(x) || x <= 0) return 0;
  return Math.max(0, Math.min(10, -Math.floor(Math.log10(x) + 1e-9)));
}

/** Adds the widget of one input (and answers it), or null when the input is a link only. */
function addInputWidget(node, input) {
  const o = input.options;
  if (o.forceInput || !WIDGET_TYPES.has(input.type)) return null;
  switch (input.type) {
    case 'INT': {
      const step = typeof o.step === 'number' && o.step > 0 ? o.step : 1;
      const min = typeof o.min === 'number' ? o.min : -Number.MAX_SAFE_INTEGER;
      const max = typeof o.max === 'number' ? o.max : Number.MAX_SAFE_INTEGER;
      const value = typeof o.default === 'number' ? o.default : Math.max(min, Math.min(max, 0));
      const w = node.addWidget('number', input.name, value, noop, { min, max, step: step * 10, step2: step, precision: 0, round: 1 });
      const clampInt = (v) => Math.max(min, Math.min(max, Math.round(Number(v) || 0)));
      w.callback = (v) => {
        w.value = clampInt(v);
      };
      return w;
    }
    case 'FLOAT': {
      const step = typeof o.step === 'number' && o.step > 0 ? o.step : 0.1;
      const round = typeof o.round === 'number' && o.round > 0 ? o.round : undefined;
      const precision = decimals(round ?? step);
      const min = typeof o.min === 'number' ? o.min : -Infinity;
      const max = typeof o.max === 'number' ? o.max : Infinity;
      const w = node.addWidget('number', input.name, typeof o.default === 'number' ? o.default : 0, noop, { min, max, step: step * 10, step2: step, precision, round: round ?? 10 ** -precision });
      w.callback = (v) => {
        let n = Number(v);
        if (!Number.isFinite(n)) n = 0;
        const r = round ?? 10 ** -precision;
        n = Math.round(n / r) * r;
        w.value = Math.max(min, Math.min(max, Number(n.toFixed(precision))));
      };
      return w;
    }
    case 'STRING':
      // Multiline text is typed on the node itself, as in the reference frontend.
      if (o.multiline) return addTextareaWidget(node, input.name, typeof o.default === 'string' ? o.default : '', { placeholder: o.placeholder });
      return node.addWidget('text', input.name, typeof o.default === 'string' ? o.default : '', noop, { multiline: false, placeholder: o.placeholder });
    case 'BOOLEAN':
      return node.addWidget('toggle', input.name, typeof o.default === 'boolean' ? o.default : false, noop, { on: o.label_on ?? 'true', off: o.label_off ?? 'false' });
    case 'COMBO': {
      const values = Array.isArray(o.options) ? o.options.map((v) => (typeof v === 'object' && v !== null ? String(v.value ?? v.name ?? '') : v)) : [];
      const value = o.default !== undefined && values.includes(o.default) ? o.default : (values[0] ?? '');
      const w = node.addWidget('combo', input.name, value, noop, { values });
      if (o.image_upload || o.video_upload || o.audio_upload) addImageUpload(node, w, o);
      return w;
    }
  }
  return null;
}

/** The frontend's rule: INT inputs marked control_after_generate, and legacy seeds, get a control widget. */
function wantsControl(input) {
  const c = input.options.control_after_generate;
  if (c !== undefined) return !!c;
  return input.type === 'INT' && (input.name === 'seed' || input.name === 'noise_seed');
}

/** A graph node of one class from /object_info. */
export function nodeClassOf(def) {
  const inputs = inputsOf(def);
  class ComfyNode extends LGraphNode {
    static title = def.display_name || def.name;
    static comfyClass = def.name;
    static nodeData = def;
    constructor(title) {
      super(title ?? ComfyNode.title);
      this.comfyClass = def.name;
      this.serialize_widgets = true;
      this.isOutputNode = !!def.output_node;
      for (const input of inputs) {
        const w = addInputWidget(this, input);
        if (w) {
          // Every widget has a socket, so a link (a primitive, another node's output) can replace its value.
          this.addInput(input.name, input.type, { widget: { name: input.name } });
          if (wantsControl(input)) addControlWidget(this, w, input.options.control_after_generate === 'fixed' ? 'fixed' : 'randomize');
        } else {
          this.addInput(input.name, input.type, input.optional ? { shape: LiteGraph.CARD_SHAPE } : {});
        }
      }
      const outs = Array.isArray(def.output) ? def.output : [];
      outs.forEach((t, i) => {
        const type = Array.isArray(t) ? 'COMBO' : String(t);
        const name = def.output_name?.[i] ?? type;
        this.addOutput(name, type, def.output_is_list?.[i] ? { shape: LiteGraph.GRID_SHAPE } : {});
      });
      const size = this.computeSize();
      this.setSize([Math.max(size[0], 220), size[1]]);
    }
    onDrawBackground(ctx) {
      drawNodeImages(this, ctx);
    }
    /**
     * Widget sockets a saved workflow left out (the reference drops unconnected ones) come back in the class's order.
     * Saved values are kept as saved, as the reference's frontend keeps them: numbers are not rounded to the widget's
     * step or clamped (a saved denoise of 0.8700000000000001 is sent so), and a button (Load Image's upload) is not
     * pressed. The other widgets' callbacks run (an image COMBO shows its preview).
     */
    onConfigure(info) {
      restoreWidgetSockets(this);
      for (const w of this.widgets ?? []) if (w.type !== 'number' && w.type !== 'button') w.callback?.(w.value);
    }
  }
  return ComfyNode;
}

/** Rebuilds node.inputs as the class declares them, keeping links (matched by name) and moving them to the new slot indexes. */
export function restoreWidgetSockets(node) {
  const cls = LiteGraph.registered_node_types[node.type];
  if (!cls?.nodeData) return;
  const declared = inputsOf(cls.nodeData).map((i) => ({ name: i.name, type: i.type, widget: !i.options.forceInput && WIDGET_TYPES.has(i.type), optional: i.optional }));
  const key = (slot) => slot.widget?.name ?? slot.name;
  const current = node.inputs ?? [];
  if (current.length === declared.length && current.every((s, i) => key(s) === declared[i].name && !!s.widget === declared[i].widget)) return;
  // The library copies saved inputs over the class's by index, so a name can appear twice: the linked one wins.
  const old = new Map();
  for (const s of current) if (!old.has(key(s)) || (old.get(key(s)).link == null && s.link != null)) old.set(key(s), s);
  node.inputs = [];
  for (const d of declared) {
    const prev = old.get(d.name);
    old.delete(d.name);
    const extra = d.widget ? { widget: { name: d.name } } : d.optional ? { shape: LiteGraph.CARD_SHAPE } : {};
    const slot = node.addInput(d.name, d.type, extra);
    if (prev) {
      slot.link = prev.link ?? null;
      if (prev.label) slot.label = prev.label;
    }
  }
  // Inputs this server does not declare (another version of the node) stay, so their links are not lost.
  for (const prev of old.values()) {
    const slot = node.addInput(prev.name, prev.type, prev.widget ? { widget: prev.widget } : {});
    slot.link = prev.link ?? null;
  }
  node.inputs.forEach((slot, i) => {
    if (slot.link == null || !node.graph) return;
    const link = node.graph.links.get(slot.link);
    if (link) link.target_slot = i;
  });
}

/** Registers every node definition; answers how many. Called again after a refresh (new choices in COMBOs). */
export function registerNodeDefs(objectInfo) {
  defs.clear();
  for (const [name, def] of Object.entries(objectInfo)) {
    // Names that would reach the prototype of the library's registry object are not node types.
    if (!def || typeof def !== 'object' || name === '__proto__' || name === 'constructor' || name === 'prototype') continue;
    def.name ??= name;
    defs.set(name, def);
    const cls = nodeClassOf(def);
    LiteGraph.registerNodeType(name, cls);
    cls.category = typeof def.category === 'string' ? def.category : '';
  }
  registerFrontendNodes();
  return defs.size;
}

/** Nodes the reference's frontend adds itself: never sent to the server. */
function registerFrontendNodes() {
  class Reroute extends LGraphNode {
    static title = 'Reroute';
    constructor(title) {
      super(title ?? 'Reroute');
      this.isVirtualNode = true;
      this.collapsable = false;
      this.addInput('', '*');
      this.addOutput('', '*');
      this.size = [75, 26];
      this.properties = { showOutputText: false, horizontal: false };
    }
    /** Takes the type of what feeds it, so its output links are typed. */
    onConnectionsChange() {
      const link = this.inputs[0].link != null ? this.graph?.links.get(this.inputs[0].link) : null;
      const origin = link ? this.graph.getNodeById(link.origin_id) : null;
      const type = origin?.outputs?.[link.origin_slot]?.type ?? '*';
      this.outputs[0].type = type;
      this.inputs[0].type = '*';
      this.outputs[0].color_on = this.outputs[0].color_off = LGraphCanvas.link_type_colors[type];
    }
  }
  Reroute.collapsable = false;
  Reroute.title_mode = LiteGraph.NO_TITLE;
  LiteGraph.registerNodeType('Reroute', Reroute);
  Reroute.category = 'utils';

  for (const type of ['Note', 'MarkdownNote']) {
    class Note extends LGraphNode {
      static title = type === 'Note' ? 'Note' : 'Markdown Note';
      constructor(title) {
        super(title ?? Note.title);
        this.isVirtualNode = true;
        this.serialize_widgets = true;
        this.color = '#432';
        this.bgcolor = '#653';
        addTextareaWidget(this, 'text', '', { placeholder: type === 'Note' ? 'A note (not sent to the server)' : 'Markdown (not sent to the server)' });
        this.size = [320, 120];
      }
    }
    LiteGraph.registerNodeType(type, Note);
    Note.category = 'utils';
  }

  /** A value shared by the widgets it is linked to: its output takes the first target's widget type. */
  class PrimitiveNode extends LGraphNode {
    static title = 'Primitive';
    constructor(title) {
      super(title ?? 'Primitive');
      this.isVirtualNode = true;
      this.serialize_widgets = true;
      this.addOutput('connect to widget input', '*');
      this.properties = { 'Run widget replace on values': false };
    }
    onConnectionsChange() {
      if (!loading.configuring) this.#adopt();
    }
    onAfterGraphConfigured() {
      this.#adopt();
    }
    #target() {
      for (const id of this.outputs[0].links ?? []) {
        const link = this.graph?.links.get(id);
        const node = link && this.graph.getNodeById(link.target_id);
        const input = node?.inputs?.[link.target_slot];
        const widget = input?.widget && node.widgets?.find((w) => w.name === input.widget.name);
        if (widget) return { node, input, widget };
      }
      return null;
    }
    #adopt() {
      const t = this.#target();
      if (!t || this.widgets?.length) return;
      const kept = this.widgets_values;
      this.outputs[0].type = t.input.type;
      this.outputs[0].name = t.input.type;
      this.outputs[0].widget = { name: t.input.widget.name };
      const value = kept?.[0] ?? t.widget.value;
      const w = t.widget.type === 'customtext' ? addTextareaWidget(this, 'value', value) : this.addWidget(t.widget.type, 'value', value, noop, { ...t.widget.options });
      if (t.node.widgets?.some((x) => x.name === 'control_after_generate' && x.linkedWidgets?.[0] === t.widget)) addControlWidget(this, w, kept?.[1] ?? 'fixed');
      this.setSize(this.computeSize());
    }
    onConfigure(info) {
      this.widgets_values = info.widgets_values;
    }
    /** The frontend copies the value into each target's widget before the prompt is built. */
    applyToGraph() {
      const w = this.widgets?.[0];
      if (!w) return;
      for (const id of this.outputs[0].links ?? []) {
        const link = this.graph?.links.get(id);
        const node = link && this.graph.getNodeById(link.target_id);
        const input = node?.inputs?.[link.target_slot];
        const target = input?.widget && node.widgets?.find((x) => x.name === input.widget.name);
        if (target) target.value = w.value;
      }
    }
  }
  LiteGraph.registerNodeType('PrimitiveNode', PrimitiveNode);
  PrimitiveNode.category = 'utils';
}
