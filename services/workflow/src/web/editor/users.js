// --multi-user: the page acts as one user (Comfy-User). Without one chosen
// (`?user=`), it asks, as the reference's user selection page does: pick a
// user of /users or make a new one (POST /users).
import { api, errorText, token, user } from './api.js';
import { $, el } from './dom.js';

function reloadAs(id) {
  const q = new URLSearchParams();
  if (token) q.set('token', token);
  if (id) q.set('user', id);
  sessionStorage.removeItem('wf-user');
  location.search = q.toString();
}

/** Resolves once the page may start: at once in single-user mode or with a user; otherwise it reloads as the chosen one. */
export async function chooseUser() {
  const r = await api('/users');
  const users = r.ok && r.body && typeof r.body.users === 'object' && r.body.users !== null ? r.body.users : null;
  if (!users) return;
  const name = user ? (users[user] ?? user) : null;
  $('#user-box').hidden = false;
  $('#user-name').textContent = name ?? 'no user';
  $('#switch-user').onclick = () => reloadAs(null);
  if (user) return;
  const dialog = $('#user-dialog');
  const select = $('#user-select');
  select.replaceChildren(el('option', { value: '', text: 'choose…' }), ...Object.entries(users).map(([id, n]) => el('option', { value: id, text: String(n) })));
  select.onchange = () => select.value && reloadAs(select.value);
  $('#user-form').onsubmit = async (e) => {
    e.preventDefault();
    const username = $('#user-new').value.trim();
    if (!username) return;
    const made = await api('/users', { method: 'POST', json: { username } });
    if (!made.ok) {
      $('#user-error').textContent = errorText(made);
      return;
    }
    reloadAs(String(made.body));
  };
  dialog.showModal();
  // The page waits here: it reloads as the chosen user.
  await new Promise(() => {});
}
