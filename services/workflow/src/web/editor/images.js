// Images on nodes: LoadImage's upload button and preview, output images of a
// run, live previews while a sampler runs, and text outputs (PreviewAny).
import { api, errorText, loadImageElement, viewUrl } from './api.js';
import { toast } from './dom.js';

/** Where a node's own content ends (slots and widgets), in node coordinates. */
function contentBottom(node) {
  let y = 0;
  for (const w of node.widgets ?? []) if (!w.hidden && typeof w.y === 'number') y = Math.max(y, w.y + (w.computedHeight ?? 20));
  const slots = Math.max(node.inputs?.filter((i) => !i.widget).length ?? 0, node.outputs?.length ?? 0);
  return Math.max(y, slots * 20 + 6) + 6;
}

/** Shows images (HTMLImageElements) on a node and makes room for them. */
export function setNodeImages(node, imgs) {
  node.imgs = imgs;
  const room = contentBottom(node) + 220;
  if (imgs.length && node.size[1] < room) node.setSize([node.size[0], room]);
  node.setDirtyCanvas(true, false);
}

export function setNodeText(node, lines) {
  node.outputText = lines;
  const room = contentBottom(node) + 24 + Math.min(lines.join('\n').split('\n').length, 12) * 14;
  if (node.size[1] < room) node.setSize([node.size[0], room]);
  node.setDirtyCanvas(true, false);
}

export function showOutputImages(node, items) {
  const urls = items.filter((i) => i && typeof i.filename === 'string').map((i) => viewUrl(i, { bust: Date.now() }));
  Promise.all(urls.map((u) => loadImageElement(u).catch(() => null))).then((imgs) => setNodeImages(node, imgs.filter(Boolean)));
}

export function drawNodeImages(node, ctx) {
  if (node.flags?.collapsed) return;
  const top = contentBottom(node);
  const w = node.size[0];
  if (node.outputText?.length) {
    ctx.save();
    ctx.fillStyle = '#222';
    const lines = node.outputText.join('\n').split('\n').slice(0, 12);
    ctx.fillRect(6, top, w - 12, lines.length * 14 + 8);
    ctx.fillStyle = '#ddd';
    ctx.font = '12px monospace';
    lines.forEach((l, i) => ctx.fillText(l.length > 80 ? `${l.slice(0, 79)}…` : l, 10, top + 14 + i * 14, w - 20));
    ctx.restore();
    return;
  }
  const imgs = (node.imgs ?? []).filter((i) => i.naturalWidth > 0);
  if (!imgs.length) return;
  const h = node.size[1] - top - 4;
  if (h < 20) return;
  // One image fills the area; several share it in a grid.
  const cols = Math.ceil(Math.sqrt(imgs.length));
  const rows = Math.ceil(imgs.length / cols);
  const cw = (w - 8) / cols;
  const ch = h / rows;
  imgs.forEach((img, i) => {
    const s = Math.min(cw / img.naturalWidth, ch / img.naturalHeight);
    const dw = img.naturalWidth * s;
    const dh = img.naturalHeight * s;
    const x = 4 + (i % cols) * cw + (cw - dw) / 2;
    const y = top + Math.floor(i / cols) * ch + (ch - dh) / 2;
    ctx.drawImage(img, x, y, dw, dh);
  });
}

function inputItem(value) {
  const m = /^(.*) \[(input|output|temp)\]$/.exec(value);
  const name = m ? m[1] : value;
  const cut = name.lastIndexOf('/');
  return { filename: name.slice(cut + 1), subfolder: cut >= 0 ? name.slice(0, cut) : '', type: m ? m[2] : 'input' };
}

function previewInput(node, value) {
  if (!value) return setNodeImages(node, []);
  loadImageElement(viewUrl(inputItem(String(value))))
    .then((img) => setNodeImages(node, [img]))
    .catch(() => setNodeImages(node, []));
}

/** Uploads a file to input/ and answers the name a LoadImage takes. */
export async function uploadImage(file, { subfolder = '', overwrite = false } = {}) {
  const form = new FormData();
  form.append('image', file, file.name);
  form.append('type', 'input');
  if (subfolder) form.append('subfolder', subfolder);
  if (overwrite) form.append('overwrite', 'true');
  const r = await api('/upload/image', { method: 'POST', body: form });
  if (!r.ok) throw new Error(`Upload failed (${r.status}): ${errorText(r)}`);
  return r.body.subfolder ? `${r.body.subfolder}/${r.body.name}` : r.body.name;
}

/** The upload button and preview of an image COMBO (LoadImage's image). */
export function addImageUpload(node, combo, opts) {
  const accept = opts.video_upload ? 'video/*' : opts.audio_upload ? 'audio/*' : 'image/*';
  const prev = combo.callback;
  combo.callback = (v) => {
    prev?.(v);
    previewInput(node, v);
  };
  const choose = () => {
    // In the document until the chooser closes: a detached input may be collected and its chooser never shown.
    const input = document.createElement('input');
    input.type = 'file';
    input.accept = accept;
    input.hidden = true;
    input.addEventListener('change', () => {
      const file = input.files?.[0];
      input.remove();
      if (file) setUploadedFile(node, combo, file);
    });
    input.addEventListener('cancel', () => input.remove());
    document.body.append(input);
    input.click();
  };
  const button = node.addWidget('button', 'upload', 'image', choose, { serialize: false });
  // Two quick clicks are a double click to the canvas, which would swallow the second: both open the chooser.
  button.onPointerDown = (pointer) => {
    pointer.onClick = choose;
    pointer.onDoubleClick = choose;
    return true;
  };
  node.uploadWidget = combo;
  queueMicrotask(() => previewInput(node, combo.value));
}

export async function setUploadedFile(node, combo, file) {
  try {
    const name = await uploadImage(file);
    const values = combo.options.values;
    if (Array.isArray(values) && !values.includes(name)) values.push(name);
    combo.value = name;
    combo.callback?.(name);
    toast(`Uploaded ${name}`);
  } catch (err) {
    toast(err.message, 'error');
  }
}
