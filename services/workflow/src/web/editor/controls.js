// control_after_generate, as the reference frontend: a combo next to a seed
// (or any INT/COMBO input marked so) that changes the value once a prompt is
// queued ("after", the default of Comfy.WidgetControlMode) or just before.

export const CONTROL_VALUES = ['fixed', 'increment', 'decrement', 'randomize'];
const noop = () => {};
const LIMIT = 1125899906842624;

export function addControlWidget(node, target, value = 'randomize') {
  const w = node.addWidget('combo', 'control_after_generate', CONTROL_VALUES.includes(value) ? value : 'randomize', noop, { values: CONTROL_VALUES, serialize: false });
  w.controls = target;
  target.linkedWidgets = [w];
  return w;
}

/** The next value of a widget under its control. */
export function nextValue(target, mode) {
  const o = target.options ?? {};
  if (mode === 'fixed' || !CONTROL_VALUES.includes(mode)) return target.value;
  if (target.type === 'combo') {
    const values = Array.isArray(o.values) ? o.values : [];
    if (!values.length) return target.value;
    let i = values.indexOf(target.value);
    if (mode === 'increment') i += 1;
    else if (mode === 'decrement') i -= 1;
    else i = Math.floor(Math.random() * values.length);
    return values[Math.max(0, Math.min(values.length - 1, i))];
  }
  const step = o.step2 ?? (o.step ?? 10) / 10;
  const min = Math.max(-LIMIT, o.min ?? -LIMIT);
  const max = Math.min(LIMIT, o.max ?? LIMIT);
  let v = Number(target.value) || 0;
  if (mode === 'increment') v += step;
  else if (mode === 'decrement') v -= step;
  else v = Math.floor(Math.random() * ((max - min) / step)) * step + min;
  return Math.max(min, Math.min(max, v));
}

/** Applies every control widget of the graph (phase 'before' or 'after' a prompt is queued, per the setting). */
export function applyControls(graph, phase, setting = 'after') {
  if (phase !== setting) return false;
  let changed = false;
  for (const node of graph.nodes) {
    if (node.mode === 2 || node.mode === 4) continue;
    for (const w of node.widgets ?? []) {
      if (!w.controls) continue;
      const next = nextValue(w.controls, w.value);
      if (next !== w.controls.value) {
        w.controls.value = next;
        w.controls.callback?.(next);
        changed = true;
      }
    }
  }
  if (changed) graph.setDirtyCanvas(true, false);
  return changed;
}
