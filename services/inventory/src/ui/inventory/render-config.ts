import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ModelDef } from '../../models/types.ts';
import { authed, parseId, sendError, sendPage } from '../context.ts';
import { html } from '../html.ts';
import type { JournalPageParts } from './journal.ts';

/** Models with NetBox's Render Config tab: devices and virtual machines. */
export function rendersConfig(m: ModelDef): boolean {
  return m.key === 'device' || m.key === 'virtualmachine';
}

/**
 * NetBox's Render Config tab (`/dcim/devices/<id>/render-config/`): the object's config context and its preferred
 * config template rendered through the API's `render-config` (so the same permission and sandbox apply).
 */
export function registerRenderConfigPage(app: FastifyInstance, m: ModelDef, parts: Omit<JournalPageParts, 'tabs'> & { tabs(m: ModelDef, id: number, active: 'render-config'): ReturnType<JournalPageParts['tabs']> }): void {
  if (!rendersConfig(m)) return;
  app.get(`/${m.path}/:id/render-config/`, { schema: { hide: true } }, async (req: FastifyRequest, reply: FastifyReply) => {
    const id = parseId((req.params as Record<string, string>).id) ?? -1;
    const obj = id > 0 ? await parts.api(req, 'GET', `/api/${m.app}/${m.path}/${id}/`) : { status: 404, body: null };
    if (obj.status !== 200) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with ID ${id} exists.`);
    const r = await parts.api(req, 'POST', `/api/${m.app}/${m.path}/${id}/render-config/`, {});
    const template = r.status === 200 ? r.body.configtemplate : null;
    const body = html`${parts.menu(m, authed(req).viewer)}${parts.tabs(m, id, 'render-config')}
<h2>Context data</h2>
<pre data-testid="config-context">${JSON.stringify(obj.body.config_context ?? {}, null, 2)}</pre>
<h2>Rendered configuration${template ? html` <span class="muted">(template <a href="/extras/config-templates/${template.id}/">${template.display}</a>)</span>` : ''}</h2>
${r.status === 200 ? html`<pre data-testid="rendered-config">${r.body.content}</pre>` : html`<p class="error" data-testid="render-error">${parts.message(r.body)}</p>`}`;
    return sendPage(req, reply, { title: `${String(obj.body.display)} · Render config`, section: 'inventory', body });
  });
}
