// The node search box: opened by a double-click on the canvas, by releasing a
// link on empty space (then only nodes that take or give that type), or by
// the sidebar. Fuzzy match over the display name, class name, aliases,
// category and input/output types; `in:TYPE` / `out:TYPE` filter by type.
import { LiteGraph } from '@comfyorg/litegraph';
import { $, el } from './dom.js';
import { defs, inputsOf, WIDGET_TYPES } from './nodes.js';

const FRONTEND_NODES = [
  { name: 'Reroute', display: 'Reroute', category: 'utils', ins: ['*'], outs: ['*'], aliases: [] },
  { name: 'Note', display: 'Note', category: 'utils', ins: [], outs: [], aliases: ['comment'] },
  { name: 'MarkdownNote', display: 'Markdown Note', category: 'utils', ins: [], outs: [], aliases: ['comment'] },
  { name: 'PrimitiveNode', display: 'Primitive', category: 'utils', ins: [], outs: ['*'], aliases: ['value'] },
];

let index = null;
export function invalidateSearchIndex() {
  index = null;
}

function buildIndex() {
  const items = [];
  for (const [name, def] of defs) {
    if (def.deprecated || def.dev_only) continue;
    const ins = inputsOf(def).map((i) => i.type);
    const outs = (def.output ?? []).map((t) => (Array.isArray(t) ? 'COMBO' : String(t)));
    items.push({ name, display: def.display_name || name, category: def.category ?? '', ins, outs, aliases: Array.isArray(def.search_aliases) ? def.search_aliases.map(String) : [], description: def.description ?? '' });
  }
  items.push(...FRONTEND_NODES);
  return items;
}

/** Positions where a word starts: the beginning, after a separator, a lower-to-upper case change. */
function wordStarts(text) {
  const starts = new Set([0]);
  for (let i = 1; i < text.length; i++) {
    if (/[\s_/\-.:]/.test(text[i - 1]) || (/[a-z0-9]/.test(text[i - 1]) && /[A-Z]/.test(text[i]))) starts.add(i);
  }
  return starts;
}

/** Subsequence match: higher for contiguous runs and word starts; 0 when the letters are not all there in order. */
export function fuzzy(query, text) {
  const q = query.toLowerCase();
  const t = text.toLowerCase();
  if (!q) return 1;
  const starts = wordStarts(text);
  const at = t.indexOf(q);
  if (at === 0) return 100 + q.length;
  if (at > 0) {
    // Prefer an occurrence at a word start anywhere in the text.
    for (let i = at; i >= 0; i = t.indexOf(q, i + 1)) if (starts.has(i)) return 80 + q.length;
    return 60 + q.length;
  }
  let score = 0;
  let ti = 0;
  let run = 0;
  for (const ch of q) {
    const found = t.indexOf(ch, ti);
    if (found < 0) return 0;
    run = found === ti ? run + 1 : 0;
    score += 1 + run + (starts.has(found) ? 2 : 0);
    ti = found + 1;
  }
  return Math.min(50, score);
}

const squash = (s) => s.toLowerCase().replace(/[\s_\-]+/g, '');

function accepts(types, want) {
  if (!want || want === '*') return true;
  const wanted = String(want).split(',');
  return types.some((t) => t === '*' || String(t).split(',').some((x) => wanted.includes(x)));
}

/** Ranked matches for a query; filter: {input?: type the node must take, output?: type it must give}. */
export function searchNodes(query, filter = {}, limit = 60) {
  index ??= buildIndex();
  let text = query.trim();
  let input = filter.input;
  let output = filter.output;
  text = text.replace(/\b(in|input):(\S+)/gi, (_, __, t) => ((input = t.toUpperCase()), '')).replace(/\b(out|output):(\S+)/gi, (_, __, t) => ((output = t.toUpperCase()), ''));
  const words = text.split(/\s+/).filter(Boolean);
  const out = [];
  for (const item of index) {
    if (input && !accepts(item.ins, input)) continue;
    if (output && !accepts(item.outs, output)) continue;
    let total = 0;
    let ok = true;
    for (const w of words) {
      const best = Math.max(
        fuzzy(w, item.display) * 1.2,
        fuzzy(w, item.name),
        ...item.aliases.map((a) => fuzzy(w, a) * 0.9),
        fuzzy(w, item.category) * 0.6,
        ...[...item.ins, ...item.outs].map((t) => (t.toLowerCase() === w.toLowerCase() ? 40 : 0)),
      );
      if (best <= 0) {
        ok = false;
        break;
      }
      total += best;
    }
    if (!ok) continue;
    // The whole query as one name ("empty image" for EmptyImage) beats its words found apart.
    const whole = squash(text);
    if (whole && (squash(item.display) === whole || squash(item.name) === whole)) total += 200;
    else if (whole && (squash(item.display).startsWith(whole) || squash(item.name).startsWith(whole))) total += 50;
    out.push({ item, score: total - item.display.length * 0.01 });
  }
  out.sort((a, b) => b.score - a.score || a.item.display.localeCompare(b.item.display));
  return out.slice(0, limit).map((x) => x.item);
}

