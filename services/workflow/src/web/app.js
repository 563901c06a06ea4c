// The built-in page: queue, running progress (WebSocket), jobs with thumbnails,
// image upload, prompt queueing. Plain DOM; every server-provided text goes in
// through textContent, never as HTML.

const $ = (sel) => document.querySelector(sel);

/**
 * `?token=` (the service's --api-key) and `?user=` (the Comfy-User of --multi-user) are kept
 * for the session. Requests carry them as headers, so they stay out of URLs (and request
 * logs); only the socket and links opened in a new tab, which cannot send headers, put the
 * token in the URL.
 */
const params = new URLSearchParams(location.search);
const token = params.get('token') ?? sessionStorage.getItem('wf-token');
if (params.has('token')) sessionStorage.setItem('wf-token', token);
const user = params.get('user') ?? sessionStorage.getItem('wf-user');
if (params.has('user')) sessionStorage.setItem('wf-user', user);

function authHeaders() {
  const h = {};
  if (token) h.authorization = `Bearer ${token}`;
  if (user) h['comfy-user'] = user;
  return h;
}

function newId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
const clientId = sessionStorage.getItem('wf-client-id') ?? newId();
sessionStorage.setItem('wf-client-id', clientId);

/** Relative to the page, so the service also works behind a proxy under a sub-path. */
function apiUrl(path, query = {}, withToken = false) {
  const u = new URL(`api${path}`, location.href);
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) u.searchParams.set(k, v);
  if (withToken && token) u.searchParams.set('token', token);
  return u.toString();
}

async function api(path, opts = {}) {
  const headers = { ...authHeaders(), ...(opts.headers ?? {}) };
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(apiUrl(path, opts.query), { method: opts.method ?? 'GET', headers, body: opts.json !== undefined ? JSON.stringify(opts.json) : opts.body });
  const text = await res.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  return { ok: res.ok, status: res.status, body };
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k.startsWith('data-')) e.setAttribute(k, String(v));
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function viewUrl(item, preview = true, withToken = false) {
  return apiUrl('/view', { filename: item.filename, type: item.type ?? 'output', subfolder: item.subfolder ?? '', preview: preview ? 'webp;75' : undefined }, withToken);
}

/** Thumbnails loaded with headers become blob URLs, kept (bounded) so a re-render does not fetch them again. */
const blobs = new Map();
function loadImage(img, url) {
  if (!token && !user) {
    img.src = url;
    return;
  }
  const hit = blobs.get(url);
  if (hit) {
    img.src = hit;
    return;
  }
  fetch(url, { headers: authHeaders() })
    .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(`HTTP ${r.status}`))))
    .then((b) => {
      const u = URL.createObjectURL(b);
      blobs.set(url, u);
      if (blobs.size > 300) {
        const [k, v] = blobs.entries().next().value;
        URL.revokeObjectURL(v);
        blobs.delete(k);
      }
      img.src = u;
    })
    .catch(() => {
      img.alt = `${img.alt} (not available)`;
    });
}

function thumb(item) {
  const img = el('img', { alt: item.filename, title: `${item.subfolder ? item.subfolder + '/' : ''}${item.filename}` });
  loadImage(img, viewUrl(item));
  return el('a', { href: viewUrl(item, false, true), target: '_blank', rel: 'noopener' }, img);
}

function timeText(ms) {
  if (typeof ms !== 'number') return '';
  return new Date(ms).toLocaleTimeString();
}

// ---------------------------------------------------------------- examples

const EXAMPLES = {
  solid: {
    1: { class_type: 'EmptyImage', inputs: { width: 256, height: 256, batch_size: 1, color: 0x3a7bd5 } },
    2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'web' } },
  },
  text: {
    1: { class_type: 'PrimitiveString', inputs: { value: 'Hello from the workflow service' } },
    2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
  },
  chat: {
    1: { class_type: 'OpenAICompatibleChat', inputs: { prompt: 'Write a haiku about queues.', seed: 0 } },
    2: { class_type: 'PreviewAny', inputs: { source: ['1', 0] } },
  },
  image: {
    1: { class_type: 'OpenAICompatibleImage', inputs: { prompt: 'A lighthouse at dusk, watercolour', size: '1024x1024', n: 1, seed: 0 } },
    2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'generated' } },
  },
};

$('#example').addEventListener('change', (e) => {
  const ex = EXAMPLES[e.target.value];
  if (ex) $('#prompt-text').value = JSON.stringify(ex, null, 2);
  e.target.value = '';
});

// ---------------------------------------------------------------- queueing

