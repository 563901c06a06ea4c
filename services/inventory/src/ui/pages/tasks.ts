import type { FastifyInstance } from 'fastify';
import { html, prettyJson, urlPart, type SafeHtml } from '../html.ts';
import { csrfField, formatTime, statusBadge } from '../layout.ts';
import { authed, flash, redirectTo, sendError, sendPage } from '../context.ts';
import type { UiBackend } from '../backend.ts';
import { TASK_STATUSES, isTaskStatus, normaliseStatus, type TaskAttempt, type TaskStatus, type RecordedRequest, type TaskDetail, type TaskRow } from '../../events/tasks.ts';
import { pager, pageParams } from './paging.ts';

const TASK_ID = /^[A-Za-z0-9_-]{1,64}$/;
const QUEUE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const STATUS_TITLES: Record<TaskStatus, string> = {
  queued: 'Queued',
  scheduled: 'Scheduled',
  sent: 'Sent',
  successful: 'Successful',
  failed: 'Failed',
  stopped: 'Stopped',
};

function taskTable(items: TaskRow[]): SafeHtml {
  return html`<table class="list" data-testid="tasks">
<thead><tr><th>ID</th><th>Created</th><th>Enqueued</th><th>Ended</th><th>Status</th><th>Callable</th><th>Webhook</th><th>Event</th><th>Object</th><th>Attempts</th><th>Response</th></tr></thead>
<tbody>${items.length === 0 ? html`<tr><td colspan="11" class="muted">No tasks.</td></tr>` : items.map(
    (t) => html`<tr data-task="${t.id}"><td><a href="/ui/background-tasks/${urlPart(t.id)}/">${t.id}</a></td><td>${formatTime(t.createdAt)}</td><td>${formatTime(t.enqueuedAt)}</td><td>${formatTime(t.endedAt)}</td><td>${statusBadge(t.status)}</td><td><code>${t.callable}</code></td><td>${t.webhookId !== null ? html`<a href="/ui/webhooks/${urlPart(t.webhookId)}/">${t.webhookName ?? `#${t.webhookId}`}</a>` : '—'}</td><td>${t.event}</td><td>${t.objectType} ${t.objectId ?? ''}</td><td>${t.attemptCount}</td><td>${t.lastResponseStatus ?? '—'}</td></tr>`,
  )}</tbody></table>`;
}

function kv(rows: [string, SafeHtml | string | number | null | undefined][]): SafeHtml {
  return html`<table class="kv">${rows.map(([k, v]) => html`<tr><th>${k}</th><td>${v === null || v === undefined || v === '' ? '—' : v}</td></tr>`)}</table>`;
}

function requestText(req: RecordedRequest): string {
  return `${req.method} ${req.url}\n${Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${req.body}`;
}

function attemptBlock(a: TaskAttempt): SafeHtml {
  // Badged with the task statuses' words, so an attempt reads like the task it belongs to.
  const outcome = a.outcome === 'success' ? 'successful' : 'failed';
  return html`<div class="attempt" data-testid="attempt" data-attempt="${a.number}">
<h3>Attempt ${a.number} ${statusBadge(outcome)}</h3>
${kv([
    ['Started', formatTime(a.startedAt)],
    ['Duration', `${Math.round(a.durationMs * 10) / 10} ms`],
    ['Response status', a.responseStatus === null ? null : String(a.responseStatus)],
    ['Request', html`<pre data-testid="attempt-request">${requestText(a.request)}</pre>`],
    ['Response body', a.responseBody ? html`<pre data-testid="attempt-response">${a.responseBody}</pre>` : null],
    ['Error', a.error ? html`<pre class="error-log" data-testid="attempt-error">${a.error}</pre>` : null],
  ])}
</div>`;
}

function taskDetail(t: TaskDetail, csrf: string, isAdmin: boolean): SafeHtml {
  const args = t.arguments;
  const rendered = t.attempts.at(-1)?.request;
  const id = urlPart(t.id);
  const button = (action: string, label: string, cls = '') =>
    html`<form method="post" action="/ui/background-tasks/${id}/${action}" class="inline">${csrfField(csrf)}<button type="submit" class="${cls}" data-testid="task-${action}">${label}</button></form>`;
  const actions = isAdmin
    ? html`<div class="actions">${t.canRequeue ? button('requeue', 'Retry (requeue)') : ''}${t.canStop ? button('stop', 'Stop', 'secondary') : ''}${button('delete', 'Delete', 'danger')}</div>`
    : '';
  return html`${actions}
<h2>Task</h2>
${kv([
    ['Queue', t.queue],
    ['Status', statusBadge(t.status)],
    ['Callable', html`<code>${t.callable}</code>`],
    ['Created', formatTime(t.createdAt)],
    ['Enqueued', formatTime(t.enqueuedAt)],
    ['Ended', formatTime(t.endedAt)],
    ['Next attempt', t.status === 'scheduled' || t.status === 'queued' ? formatTime(t.nextAttemptAt) : null],
    ['Attempts', String(t.attemptCount)],
    ['webhook-id', t.messageId],
  ])}
<h2>Arguments</h2>
${kv([
    ['Webhook', t.webhookId !== null ? html`<a href="/ui/webhooks/${urlPart(t.webhookId)}/">${t.webhookName ?? `#${t.webhookId}`}</a>` : null],
    ['Event rule', t.eventRuleId !== null ? html`<a href="/ui/event-rules/${urlPart(t.eventRuleId)}/">${t.eventRuleName ?? `#${t.eventRuleId}`}</a>` : null],
    ['Event', t.event],
    ['Object', `${t.objectType} ${t.objectId ?? ''}`],
    ['Username', args.username === undefined ? null : String(args.username)],
    ['Request id', args.request_id === undefined ? null : String(args.request_id)],
    ['Timestamp', args.timestamp === undefined ? null : String(args.timestamp)],
  ])}
<details><summary>Event context (data and snapshots)</summary><pre data-testid="task-arguments">${prettyJson(args)}</pre></details>
${rendered ? html`<h2>Rendered request <span class="muted">(last attempt, secrets masked)</span></h2><pre data-testid="rendered-request">${requestText(rendered)}</pre>` : ''}
<h2>Error log</h2>
${t.errorLog ? html`<pre class="error-log" data-testid="error-log">${t.errorLog}</pre>` : html`<p class="muted" data-testid="error-log-empty">No errors.</p>`}
<h2>Attempts</h2>
${t.attempts.length === 0 ? html`<p class="muted">No attempts yet.</p>` : t.attempts.map(attemptBlock)}`;
}

export function registerTaskRoutes(app: FastifyInstance, backend: UiBackend): void {
  // As NetBox (and /api/core/background-tasks/): background tasks are for superusers only.
  app.addHook('preHandler', async (req, reply) => {
    const url = req.routeOptions.url ?? '';
    if (!url.startsWith('/ui/background-')) return;
    if (!authed(req).viewer.isSuperuser) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may see background tasks.');
  });

  app.get('/background-queues/', async (req, reply) => {
    const queues = await backend.tasks.queues();
    const body = html`<table class="list" data-testid="queues">
<thead><tr><th>Name</th>${TASK_STATUSES.map((s) => html`<th>${STATUS_TITLES[s]}</th>`)}<th>Oldest queued</th><th>Workers</th></tr></thead>
<tbody>${queues.map(
      (q) => html`<tr data-queue="${q.name}"><td>${q.name}</td>${TASK_STATUSES.map(
        (s) => html`<td class="count" data-status="${s}"><a href="/ui/background-queues/${urlPart(q.name)}/${s}/">${q.counts[s] ?? 0}</a></td>`,
      )}<td>${formatTime(q.oldestQueuedAt)}</td><td>${q.workers}</td></tr>`,
    )}</tbody></table>`;
    return sendPage(req, reply, { title: 'Background Queues', section: 'tasks', body });
  });

  app.get('/background-queues/:queue/:status/', async (req, reply) => {
    const { queue, status } = req.params as { queue: string; status: string };
    if (!QUEUE_NAME.test(queue)) return sendError(req, reply, 404, 'Not found', 'No such queue.');
    if (!isTaskStatus(status)) {
      // NetBox's (RQ's) names for the same lists lead to ours.
      const known = status.length <= 20 ? normaliseStatus(status) : null;
      if (known) return reply.redirect(`/ui/background-queues/${urlPart(queue)}/${known}/`);
      return sendError(req, reply, 404, 'Not found', 'No such task status.');
    }
    const { limit, offset } = pageParams(req.query);
    const { items, total } = await backend.tasks.list({ queue, status, limit, offset });
    const body = html`<p><a href="/ui/background-queues/">« Background Queues</a></p>${taskTable(items)}${pager(`/ui/background-queues/${urlPart(queue)}/${urlPart(status)}/`, total, limit, offset)}`;
    return sendPage(req, reply, { title: `${STATUS_TITLES[status]} tasks in ${queue}`, section: 'tasks', body });
  });

  app.get('/background-tasks/:id/', async (req, reply) => {
    const { viewer, session } = authed(req);
    const { id } = req.params as { id: string };
    const task = TASK_ID.test(id) ? await backend.tasks.get(id) : null;
    if (!task) return sendError(req, reply, 404, 'Not found', `No task ${id} exists.`);
    return sendPage(req, reply, { title: `Job ${task.id}`, section: 'tasks', body: taskDetail(task, session.csrfToken, viewer.isAdmin) });
  });

  for (const action of ['requeue', 'stop', 'delete'] as const) {
    app.post(`/background-tasks/:id/${action}`, async (req, reply) => {
      const { viewer } = authed(req);
      const { id } = req.params as { id: string };
      if (!viewer.isAdmin) return sendError(req, reply, 403, 'Forbidden', 'Only administrators may change background tasks.');
      if (!TASK_ID.test(id)) return sendError(req, reply, 404, 'Not found', `No task ${id} exists.`);
      const result = await backend.tasks[action](id);
      if (result.notFound) return sendError(req, reply, 404, 'Not found', `No task ${id} exists.`);
      flash(req, result.ok ? 'success' : 'error', result.message);
      return redirectTo(reply, action === 'delete' && result.ok ? '/ui/background-queues/' : `/ui/background-tasks/${urlPart(id)}/`);
    });
  }
}
