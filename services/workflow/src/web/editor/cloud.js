// The hosted runtime (`--runtime cloud`): before the editor starts, the page
// signs in. A session cookie is made from the login's access token (POST
// /api/auth/session), so the browser authenticates every request and the
// socket itself and no token is kept by the page; writes send the session's
// CSRF token. The top bar then shows who is signed in, a switcher over the
// user's workspaces (sent as X-Workspace-Id) and Sign out.
import { api, errorText, runtime, workspace } from './api.js';
import { $, el } from './dom.js';

/** Resolves with the signed-in session once there is one; shows the sign-in form until then. */
async function session() {
  let r = await api('/auth/session');
  // The workspace this tab had chosen is gone (deleted, or membership ended): the session's own.
  if (r.status === 403 && workspace.id) {
    workspace.id = null;
    r = await api('/auth/session');
  }
  if (r.ok) return r.body;
  return new Promise((resolve) => {
    const error = el('p', { class: 'error', id: 'signin-error', role: 'alert' });
    const email = el('input', { type: 'email', id: 'signin-email', name: 'email', required: true, autocomplete: 'username' });
    const password = el('input', { type: 'password', id: 'signin-password', name: 'password', required: true, minLength: 8, autocomplete: 'current-password' });
    const name = el('input', { type: 'text', id: 'signin-name', name: 'display_name', autocomplete: 'name' });
    const nameRow = el('label', { for: 'signin-name', hidden: true }, 'Name ', name);
    const submit = el('button', { type: 'submit', class: 'primary', id: 'signin-submit', text: 'Sign in' });
    const toggle = el('button', { type: 'button', class: 'link', id: 'signin-toggle', text: 'No account yet? Create one' });
    let signup = false;
    toggle.onclick = () => {
      signup = !signup;
      nameRow.hidden = !signup;
      submit.textContent = signup ? 'Create account' : 'Sign in';
      toggle.textContent = signup ? 'Have an account? Sign in' : 'No account yet? Create one';
      password.autocomplete = signup ? 'new-password' : 'current-password';
      error.textContent = '';
    };
    const form = el(
      'form',
      { method: 'dialog', id: 'signin-form' },
      el('h2', { text: 'Sign in to the workflow service' }),
      el('label', { for: 'signin-email' }, 'Email ', email),
      el('label', { for: 'signin-password' }, 'Password ', password),
      nameRow,
      error,
      el('div', { class: 'row' }, submit, toggle),
    );
    const dialog = el('dialog', { id: 'signin-dialog' }, form);
    // Escape does not close it: nothing works before signing in.
    dialog.addEventListener('cancel', (e) => e.preventDefault());
    form.onsubmit = async (e) => {
      e.preventDefault();
      error.textContent = '';
      submit.disabled = true;
      try {
        const body = { email: email.value.trim(), password: password.value };
        if (signup && name.value.trim()) body.display_name = name.value.trim();
        const login = await api(signup ? '/auth/signup' : '/auth/login', { method: 'POST', json: body });
        if (!login.ok) {
          error.textContent = errorText(login);
          return;
        }
        // The access token only makes the session cookie; the page does not keep it.
        const made = await api('/auth/session', { method: 'POST', headers: { authorization: `Bearer ${login.body.access_token}` } });
        if (!made.ok) {
          error.textContent = errorText(made);
          return;
        }
        workspace.id = login.body.workspace?.id ?? null;
        const s = await api('/auth/session');
        if (!s.ok) {
          error.textContent = errorText(s);
          return;
        }
        dialog.close();
        dialog.remove();
        resolve(s.body);
      } finally {
        submit.disabled = false;
      }
    };
    document.body.append(dialog);
    dialog.showModal();
    email.focus();
  });
}

/** In the hosted runtime: signs in (waiting for the person), then fills the account bar. Local runtime: nothing. */
export async function signIn() {
  if (runtime !== 'cloud') return;
  const s = await session();
  const list = await api('/workspaces');
  const workspaces = Array.isArray(list.body?.workspaces) ? list.body.workspaces : Array.isArray(list.body) ? list.body : [];
  // The workspace chosen before (this tab) if it is still one of the user's, else the session's own.
  if (!workspaces.some((w) => w.id === workspace.id)) workspace.id = s.workspace?.id ?? workspaces[0]?.id ?? null;
  const select = $('#workspace-select');
  select.replaceChildren(...workspaces.map((w) => el('option', { value: w.id, text: `${w.name}${w.type === 'personal' ? ' (personal)' : ''}` })));
  select.value = workspace.id ?? '';
  // Another workspace is another tenant: its queue, files, settings and workflows. The page starts again in it.
  select.onchange = () => {
    workspace.id = select.value;
    location.reload();
  };
  $('#account-name').textContent = s.user?.email ?? s.user?.name ?? '';
  $('#sign-out').onclick = async () => {
    await api('/auth/session', { method: 'DELETE' });
    workspace.id = null;
    location.reload();
  };
  $('#account-box').hidden = false;
}
