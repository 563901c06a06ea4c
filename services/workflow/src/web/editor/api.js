// The service's HTTP API as the page uses it. `?token=` (--api-key) and
// `?user=` (the Comfy-User of --multi-user) are kept for the session and sent
// as headers, so they stay out of URLs and request logs; only the socket and
// links opened in a new tab, which cannot send headers, carry the token.

const params = new URLSearchParams(location.search);
export const token = params.get('token') ?? sessionStorage.getItem('wf-token');
if (params.has('token')) sessionStorage.setItem('wf-token', token);
export const user = params.get('user') ?? sessionStorage.getItem('wf-user');
if (params.has('user')) sessionStorage.setItem('wf-user', user);

// The hosted runtime (`--runtime cloud`): the page is signed in by the session cookie, which the
// browser sends itself; writes carry the session's CSRF token (the readable wf_csrf cookie), and
// every request the workspace chosen in the top bar (X-Workspace-Id).
export const runtime = document.body.dataset.runtime === 'cloud' ? 'cloud' : 'local';
export const workspace = {
  get id() {
    return runtime === 'cloud' ? sessionStorage.getItem('wf-workspace') : null;
  },
  set id(v) {
    if (v) sessionStorage.setItem('wf-workspace', v);
    else sessionStorage.removeItem('wf-workspace');
  },
};

function csrfToken() {
  const m = /(?:^|;\s*)wf_csrf=([^;]*)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : null;
}

export function authHeaders() {
  const h = {};
  if (token) h.authorization = `Bearer ${token}`;
  if (user) h['comfy-user'] = user;
  if (runtime === 'cloud') {
    const csrf = csrfToken();
    if (csrf) h['x-csrf-token'] = csrf;
    if (workspace.id) h['x-workspace-id'] = workspace.id;
  }
  return h;
}

export function newId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const clientId = sessionStorage.getItem('wf-client-id') ?? newId();
sessionStorage.setItem('wf-client-id', clientId);

/** Relative to the page, so the service also works behind a proxy under a sub-path. */
export function apiUrl(path, query = {}, withToken = false) {
  const u = new URL(`api${path}`, location.href);
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
  if (withToken && token) u.searchParams.set('token', token);
  return u.toString();
}

/** Answers {ok, status, body} (body parsed as JSON when it is). Never throws for an HTTP status. */
export async function api(path, opts = {}) {
  const headers = { ...authHeaders(), ...(opts.headers ?? {}) };
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  const res = await fetch(apiUrl(path, opts.query), { method: opts.method ?? 'GET', headers, body });
  const text = await res.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { ok: res.ok, status: res.status, body: parsed };
}

/** The server's message in any of its error shapes. */
export function errorText(r) {
  const b = r.body;
  if (typeof b === 'string' && b) return b;
  if (typeof b?.error === 'string') return b.error;
  if (b?.error?.message) return b.error.message;
  if (typeof b?.detail === 'string') return b.detail;
  if (b?.message) return String(b.message);
  return `HTTP ${r.status}`;
}

export function viewUrl(item, { preview = false, withToken = false, bust } = {}) {
  return apiUrl('/view', { filename: item.filename, type: item.type ?? 'output', subfolder: item.subfolder ?? '', preview: preview ? 'webp;75' : undefined, rand: bust }, withToken);
}

/** Images loaded with headers become blob URLs, kept (bounded) so a re-render does not fetch them again. */
const blobs = new Map();
export function imageSrc(url) {
  if (!token && !user && !workspace.id) return Promise.resolve(url);
  const hit = blobs.get(url);
  if (hit) return Promise.resolve(hit);
  return fetch(url, { headers: authHeaders() })
    .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(`HTTP ${r.status}`))))
    .then((b) => {
      const u = URL.createObjectURL(b);
      blobs.set(url, u);
      if (blobs.size > 300) {
        const [k, v] = blobs.entries().next().value;
        URL.revokeObjectURL(v);
        blobs.delete(k);
      }
      return u;
    });
}

export function setImage(img, url) {
  imageSrc(url)
    .then((u) => (img.src = u))
    .catch(() => (img.alt = `${img.alt} (not available)`));
}

/** An HTMLImageElement for drawing on the canvas; resolves once it has loaded. */
export function loadImageElement(url) {
  return imageSrc(url).then(
    (u) =>
      new Promise((resolve, reject) => {
        const img = new Image();
        img.onload = () => resolve(img);
        img.onerror = () => reject(new Error(`image ${url} did not load`));
        img.src = u;
      }),
  );
}