/** Prompts seen in the queue or queued here, so the running panel can name node classes. */
const knownPrompts = new Map();
/** Prompts queued from this page: their progress comes over this page's socket. */
const mine = new Set();

function showResult(box, kind, title, lines = []) {
  box.replaceChildren();
  const div = el('div', { class: kind === 'error' ? 'alert' : 'notice', role: kind === 'error' ? 'alert' : 'status' }, el('div', { text: title }));
  if (lines.length) div.append(el('ul', {}, ...lines.map((l) => el('li', { text: l }))));
  box.append(div);
}

function promptErrorLines(body) {
  const lines = [];
  const err = body?.error;
  if (err && typeof err === 'object' && err.details && err.details !== err.message) lines.push(String(err.details));
  for (const [id, ne] of Object.entries(body?.node_errors ?? {})) {
    for (const e of ne?.errors ?? []) lines.push(`node ${id} (${ne.class_type}): ${e.message}${e.details ? ` — ${e.details}` : ''}`);
  }
  return lines;
}

async function queuePrompt() {
  const box = $('#prompt-result');
  box.replaceChildren();
  let prompt;
  try {
    prompt = JSON.parse($('#prompt-text').value);
  } catch (err) {
    return showResult(box, 'error', `Not valid JSON: ${err.message}`);
  }
  if (prompt && typeof prompt === 'object' && !Array.isArray(prompt) && prompt.prompt && typeof prompt.prompt === 'object' && !prompt.class_type) prompt = prompt.prompt;
  if (prompt && Array.isArray(prompt.nodes) && Array.isArray(prompt.links)) {
    return showResult(box, 'error', 'This looks like a UI workflow (nodes and links). Export it in API format and paste that.');
  }
  // The id is chosen here so the running panel knows the prompt before the answer is read (its messages may come first).
  const promptId = newId();
  knownPrompts.set(promptId, prompt);
  mine.add(promptId);
  const body = { prompt, client_id: clientId, prompt_id: promptId };
  if ($('#queue-front').checked) body.front = true;
  $('#queue-btn').disabled = true;
  try {
    const r = await api('/prompt', { method: 'POST', json: body });
    if (r.ok) {
      const warn = promptErrorLines({ node_errors: r.body.node_errors });
      showResult(box, warn.length ? 'error' : 'ok', `Queued ${r.body.prompt_id} (#${r.body.number})`, warn);
      box.firstChild.dataset.promptId = r.body.prompt_id;
    } else {
      const title = typeof r.body?.error === 'string' ? r.body.error : (r.body?.error?.message ?? `HTTP ${r.status}`);
      showResult(box, 'error', title, promptErrorLines(r.body));
    }
  } catch (err) {
    showResult(box, 'error', `Request failed: ${err.message}`);
  } finally {
    $('#queue-btn').disabled = false;
    scheduleRefresh();
  }
}
$('#queue-btn').addEventListener('click', queuePrompt);
$('#prompt-text').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) queuePrompt();
});

// ---------------------------------------------------------------- upload

$('#upload-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const box = $('#upload-result');
  const file = $('#upload-file').files[0];
  if (!file) return showResult(box, 'error', 'Choose an image first.');
  const form = new FormData();
  form.append('image', file, file.name);
  form.append('type', 'input');
  const sub = $('#upload-subfolder').value.trim();
  if (sub) form.append('subfolder', sub);
  if ($('#upload-overwrite').checked) form.append('overwrite', 'true');
  $('#upload-btn').disabled = true;
  try {
    const r = await api('/upload/image', { method: 'POST', body: form });
    if (!r.ok) return showResult(box, 'error', `Upload failed (${r.status}): ${typeof r.body === 'string' ? r.body : (r.body?.error?.message ?? r.body?.error ?? JSON.stringify(r.body))}`);
    const ref = r.body.subfolder ? `${r.body.subfolder}/${r.body.name}` : r.body.name;
    showResult(box, 'ok', `Uploaded ${ref}`);
    const use = el('button', {
      type: 'button',
      id: 'use-upload-btn',
      text: 'Use in a prompt',
      onclick: () => {
        $('#prompt-text').value = JSON.stringify(
          {
            1: { class_type: 'LoadImage', inputs: { image: ref } },
            2: { class_type: 'SaveImage', inputs: { images: ['1', 0], filename_prefix: 'from-upload' } },
          },
          null,
          2,
        );
      },
    });
    box.firstChild.dataset.name = ref;
    box.append(el('div', { class: 'thumbs' }, thumb({ filename: r.body.name, subfolder: r.body.subfolder, type: r.body.type ?? 'input' })), el('div', { class: 'row' }, use));
  } catch (err) {
    showResult(box, 'error', `Upload failed: ${err.message}`);
  } finally {
    $('#upload-btn').disabled = false;
  }
});

