// The side panels: node library (categories), queue and job history,
// output gallery, saved workflows, templates and settings.
import { LiteGraph } from '@comfyorg/litegraph';
import { api, errorText, setImage, viewUrl } from './api.js';
import { $, el, toast } from './dom.js';
import { defs } from './nodes.js';
import { TEMPLATES } from './templates.js';

export function showTab(name) {
  for (const b of document.querySelectorAll('#sidebar-tabs button')) b.setAttribute('aria-selected', String(b.dataset.tab === name));
  for (const p of document.querySelectorAll('#sidebar .panel')) p.hidden = p.dataset.panel !== name;
  $('#sidebar').hidden = !name;
  document.body.dataset.tab = name ?? '';
}

export function toggleTab(name, onOpen) {
  const open = document.body.dataset.tab === name;
  showTab(open ? null : name);
  if (!open) onOpen?.(name);
}

// ---------------------------------------------------------------- node library

/** A tree of categories; clicking a node adds it at the centre of the view. */
export function renderLibrary(onAdd) {
  const filter = $('#library-filter').value.trim().toLowerCase();
  const tree = new Map();
  const entries = [...defs.values()].filter((d) => !d.deprecated && !d.dev_only);
  entries.push(...['Reroute', 'Note', 'MarkdownNote', 'PrimitiveNode'].map((name) => ({ name, display_name: LiteGraph.registered_node_types[name]?.title ?? name, category: 'utils' })));
  for (const def of entries) {
    const title = def.display_name || def.name;
    if (filter && !`${title} ${def.name} ${def.category}`.toLowerCase().includes(filter)) continue;
    const cat = def.category || 'uncategorised';
    if (!tree.has(cat)) tree.set(cat, []);
    tree.get(cat).push({ name: def.name, title });
  }
  const cats = [...tree.keys()].sort();
  $('#library-tree').replaceChildren(
    ...cats.map((cat) =>
      el(
        'details',
        { open: !!filter, 'data-category': cat },
        el('summary', { text: cat }),
        el(
          'ul',
          {},
          ...tree
            .get(cat)
            .sort((a, b) => a.title.localeCompare(b.title))
            .map((n) => el('li', {}, el('button', { type: 'button', class: 'link', 'data-type': n.name, text: n.title, title: n.name, onclick: () => onAdd(n.name) }))),
        ),
      ),
    ),
  );
}

// ---------------------------------------------------------------- queue and history

const details = new Map();
/** Jobs deleted from this page (kept out of refreshes that were already under way). */
const deletedJobs = new Set();
const FINISHED = new Set(['completed', 'failed', 'cancelled']);

async function detailOf(job) {
  if (!FINISHED.has(job.status)) return null;
  if (!details.has(job.id)) {
    const r = await api(`/jobs/${encodeURIComponent(job.id)}`);
    if (!r.ok) return null;
    details.set(job.id, r.body);
    if (details.size > 500) details.delete(details.keys().next().value);
  }
  return details.get(job.id);
}

function imagesOf(detail, job) {
  const images = [];
  const texts = [];
  for (const nodeOut of Object.values(detail?.outputs ?? {})) {
    if (!nodeOut || typeof nodeOut !== 'object') continue;
    for (const item of Array.isArray(nodeOut.images) ? nodeOut.images : []) if (item && typeof item.filename === 'string') images.push(item);
    for (const t of Array.isArray(nodeOut.text) ? nodeOut.text : []) texts.push(String(t));
  }
  if (!images.length && job.preview_output?.filename) images.push(job.preview_output);
  return { images, texts };
}

export function thumb(item) {
  const img = el('img', { alt: item.filename, title: `${item.subfolder ? `${item.subfolder}/` : ''}${item.filename}`, loading: 'lazy' });
  setImage(img, viewUrl(item, { preview: true }));
  return el('a', { href: viewUrl(item, { withToken: true }), target: '_blank', rel: 'noopener' }, img);
}

function when(ms) {
  return typeof ms === 'number' ? new Date(ms).toLocaleTimeString() : '';
}