/**
 * Opens the search box. `opts` as the graph library passes them: node_from/slot_from (a link
 * dragged from an output), node_to/slot_from (from an input), type_filter_in/out.
 */
export function openSearch(canvas, event, opts = {}) {
  const dialog = $('#search-dialog');
  const input = $('#search-input');
  const list = $('#search-results');
  const filterBox = $('#search-filter');
  const filter = {};
  if (opts.node_from) filter.input = opts.type_filter_in || opts.slot_from?.type;
  if (opts.node_to) filter.output = opts.type_filter_out || opts.slot_from?.type || opts.slot_to?.type;
  filterBox.textContent = filter.input ? `nodes that take ${filter.input}` : filter.output ? `nodes that give ${filter.output}` : '';
  const at = event ? canvas.convertEventToCanvasOffset(event) : canvas.convertOffsetToCanvas([canvas.canvas.width / 2, canvas.canvas.height / 2]);
  let selected = 0;
  let results = [];

  const render = () => {
    results = searchNodes(input.value, filter);
    selected = Math.min(selected, Math.max(0, results.length - 1));
    list.replaceChildren(
      ...results.map((item, i) =>
        el(
          'li',
          { role: 'option', 'data-type': item.name, 'aria-selected': String(i === selected), class: i === selected ? 'selected' : '', onmousedown: (e) => (e.preventDefault(), choose(item)) },
          el('span', { class: 'title', text: item.display }),
          el('span', { class: 'category', text: item.category }),
          el('span', { class: 'types', text: `${item.ins.filter((t) => !WIDGET_TYPES.has(t)).join(', ')} → ${item.outs.join(', ')}` }),
        ),
      ),
    );
    if (!results.length) list.append(el('li', { class: 'muted', text: 'No node matches.' }));
    list.children[selected]?.scrollIntoView({ block: 'nearest' });
  };
  const close = () => {
    dialog.close();
    canvas.canvas.focus();
  };
  const choose = (item) => {
    close();
    const graph = canvas.graph;
    graph.beforeChange();
    const node = LiteGraph.createNode(item.name);
    if (!node) return;
    node.pos = [at[0], at[1]];
    graph.add(node);
    if (opts.node_from) {
      const slot = typeof opts.slot_from === 'number' ? opts.slot_from : opts.node_from.outputs.indexOf(opts.slot_from);
      if (slot >= 0) opts.node_from.connectByType(slot, node, opts.node_from.outputs[slot].type, { afterRerouteId: opts.afterRerouteId });
    } else if (opts.node_to) {
      const s = opts.slot_to ?? opts.slot_from;
      const slot = typeof s === 'number' ? s : opts.node_to.inputs.indexOf(s);
      if (slot >= 0) opts.node_to.connectByTypeOutput(slot, node, opts.node_to.inputs[slot].type, { afterRerouteId: opts.afterRerouteId });
    }
    graph.afterChange();
    canvas.selectNode(node);
    canvas.setDirty(true, true);
  };

  input.value = '';
  input.oninput = () => {
    selected = 0;
    render();
  };
  input.onkeydown = (e) => {
    if (e.key === 'ArrowDown') selected = Math.min(results.length - 1, selected + 1);
    else if (e.key === 'ArrowUp') selected = Math.max(0, selected - 1);
    else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      // Ctrl+Enter queues the graph wherever focus is (main.js): the box closes without adding a node.
      close();
      return;
    } else if (e.key === 'Enter') {
      e.preventDefault();
      if (results[selected]) choose(results[selected]);
      return;
    } else if (e.key === 'Escape') {
      e.preventDefault();
      close();
      return;
    } else return;
    e.preventDefault();
    render();
  };
  dialog.onclick = (e) => {
    if (e.target === dialog) close();
  };
  render();
  if (!dialog.open) dialog.showModal();
  input.focus();
  return dialog;
}