// ---------------------------------------------------------------- running

const running = { promptId: null, node: null, states: {}, value: 0, max: 1, external: null };

function classOf(promptId, node) {
  const p = knownPrompts.get(promptId);
  const ct = p && p[node] && p[node].class_type;
  return ct ? `${node} (${ct})` : String(node);
}

function renderRunning() {
  const box = $('#running');
  const label = $('#running-label');
  if (!running.promptId) {
    box.dataset.state = running.external ? 'external' : 'idle';
    // A prompt queued by another client: its progress messages go to that client only.
    label.textContent = running.external ? `${running.external.slice(0, 8)}… is running (queued by another client)` : 'Nothing is running.';
    label.className = 'muted';
    $('#interrupt-btn').disabled = !running.external;
    $('#progress').value = 0;
    $('#node-states').replaceChildren();
    return;
  }
  box.dataset.state = 'running';
  box.dataset.promptId = running.promptId;
  label.className = '';
  label.textContent = `${running.promptId.slice(0, 8)}… ${running.node !== null ? `node ${classOf(running.promptId, running.node)}` : 'starting'}`;
  $('#interrupt-btn').disabled = false;
  $('#progress').max = running.max || 1;
  $('#progress').value = running.value;
  const chips = Object.entries(running.states).map(([id, s]) =>
    el('span', { class: 'chip', 'data-state': s.state, 'data-node': id, text: `${id}: ${s.state}${s.state === 'running' && s.max > 1 ? ` ${s.value}/${s.max}` : ''}` }),
  );
  $('#node-states').replaceChildren(...chips);
}

function startRun(promptId) {
  if (running.promptId !== promptId) {
    Object.assign(running, { promptId, node: null, states: {}, value: 0, max: 1 });
    $('#live').replaceChildren();
  }
}

function endRun(promptId) {
  if (running.promptId === promptId) {
    running.promptId = null;
    renderRunning();
  }
}

$('#interrupt-btn').addEventListener('click', async () => {
  const id = running.promptId ?? running.external;
  await api('/interrupt', { method: 'POST', json: id ? { prompt_id: id } : {} });
});

function onMessage(type, data) {
  switch (type) {
    case 'status':
      $('#queue-remaining').textContent = String(data?.status?.exec_info?.queue_remaining ?? '–');
      scheduleRefresh();
      break;
    case 'execution_start':
      startRun(data.prompt_id);
      renderRunning();
      break;
    case 'executing':
      if (data.node === null) {
        endRun(data.prompt_id);
        scheduleRefresh();
      } else {
        startRun(data.prompt_id ?? running.promptId);
        running.node = data.display_node ?? data.node;
        running.value = 0;
        running.max = 1;
        renderRunning();
      }
      break;
    case 'progress':
      startRun(data.prompt_id);
      running.node = data.node ?? running.node;
      running.value = data.value;
      running.max = data.max;
      renderRunning();
      break;
    case 'progress_state':
      startRun(data.prompt_id);
      running.states = data.nodes ?? {};
      renderRunning();
      break;
    case 'executed':
      for (const item of data.output?.images ?? []) if (item && item.filename) $('#live').append(thumb(item));
      break;
    case 'execution_success':
    case 'execution_error':
    case 'execution_interrupted':
      endRun(data.prompt_id);
      scheduleRefresh();
      break;
  }
}

let previewUrl = null;
function onPreview(buf) {
  const view = new DataView(buf);
  if (buf.byteLength < 8 || view.getUint32(0) !== 1) return;
  const mime = view.getUint32(4) === 2 ? 'image/png' : 'image/jpeg';
  if (previewUrl) URL.revokeObjectURL(previewUrl);
  previewUrl = URL.createObjectURL(new Blob([buf.slice(8)], { type: mime }));
  let img = $('#live-preview');
  if (!img) {
    img = el('img', { id: 'live-preview', alt: 'live preview' });
    $('#live').prepend(img);
  }
  img.src = previewUrl;
}

let retry = 500;
function connect() {
  const u = new URL('ws', location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.searchParams.set('clientId', clientId);
  if (token) u.searchParams.set('token', token);
  const ws = new WebSocket(u);
  ws.binaryType = 'arraybuffer';
  ws.onopen = () => {
    retry = 500;
    $('#conn').dataset.state = 'connected';
    $('#conn').textContent = 'connected';
    ws.send(JSON.stringify({ type: 'feature_flags', data: { supports_preview_metadata: false } }));
    scheduleRefresh();
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') return onPreview(ev.data);
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      return;
    }
    if (msg && typeof msg.type === 'string') onMessage(msg.type, msg.data ?? {});
  };
  ws.onclose = () => {
    $('#conn').dataset.state = 'disconnected';
    $('#conn').textContent = 'disconnected — retrying';
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, 10_000);
  };
}