/** The queue (running and pending, each deletable) and the newest finished jobs. */
export async function refreshQueue({ onOpenJob, maxHistory = 64 }) {
  const [q, j] = await Promise.all([
    api('/queue'),
    api('/jobs', { query: { limit: maxHistory, sort_by: 'created_at', sort_order: 'desc', status: 'completed,failed,cancelled' } }),
  ]);
  if (q.ok) {
    const items = [];
    for (const t of q.body.queue_running ?? []) items.push(el('li', { 'data-prompt-id': t[1], 'data-state': 'running' }, el('span', { class: 'tag running', text: 'running' }), el('span', { class: 'id', text: t[1] })));
    for (const t of [...(q.body.queue_pending ?? [])].sort((a, b) => a[0] - b[0])) {
      const del = el('button', {
        type: 'button',
        class: 'small danger delete',
        text: 'Delete',
        onclick: async () => {
          del.disabled = true;
          await api('/queue', { method: 'POST', json: { delete: [t[1]] } });
          refreshQueue({ onOpenJob, maxHistory });
        },
      });
      items.push(el('li', { 'data-prompt-id': t[1], 'data-state': 'pending' }, el('span', { class: 'tag', text: `#${t[0]}` }), el('span', { class: 'id', text: t[1] }), del));
    }
    if (!items.length) items.push(el('li', { class: 'muted', text: 'Nothing queued.' }));
    $('#queue-list').replaceChildren(...items);
    $('#queue-remaining').textContent = String((q.body.queue_running?.length ?? 0) + (q.body.queue_pending?.length ?? 0));
  }
  if (!j.ok) return [];
  // A refresh that was under way when a job was deleted must not bring its card back.
  const jobs = (j.body.jobs ?? []).filter((job) => !deletedJobs.has(job.id));
  const ds = await Promise.all(jobs.map((job) => detailOf(job).catch(() => null)));
  const cards = jobs.map((job, i) => {
    const { images, texts } = imagesOf(ds[i], job);
    const card = el(
      'article',
      { class: 'job', 'data-job-id': job.id, 'data-status': job.status },
      el('header', {}, el('span', { class: 'status', text: job.status }), el('span', { class: 'id', text: job.id, title: job.id })),
      el('div', { class: 'when', text: [when(job.create_time), job.execution_end_time && job.execution_start_time ? `${((job.execution_end_time - job.execution_start_time) / 1000).toFixed(2)} s` : ''].filter(Boolean).join(' · ') }),
    );
    if (job.execution_error) card.append(el('div', { class: 'error', text: `${job.execution_error.exception_type ?? 'Error'}: ${String(job.execution_error.exception_message ?? '').trim()}` }));
    if (images.length) card.append(el('div', { class: 'thumbs' }, ...images.slice(0, 8).map(thumb)));
    if (texts.length) card.append(el('pre', { class: 'text', text: texts.join('\n').slice(0, 2000) }));
    card.append(
      el(
        'div',
        { class: 'row' },
        el('button', { type: 'button', class: 'small open', text: 'Open workflow', disabled: !ds[i]?.workflow, onclick: () => onOpenJob(ds[i]) }),
        el('button', {
          type: 'button',
          class: 'small danger delete',
          text: 'Delete',
          onclick: async () => {
            const r = await api('/history', { method: 'POST', json: { delete: [job.id] } });
            if (!r.ok) return toast(`Delete failed: ${errorText(r)}`, 'error');
            details.delete(job.id);
            deletedJobs.add(job.id);
            // The list may have been drawn again since this card was made: remove the job's card wherever it is now.
            for (const c of $('#history-list').querySelectorAll('.job')) if (c.dataset.jobId === job.id) c.remove();
            card.remove();
          },
        }),
      ),
    );
    return card;
  });
  if (!cards.length) cards.push(el('p', { class: 'muted', text: 'No finished jobs yet.' }));
  $('#history-list').replaceChildren(...cards);
  return jobs.map((job, i) => ({ job, ...imagesOf(ds[i], job) }));
}

export function renderGallery(entries) {
  const imgs = entries.flatMap((e) => e.images.filter((i) => (i.type ?? 'output') === 'output').map((i) => ({ ...i, job: e.job.id })));
  $('#gallery-grid').replaceChildren(...(imgs.length ? imgs.slice(0, 120).map((i) => el('figure', { 'data-job-id': i.job }, thumb(i))) : [el('p', { class: 'muted', text: 'No output images yet.' })]));
}

