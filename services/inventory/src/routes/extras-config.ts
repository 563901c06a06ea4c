import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { authenticate } from '../auth/index.ts';
import { requirePermission, requireRead } from '../api/guards.ts';
import { forbidden, notFound } from '../api/errors.ts';
import { baseUrl, pageOf, paginated } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import type { ChangeSink } from '../changes/write.ts';
import { ensureWorker } from '../events/registry.ts';
import { renderErrorText } from '../events/templates.ts';
import { choicesOf } from '../models/choice-sets.ts';
import { environmentName } from '../models/config-contexts.ts';
import { relatedForTemplate } from '../models/related-managers.ts';
import { RELATED_KEY } from '../events/template-managers.ts';
import { JOURNAL_CONFIG_MODELS } from '../models/journal-config-models.ts';
import { fetchRow, type ReadCtx } from '../models/read.ts';
import { represent } from '../models/represent.ts';
import { model } from '../models/registry.ts';
import type { Row } from '../models/types.ts';
import { registerModelRoutes } from './objects.ts';

/**
 * /api/extras/: journal entries, config contexts, config templates and custom field choice sets (contact assignments
 * are registered with the other tenancy models), and NetBox's `render-config` on devices and virtual machines.
 */
export function extrasConfigRoutes(app: FastifyInstance, sink: ChangeSink): void {
  for (const m of JOURNAL_CONFIG_MODELS.filter((x) => x.app === 'extras')) registerModelRoutes(app, sink, m);
  renderConfigRoute(app, sink, 'device', '/api/dcim/devices/:id/render-config/', 'dcim');
  renderConfigRoute(app, sink, 'virtualmachine', '/api/virtualization/virtual-machines/:id/render-config/', 'virtualization');
  choicesRoute(app, sink);
}

/**
 * NetBox's `GET /api/extras/custom-field-choice-sets/<id>/choices/`: the set's choices (base list and extra choices) as
 * `{id: value, display: label}`, paginated, `?q=` matching value or label case-insensitively.
 */
function choicesRoute(app: FastifyInstance, sink: ChangeSink): void {
  app.get('/api/extras/custom-field-choice-sets/:id/choices/', { preHandler: requirePermission('extras.customfieldchoiceset', 'view'), schema: { tags: ['extras'], summary: 'List the choices of a custom field choice set' } }, async (req) => {
    const ctx: ReadCtx = { db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base: baseUrl(req) };
    const row = await fetchRow(ctx, model('customfieldchoiceset'), objectId(req.params));
    if (!row) throw notFound();
    const query = req.query as Record<string, unknown>;
    const q = typeof query.q === 'string' ? query.q.toLowerCase() : '';
    const all = choicesOf(row);
    const choices = q ? all.filter(([v, l]) => v.toLowerCase().includes(q) || l.toLowerCase().includes(q)) : all;
    const page = pageOf(query);
    return paginated(req, page, choices.length, choices.slice(page.offset, page.offset + page.limit).map(([id, display]) => ({ id, display })));
  });
}

/** The template an object renders with, as NetBox's get_config_template(): its own, its role's, then its platform's. */
async function preferredTemplate(ctx: ReadCtx, row: Row): Promise<number | null> {
  if (row.config_template_id !== null && row.config_template_id !== undefined) return Number(row.config_template_id);
  for (const [key, column] of [['devicerole', 'role_id'], ['platform', 'platform_id']] as const) {
    const id = row[column];
    if (id === null || id === undefined) continue;
    const r = await fetchRow(ctx, model(key), Number(id));
    if (r?.config_template_id !== null && r?.config_template_id !== undefined) return Number(r.config_template_id);
  }
  return null;
}

/** Whether the client asked for the raw text (DRF's TextRenderer: `Accept: text/plain` or `?format=txt`). */
function wantsText(req: FastifyRequest): boolean {
  const fmt = (req.query as Record<string, unknown> | undefined)?.format;
  if (fmt === 'txt') return true;
  const accept = String(req.headers.accept ?? '');
  const text = accept.indexOf('text/plain');
  const json = accept.indexOf('application/json');
  return text >= 0 && (json < 0 || text < json);
}

function renderConfigRoute(app: FastifyInstance, sink: ChangeSink, key: 'device' | 'virtualmachine', path: string, tag: string): void {
  const summary = `Render the preferred config template of a ${key === 'device' ? 'device' : 'virtual machine'}`;
  app.post(path, { preHandler: requirePermission(`${tag}.${key}`, 'view'), config: { shaped: true }, schema: { tags: [tag], summary } }, async (req, reply) => {
    // NetBox's TokenWritePermission: a write-enabled token (no model permission needed).
    const principal = await authenticate(req);
    if (!principal?.writeEnabled) throw forbidden();
    const m = model(key);
    const base = baseUrl(req);
    const ctx: ReadCtx = { db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base };
    const row = await fetchRow(ctx, m, objectId(req.params));
    if (!row) throw notFound();
    const body = req.body === undefined || req.body === null ? {} : req.body;
    if (typeof body !== 'object' || Array.isArray(body)) {
      throw new HttpError(400, { non_field_errors: [`Invalid data. Expected a dictionary, but got ${Array.isArray(body) ? 'list' : typeof body === 'string' ? 'str' : typeof body}.`] });
    }
    const data = body as Record<string, unknown>;
    const templates = model('configtemplate');
    let templateId: number | null;
    const override = data.config_template_id;
    if (override !== undefined && override !== null && override !== '' && override !== 0) {
      const id = typeof override === 'number' ? override : typeof override === 'string' && /^\d{1,15}$/.test(override) ? Number(override) : NaN;
      const found = Number.isSafeInteger(id) ? await fetchRow(ctx, templates, id) : undefined;
      if (!found) throw new HttpError(400, { error: `Config template with ID ${String(override).slice(0, 100)} not found.` });
      templateId = id;
    } else {
      templateId = await preferredTemplate(ctx, row);
      if (templateId === null) throw new HttpError(400, { error: `No config template found for this ${key}.` });
    }
    const template = (await fetchRow(ctx, templates, templateId))!;
    const [representation] = await represent(ctx, m, [row]);
    // NetBox: the object's config context, the request's data (less config_template_id), then the object itself.
    const context: Record<string, unknown> = { ...((representation!.config_context as Record<string, unknown>) ?? {}) };
    for (const [k, v] of Object.entries(data)) if (k !== 'config_template_id') context[k] = v;
    context[key] = representation;
    // Django's related managers (`device.interfaces.all()`, `device.site.racks.all()`): the relations the template names, loaded here.
    context[RELATED_KEY] = await relatedForTemplate(ctx, key, representation as Record<string, unknown>, String(template.template_code));
    const [result] = await ensureWorker(sink.deps).engine.pool.render([{ env: environmentName(template.environment_params), source: String(template.template_code) }], JSON.stringify(context));
    if (!result!.ok) {
      // NetBox answers a template error with 500; a template is the client's input, so this service answers 400 (see README).
      const e = result!.error;
      const detail = `An error occurred while rendering the template (line ${e.lineno ?? 'None'}): ${renderErrorText(e)}`;
      if (wantsText(req)) return reply.code(400).type('text/plain; charset=utf-8').send(detail);
      return reply.code(400).send({ detail });
    }
    if (wantsText(req)) return reply.type('text/plain; charset=utf-8').send(result!.out);
    const [brief] = await represent(ctx, templates, [template], true);
    return { configtemplate: brief, content: result!.out };
  });
}