// ---------------------------------------------------------------- queue and jobs

let refreshTimer = null;
function scheduleRefresh() {
  if (refreshTimer) return;
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    refresh().catch(() => {});
  }, 60);
}
$('#refresh-btn').addEventListener('click', () => refresh());

$('#clear-queue-btn').addEventListener('click', async () => {
  await api('/queue', { method: 'POST', json: { clear: true } });
  scheduleRefresh();
});

function renderQueue(q) {
  const items = [];
  for (const t of q.queue_running ?? []) {
    knownPrompts.set(t[1], t[2]);
    items.push(el('li', { 'data-prompt-id': t[1], 'data-state': 'running' }, el('span', { class: 'tag running', text: 'running' }), el('span', { class: 'id', text: t[1] })));
  }
  const pending = [...(q.queue_pending ?? [])].sort((a, b) => a[0] - b[0]);
  for (const t of pending) {
    knownPrompts.set(t[1], t[2]);
    const del = el('button', {
      type: 'button',
      class: 'small danger delete',
      text: 'Delete',
      onclick: async () => {
        del.disabled = true;
        await api('/queue', { method: 'POST', json: { delete: [t[1]] } });
        scheduleRefresh();
      },
    });
    items.push(el('li', { 'data-prompt-id': t[1], 'data-state': 'pending' }, el('span', { class: 'tag', text: `#${t[0]}` }), el('span', { class: 'id', text: t[1] }), el('span', { class: 'spacer' }), del));
  }
  const top = q.queue_running?.[0]?.[1] ?? null;
  running.external = top !== null && !mine.has(top) && top !== running.promptId ? top : null;
  renderRunning();
  if (!items.length) items.push(el('li', { class: 'muted', text: 'Empty.' }));
  $('#queue-list').replaceChildren(...items);
  $('#queue-remaining').textContent = String((q.queue_running?.length ?? 0) + (q.queue_pending?.length ?? 0));
}

/** Finished jobs never change: their details are fetched once. */
const details = new Map();
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

function jobCard(job, detail) {
  const card = el(
    'article',
    { class: 'job', 'data-job-id': job.id, 'data-status': job.status },
    el('header', {}, el('span', { class: 'status', text: job.status }), el('span', { class: 'id', text: job.id, title: job.id })),
    el('div', { class: 'when', text: [timeText(job.create_time), job.execution_end_time && job.execution_start_time ? `${((job.execution_end_time - job.execution_start_time) / 1000).toFixed(2)} s` : ''].filter(Boolean).join(' · ') }),
  );
  if (job.status === 'cancelled') card.append(el('div', { class: 'when', text: 'Interrupted.' }));
  if (job.execution_error) card.append(el('div', { class: 'error', text: `${job.execution_error.exception_type ?? 'Error'}: ${String(job.execution_error.exception_message ?? '').trim()}` }));
  const images = [];
  const texts = [];
  const outputs = detail?.outputs ?? {};
  for (const nodeOut of Object.values(outputs)) {
    if (!nodeOut || typeof nodeOut !== 'object') continue;
    for (const item of Array.isArray(nodeOut.images) ? nodeOut.images : []) if (item && typeof item.filename === 'string') images.push(item);
    for (const t of Array.isArray(nodeOut.text) ? nodeOut.text : []) texts.push(String(t));
  }
  if (!images.length && job.preview_output && job.preview_output.mediaType === 'images') images.push(job.preview_output);
  if (images.length) card.append(el('div', { class: 'thumbs' }, ...images.slice(0, 12).map(thumb)));
  if (texts.length) card.append(el('pre', { class: 'text', text: texts.join('\n').slice(0, 2000) }));
  return card;
}

async function refresh() {
  const [q, j] = await Promise.all([api('/queue'), api('/jobs', { query: { limit: 24, sort_by: 'created_at', sort_order: 'desc', status: 'completed,failed,cancelled' } })]);
  if (q.ok) renderQueue(q.body);
  if (!j.ok) return;
  const jobs = j.body.jobs ?? [];
  const ds = await Promise.all(jobs.map((job) => detailOf(job).catch(() => null)));
  const cards = jobs.map((job, i) => jobCard(job, ds[i]));
  if (!cards.length) cards.push(el('p', { class: 'muted', text: 'No jobs yet.' }));
  $('#jobs').replaceChildren(...cards);
}

connect();
refresh().catch(() => {});