// ---------------------------------------------------------------- templates

export function renderTemplates(onPick) {
  $('#templates-list').replaceChildren(
    ...TEMPLATES.map((t) =>
      el('li', {}, el('button', { type: 'button', class: 'template', 'data-template': t.id, onclick: () => onPick(t) }, el('b', { text: t.title }), el('span', { class: 'muted', text: t.description }))),
    ),
  );
}

// ---------------------------------------------------------------- settings

/** The settings the page uses, under the reference frontend's ids. */
export const SETTINGS = [
  { id: 'Comfy.WidgetControlMode', name: 'Control after generate changes values', type: 'combo', options: ['after', 'before'], default: 'after' },
  { id: 'Comfy.LinkRelease.Action', name: 'Releasing a link on empty space opens', type: 'combo', options: ['search box', 'context menu', 'no action'], default: 'search box' },
  { id: 'Comfy.LinkRenderMode', name: 'Link style', type: 'combo', options: [2, 1, 0, -1], labels: ['spline', 'linear', 'straight', 'hidden'], default: 2 },
  { id: 'Comfy.PromptFilename', name: 'Ask for a name when saving', type: 'boolean', default: true },
  { id: 'Comfy.Queue.MaxHistoryItems', name: 'Jobs shown in the history', type: 'number', min: 1, max: 256, default: 64 },
  { id: 'Comfy.Graph.CanvasInfo', name: 'Show canvas info (frames per second, nodes)', type: 'boolean', default: false },
  { id: 'Comfy.SnapToGrid.GridSize', name: 'Snap to grid size (hold Shift while moving)', type: 'number', min: 1, max: 500, default: 10 },
  { id: 'Comfy.Pointer.DoubleClickTime', name: 'Double-click interval (ms)', type: 'number', min: 100, max: 5000, default: 300 },
  { id: 'Comfy.Pointer.ClickBufferTime', name: 'Time a press may last and still be a click (ms)', type: 'number', min: 0, max: 5000, default: 150 },
  { id: 'Comfy.Pointer.ClickDrift', name: 'Distance a click may drift (px)', type: 'number', min: 0, max: 50, default: 6 },
];

export const settings = {};

export async function loadSettings() {
  const r = await api('/settings');
  const stored = r.ok && r.body && typeof r.body === 'object' ? r.body : {};
  for (const s of SETTINGS) settings[s.id] = s.id in stored ? stored[s.id] : s.default;
  return settings;
}

export function renderSettings(onChange) {
  $('#settings-list').replaceChildren(
    ...SETTINGS.map((s) => {
      const id = `setting-${s.id.replace(/\W/g, '-')}`;
      let input;
      if (s.type === 'boolean') input = el('input', { type: 'checkbox', id, checked: !!settings[s.id] });
      else if (s.type === 'number') input = el('input', { type: 'number', id, min: s.min, max: s.max, value: String(settings[s.id]) });
      else input = el('select', { id }, ...s.options.map((o, i) => el('option', { value: String(o), text: s.labels?.[i] ?? String(o), selected: String(settings[s.id]) === String(o) })));
      input.dataset.settingId = s.id;
      input.addEventListener('change', async () => {
        let v = s.type === 'boolean' ? input.checked : s.type === 'number' ? Number(input.value) : input.value;
        if (s.type === 'combo' && typeof s.default === 'number') v = Number(v);
        if (s.type === 'number' && (!Number.isFinite(v) || v < s.min || v > s.max)) return toast(`${s.name}: between ${s.min} and ${s.max}`, 'error');
        const r = await api(`/settings/${encodeURIComponent(s.id)}`, { method: 'POST', json: v });
        if (!r.ok) return toast(`Could not save the setting: ${errorText(r)}`, 'error');
        settings[s.id] = v;
        onChange(s.id, v);
        toast('Setting saved');
      });
      return el('div', { class: 'setting' }, el('label', { for: id, text: s.name }), input);
    }),
  );
}
