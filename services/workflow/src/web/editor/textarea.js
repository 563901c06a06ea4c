// Multiline STRING widgets edited on the node itself, as the reference
// frontend's: a <textarea> laid over the canvas where the widget is drawn. It
// follows pan and zoom, grows with the node, and is hidden whenever its node
// is not drawn (collapsed, scrolled away, in another graph, removed). The
// widget's value is the text, so saving, the prompt and undo see it as any
// other widget's.

import { LiteGraph } from '@comfyorg/litegraph';

const MARGIN = 10;
const MIN_HEIGHT = 60;

let layer = null;
let canvasRef = null;
let frame = 0;
const live = new Set();

/** Puts the layer the text areas live in over the canvas; call once. */
export function installTextareaLayer(canvas, wrap) {
  canvasRef = canvas;
  layer = document.createElement('div');
  layer.className = 'dom-widgets';
  wrap.appendChild(layer);
  // After every frame: whatever was not drawn in it is hidden.
  const previous = canvas.onDrawForeground;
  canvas.onDrawForeground = function (ctx, area) {
    previous?.call(this, ctx, area);
    for (const w of live) {
      if (w.frame !== frame) w.element.hidden = true;
      if (!w.node.graph) {
        w.element.remove();
        live.delete(w);
      }
    }
    frame++;
  };
}

/** Adds a multiline text widget to `node` (an input named `name`, or a Note's text) and answers it. */
export function addTextareaWidget(node, name, value, options = {}) {
  const element = document.createElement('textarea');
  element.className = 'comfy-multiline-input';
  element.spellcheck = false;
  element.hidden = true;
  element.value = typeof value === 'string' ? value : '';
  if (options.placeholder) element.placeholder = options.placeholder;
  element.setAttribute('aria-label', name);
  element.dataset.widget = name;
  const widget = {
    type: 'customtext',
    name,
    element,
    node,
    frame: -1,
    options: { ...options, multiline: true },
    get value() {
      return element.value;
    },
    set value(v) {
      const text = v == null ? '' : String(v);
      if (element.value !== text) element.value = text;
    },
    /** Grows with the node: at least three lines. */
    computeLayoutSize() {
      return { minHeight: MIN_HEIGHT, maxHeight: 100_000, minWidth: 200 };
    },
    draw(ctx, drawnNode, width, y) {
      if (!layer || !canvasRef) return;
      const ds = canvasRef.ds;
      const height = Math.max(MIN_HEIGHT, (this.computedHeight ?? MIN_HEIGHT) - 4);
      const [left, top] = ds.convertOffsetToCanvas([drawnNode.pos[0] + MARGIN, drawnNode.pos[1] + y]);
      const style = element.style;
      style.left = `${left}px`;
      style.top = `${top}px`;
      style.width = `${width - 2 * MARGIN}px`;
      style.height = `${height}px`;
      style.transform = `scale(${ds.scale})`;
      // Too small to read or type in: the canvas draws a box instead, as for other widgets at low zoom.
      const tiny = ds.scale < 0.5;
      element.hidden = tiny;
      element.disabled = !!this.computedDisabled;
      element.classList.toggle('linked', !!this.computedDisabled);
      this.frame = frame;
      if (tiny) {
        ctx.fillStyle = LiteGraph.WIDGET_BGCOLOR;
        ctx.fillRect(MARGIN, y, width - 2 * MARGIN, height);
      }
    },
  };
  element.addEventListener('input', () => node.setDirtyCanvas?.(true, false));
  // The wheel zooms the canvas unless the text itself scrolls.
  element.addEventListener(
    'wheel',
    (e) => {
      if (element.scrollHeight > element.clientHeight && !e.ctrlKey) return;
      e.preventDefault();
      canvasRef?.canvas.dispatchEvent(new WheelEvent('wheel', e));
    },
    { passive: false },
  );
  // A click in the text selects its node, as a click on the node would.
  element.addEventListener('pointerdown', () => {
    if (canvasRef && !canvasRef.selectedItems.has(node)) canvasRef.selectNode(node);
  });
  layer?.appendChild(element);
  live.add(widget);
  node.addCustomWidget(widget);
  return widget;
}
