import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MODELS } from '../../models/registry.ts';
import { objectTypeLabel } from '../../models/lookup.ts';
import { implementedFilters } from '../../models/filters.ts';
import type { ModelDef } from '../../models/types.ts';
import type { UiBackend } from '../backend.ts';
import { authed, flash, parseId, redirectTo, sendError, sendPage } from '../context.ts';
import { formList, formString, type FieldErrors, type FormBody } from '../forms.ts';
import { html, urlPart, type SafeHtml } from '../html.ts';
import { csrfField, formatTime, viewerMay, type Viewer } from '../layout.ts';
import { parseCsv } from './csv.ts';
import { parseYamlRecords } from './yaml.ts';
import { bodyFromCsv, bodyFromForm, control, editableFields, formValue, generalErrors, MAX_OPTIONS, targetOf, type Options } from './fields.ts';
import { cell, labelOf, pageOf } from './render.ts';
import { registerJournalPages } from './journal.ts';
import { registerRenderConfigPage, rendersConfig } from './render-config.ts';
import { takesJournal } from '../../models/journal.ts';
import { CABLE_TERMINATION_TYPES } from '../../models/cabling.ts';
import { registerChangelogPages } from './changelog.ts';
import { CABLE_IMPORT_FIELDS, resolveCableRecord, usesSideFields } from './cable-import.ts';
import { bulkCustomFieldData, cloneCustomFields, customFieldDefs, shownCustomFields, customFieldControls, customFieldData, customFieldErrors, customFieldText, customFieldTexts, formCustomFields, type FormCustomField } from './custom-fields.ts';
import { CABLE_ENDS, cableEndControls, cableEndFrom, cableEndOf, cableEndOptions, holderOf, refreshButton, terminationsOf, type CableEndForm } from './cable-form.ts';

export { INVENTORY_PREFIXES } from './prefixes.ts';

const HIDE = { hide: true };
/** Query parameters of the list page itself (NetBox's table: page, per_page, sort); the rest are API filters. */
const PAGE_PARAMS = new Set(['page', 'per_page', 'sort', 'columns', 'export']);
const MAX_PER_PAGE = 1000;
const MAX_IMPORT_CHARS = 5 * 1024 * 1024;

/** NetBox's default table columns for the core models; others show their brief fields. */
const DEFAULT_COLUMNS: Record<string, string[]> = {
  site: ['name', 'status', 'facility', 'region', 'group', 'tenant', 'description'],
  region: ['name', 'parent', 'site_count', 'description'],
  sitegroup: ['name', 'parent', 'site_count', 'description'],
  location: ['name', 'site', 'parent', 'status', 'tenant', 'rack_count', 'device_count', 'description'],
  rack: ['name', 'site', 'location', 'status', 'facility_id', 'tenant', 'u_height', 'device_count'],
  manufacturer: ['name', 'devicetype_count', 'platform_count', 'description'],
  devicetype: ['model', 'manufacturer', 'u_height', 'device_count'],
  devicerole: ['name', 'color', 'device_count', 'virtualmachine_count', 'description'],
  platform: ['name', 'manufacturer', 'device_count', 'virtualmachine_count', 'description'],
  device: ['name', 'status', 'tenant', 'site', 'location', 'rack', 'role', 'device_type', 'primary_ip'],
  interface: ['name', 'device', 'label', 'enabled', 'type', 'description'],
  ipaddress: ['address', 'vrf', 'status', 'role', 'tenant', 'assigned_object', 'dns_name', 'description'],
  prefix: ['prefix', 'status', 'vrf', 'tenant', 'site', 'vlan', 'is_pool', 'description'],
  vrf: ['name', 'rd', 'tenant', 'enforce_unique', 'description'],
  vlan: ['vid', 'name', 'site', 'group', 'status', 'tenant', 'description'],
  vlangroup: ['name', 'vlan_count', 'description'],
  tenant: ['name', 'group', 'description'],
  tenantgroup: ['name', 'parent', 'tenant_count', 'description'],
  tag: ['name', 'slug', 'color', 'description', 'tagged_items'],
  cluster: ['name', 'type', 'group', 'status', 'tenant', 'device_count', 'virtualmachine_count'],
  clustertype: ['name', 'cluster_count', 'description'],
  clustergroup: ['name', 'cluster_count', 'description'],
  virtualmachine: ['name', 'status', 'site', 'cluster', 'role', 'tenant', 'vcpus', 'memory', 'disk', 'primary_ip'],
  vminterface: ['name', 'virtual_machine', 'enabled', 'description'],
  virtualdisk: ['name', 'virtual_machine', 'size', 'description'],
  service: ['name', 'parent', 'protocol', 'ports', 'description'],
  cable: ['id', 'label', 'a_terminations', 'b_terminations', 'status', 'type', 'tenant', 'length'],
  consoleport: ['name', 'device', 'label', 'type', 'speed', 'cable', 'description'],
  consoleserverport: ['name', 'device', 'label', 'type', 'speed', 'cable', 'description'],
  powerport: ['name', 'device', 'label', 'type', 'maximum_draw', 'allocated_draw', 'cable', 'description'],
  poweroutlet: ['name', 'device', 'label', 'type', 'status', 'power_port', 'feed_leg', 'cable', 'description'],
  frontport: ['name', 'device', 'label', 'type', 'rear_port', 'rear_port_position', 'cable', 'description'],
  rearport: ['name', 'device', 'label', 'type', 'positions', 'cable', 'description'],
  provider: ['name', 'circuit_count', 'description'],
  providernetwork: ['name', 'provider', 'service_id', 'description'],
  circuittype: ['name', 'circuit_count', 'description'],
  circuit: ['cid', 'provider', 'type', 'status', 'tenant', 'termination_a', 'termination_z', 'description'],
  circuittermination: ['circuit', 'term_side', 'termination_type', 'termination', 'port_speed', 'cable', 'description'],
  virtualcircuittype: ['name', 'virtual_circuit_count', 'description'],
  virtualcircuit: ['cid', 'provider_network', 'type', 'status', 'tenant', 'description'],
  virtualcircuittermination: ['virtual_circuit', 'role', 'interface', 'description'],
  rir: ['name', 'is_private', 'aggregate_count', 'description'],
  aggregate: ['prefix', 'rir', 'tenant', 'date_added', 'description'],
  role: ['name', 'weight', 'description'],
  asn: ['asn', 'rir', 'tenant', 'description'],
  powerfeed: ['name', 'power_panel', 'rack', 'status', 'type', 'supply', 'voltage', 'amperage', 'cable'],
  powerpanel: ['name', 'site', 'location', 'powerfeed_count'],
  module: ['id', 'device', 'module_bay', 'module_type', 'status', 'serial', 'asset_tag'],
  modulebay: ['name', 'device', 'label', 'position', 'installed_module'],
  moduletype: ['model', 'manufacturer', 'part_number', 'description'],
  inventoryitem: ['name', 'device', 'parent', 'role', 'manufacturer', 'part_id', 'serial', 'discovered'],
  contact: ['name', 'title', 'phone', 'email', 'description'],
  customfield: ['name', 'label', 'type', 'object_types', 'required', 'description'],
  virtualchassis: ['name', 'domain', 'master', 'member_count', 'description'],
  devicebay: ['name', 'device', 'label', 'installed_device', 'description'],
  devicebaytemplate: ['name', 'device_type', 'label', 'description'],
};

/** Menu groups as NetBox's navigation (Organization, Devices, IPAM, Virtualization, Other). */
const MENU: Array<[string, string[]]> = [
  ['Organization', ['site', 'region', 'sitegroup', 'location', 'tenant', 'tenantgroup', 'contact', 'contactgroup', 'contactrole', 'contactassignment']],
  ['Racks & devices', ['rack', 'rackrole', 'racktype', 'device', 'devicerole', 'platform', 'devicetype', 'manufacturer', 'interface', 'macaddress', 'virtualdevicecontext', 'virtualchassis', 'devicebay', 'devicebaytemplate']],
  ['Modules & inventory', ['module', 'modulebay', 'moduletype', 'moduletypeprofile', 'inventoryitem', 'inventoryitemrole']],
  ['Power', ['powerpanel', 'powerfeed']],
  ['Connections', ['cable', 'consoleport', 'consoleserverport', 'powerport', 'poweroutlet', 'frontport', 'rearport']],
  ['IPAM', ['ipaddress', 'prefix', 'aggregate', 'rir', 'role', 'asn', 'vrf', 'routetarget', 'vlan', 'vlangroup', 'vlantranslationpolicy', 'vlantranslationrule', 'fhrpgroup', 'fhrpgroupassignment', 'service']],
  ['Circuits', ['circuit', 'circuittype', 'circuittermination', 'provider', 'provideraccount', 'providernetwork', 'virtualcircuit', 'virtualcircuittype', 'virtualcircuittermination']],
  ['VPN', ['l2vpn', 'l2vpntermination']],
  ['Wireless', ['wirelesslan', 'wirelesslangroup', 'wirelesslink']],
  ['Virtualization', ['virtualmachine', 'vminterface', 'virtualdisk', 'cluster', 'clustertype', 'clustergroup']],
  ['Other', ['tag', 'customfield', 'customfieldchoiceset', 'configcontext', 'configtemplate', 'journalentry', 'datasource', 'datafile']],
];

const BASE_KEYS = new Set(['id', 'url', 'display_url', 'display', 'tags', 'custom_fields', 'created', 'last_updated']);

type Q = Record<string, string | string[] | undefined>;

const listUrl = (m: ModelDef) => `/${m.app}/${m.path}/`;
const apiList = (m: ModelDef) => `/api/${m.app}/${m.path}/`;
// NetBox's plurals: "virtual chassis" stays as it is.
const plural = (m: ModelDef) => (/chassis$/.test(m.verboseName) ? m.verboseName : /(s|x)$/.test(m.verboseName) ? `${m.verboseName}es` : /[^aeiou]y$/.test(m.verboseName) ? `${m.verboseName.slice(0, -1)}ies` : `${m.verboseName}s`);
/** A field's label as the model declares it (`Primary IPv4`), else one derived from its name. */
const fieldLabel = (m: ModelDef, name: string) => m.fields.find((f) => f.name === name)?.label ?? labelOf(name);
const title = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function queryString(q: Q, drop: Set<string> = new Set(), extra: Record<string, string | number> = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (drop.has(k) || v === undefined) continue;
    for (const x of Array.isArray(v) ? v : [v]) p.append(k, x);
  }
  for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** The inventory pages of one app (`/dcim`, `/ipam`, …) or global search, inside a UI context with the login guard. */
export function registerInventoryPages(app: FastifyInstance, backend: UiBackend, prefix: string): void {
  if (prefix === '/search') {
    app.get('/', { schema: HIDE }, (req, reply) => searchPage(req, reply, backend));
    return;
  }
  installPermissionChecks(app, prefix);
  if (prefix === '/core') registerChangelogPages(app, (req, url) => api(req, backend, 'GET', url));
  for (const m of MODELS.filter((x) => `/${x.app}` === prefix)) registerModel(app, backend, m);
}

function api(req: FastifyRequest, backend: UiBackend, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, body?: unknown) {
  const host = typeof req.headers.host === 'string' ? req.headers.host : undefined;
  return backend.api(authed(req).apiToken, method, url, body, host);
}

/** A short message from an API error body. */
function apiMessage(body: any): string {
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    if (typeof body.detail === 'string') return body.detail;
    return Object.entries(body)
      .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(' ') : String(v)}`)
      .join('; ');
  }
  return typeof body === 'string' ? body.slice(0, 500) : 'The request failed.';
}

/** The inventory menu: NetBox's groups, only the models the viewer may view (a group left empty is hidden). */
function menu(current: ModelDef, viewer?: Viewer): SafeHtml {
  return html`<div class="menu" data-testid="inventory-menu">${MENU.map(([group, keys]) => {
    const shown = keys.map((k) => MODELS.find((x) => x.key === k)).filter((x): x is ModelDef => !!x && (!viewer || viewerMay(viewer, x.objectType, 'view')));
    return shown.length ? html`<span class="menu-group">${group}</span>${shown.map((x) => html`<a href="${listUrl(x)}" class="${x.key === current.key ? 'active' : ''}">${title(plural(x))}</a> `)}` : '';
  })}</div>`;
}

/**
 * The action a page of a model needs (NetBox's object permissions): its add and import pages add, edit pages (one object
 * or bulk) change, delete pages delete; every other page (list, object, changelog, journal, render config) views.
 */
function pageAction(method: string, rest: string): string {
  if (/^(add|import)\/$/.test(rest)) return 'add';
  if (/^(:id\/)?edit\/$/.test(rest)) return 'change';
  if (/^(:id\/)?delete\/$/.test(rest)) return method === 'GET' && rest === 'delete/' ? 'view' : 'delete';
  return 'view';
}

/** The change log's object type for the permission checks (not a registry model). */
const CHANGELOG = { objectType: 'core.objectchange', verboseName: 'object change', path: 'changelog' } as ModelDef;

/** Every page of a model checks the viewer's permission for its action first: 403 without it. */
function installPermissionChecks(app: FastifyInstance, prefix: string): void {
  const models = MODELS.filter((x) => `/${x.app}` === prefix);
  app.addHook('onRoute', (route) => {
    const url = route.url ?? route.path;
    // The change log pages (`/core/changelog/`) need the change log's view permission, as NetBox's.
    const m = url.startsWith('/core/changelog/') ? CHANGELOG : models.find((x) => url.startsWith(`${prefix}/${x.path}/`));
    if (!m) return;
    const action = m === CHANGELOG ? 'view' : pageAction(String(route.method), url.slice(`${prefix}/${m.path}/`.length));
    const check = async (req: FastifyRequest, reply: FastifyReply) => {
      if (viewerMay(authed(req).viewer, m.objectType, action)) return;
      const v = authed(req).viewer;
      // Without object permissions a refused change is the token's or the user's write flag.
      const writeRule = action !== 'view' && (!v.grants || v.writeEnabled === false);
      return sendError(req, reply, 403, 'Forbidden', writeRule ? 'Your token may not change objects (it is read-only, or your user has no write permission).' : `You do not have permission to ${action} ${plural(m)}.`);
    };
    const existing = route.preHandler;
    route.preHandler = existing ? [check, ...(Array.isArray(existing) ? existing : [existing])] : check;
  });
}

function registerModel(app: FastifyInstance, backend: UiBackend, m: ModelDef): void {
  const base = `/${m.path}`;
  app.get(`${base}/`, { schema: HIDE }, (req, reply) => listPage(req, reply, backend, m));
  app.get(`${base}/add/`, { schema: HIDE }, (req, reply) => editPage(req, reply, backend, m, null));
  app.post(`${base}/add/`, { schema: HIDE }, (req, reply) => saveObject(req, reply, backend, m, null));
  app.get(`${base}/import/`, { schema: HIDE }, (req, reply) => importPage(req, reply, m, '', 'csv', []));
  app.post(`${base}/import/`, { schema: HIDE }, (req, reply) => importObjects(req, reply, backend, m));
  app.post(`${base}/edit/`, { schema: HIDE }, (req, reply) => bulkEdit(req, reply, backend, m));
  app.post(`${base}/delete/`, { schema: HIDE }, (req, reply) => bulkDelete(req, reply, backend, m));
  app.get(`${base}/:id/`, { schema: HIDE }, (req, reply) => objectPage(req, reply, backend, m));
  app.get(`${base}/:id/changelog/`, { schema: HIDE }, (req, reply) => changelogPage(req, reply, backend, m));
  app.get(`${base}/:id/edit/`, { schema: HIDE }, (req, reply) => editPage(req, reply, backend, m, idOf(req)));
  app.post(`${base}/:id/edit/`, { schema: HIDE }, (req, reply) => saveObject(req, reply, backend, m, idOf(req)));
  app.get(`${base}/:id/delete/`, { schema: HIDE }, (req, reply) => deletePage(req, reply, backend, m));
  app.post(`${base}/:id/delete/`, { schema: HIDE }, (req, reply) => deleteObject(req, reply, backend, m));
  const parts = { menu, tabs, api: (req: FastifyRequest, method: 'GET' | 'POST', url: string, body?: unknown) => api(req, backend, method, url, body), message: apiMessage };
  registerJournalPages(app, backend, m, parts);
  registerRenderConfigPage(app, m, parts);
}

function idOf(req: FastifyRequest): number {
  const id = parseId((req.params as Record<string, string>).id);
  return id ?? -1;
}


/** Columns shown: `?columns=` (remembered for the session), else the session's choice, else NetBox's defaults. */
function columnsFor(req: FastifyRequest, m: ModelDef, available: string[]): string[] {
  const session = authed(req).session;
  const asked = formList(req.query as FormBody, 'columns').filter((c) => available.includes(c));
  if (asked.length) (session.columns ??= {})[m.key] = asked;
  const chosen = asked.length ? asked : session.columns?.[m.key] ?? DEFAULT_COLUMNS[m.key] ?? m.brief;
  return chosen.filter((c) => available.includes(c));
}

function availableColumns(m: ModelDef): string[] {
  const out = [...m.fields.map((f) => f.name), ...Object.keys(m.computed ?? {}).flatMap((k) => m.computed![k]!.map(([n]) => n)), ...Object.keys(m.counts ?? {})];
  if (m.key === 'ipaddress') out.push('assigned_object', 'family');
  if (m.key === 'service') out.push('parent');
  if (m.key === 'tag') out.push('tagged_items');
  if (m.taggable) out.push('tags');
  out.push('id', 'created', 'last_updated');
  return [...new Set(out)];
}

/** The filter form: quick search and the model's most used filters, under the API's filter names. */
function filterForm(m: ModelDef, q: Q): SafeHtml {
  const implemented = implementedFilters(m);
  const get = (k: string) => {
    const v = q[k];
    return Array.isArray(v) ? v[0] ?? '' : v ?? '';
  };
  const inputs: SafeHtml[] = [];
  for (const f of m.fields) {
    if (f.kind === 'choice' && implemented.has(f.name)) {
      inputs.push(html`<label>${f.label ?? labelOf(f.name)} <select name="${f.name}"><option value="">Any</option>${f.choices!.map((c) => html`<option value="${c.value}"${get(f.name) === c.value ? html` selected` : ''}>${c.label}</option>`)}</select></label> `);
    } else if (f.kind === 'fk' && implemented.has(`${f.name}_id`)) {
      inputs.push(html`<label>${f.label ?? labelOf(f.name)} (ID) <input type="text" name="${f.name}_id" value="${get(`${f.name}_id`)}" size="6"></label> `);
    }
  }
  if (m.taggable) inputs.push(html`<label>Tag <input type="text" name="tag" value="${get('tag')}" size="10"></label> `);
  return html`<form method="get" action="${listUrl(m)}" class="filters" data-testid="filter-form">
<label>Search <input type="search" name="q" value="${get('q')}" data-testid="quick-search"></label>
${inputs.slice(0, 8)}
<button type="submit">Apply</button> <a href="${listUrl(m)}">Reset</a>
</form>`;
}

async function listPage(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const { viewer, session } = authed(req);
  const q = req.query as Q;
  const num = (k: string, dflt: number) => {
    const v = q[k];
    return typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : dflt;
  };
  const perPage = Math.min(MAX_PER_PAGE, Math.max(1, num('per_page', 50)));
  const pageNo = Math.max(1, num('page', 1));
  const filters = queryString(q, PAGE_PARAMS, { limit: perPage, offset: (pageNo - 1) * perPage, ...(typeof q.sort === 'string' && q.sort ? { ordering: q.sort } : {}) });
  const r = await api(req, backend, 'GET', apiList(m) + filters);
  const available = availableColumns(m);
  const columns = columnsFor(req, m, available);
  const problems = r.status === 200 ? null : apiMessage(r.body);
  const rows: any[] = r.status === 200 ? r.body.results : [];
  const count: number = r.status === 200 ? r.body.count : 0;
  const sortLink = (c: string) => {
    const current = typeof q.sort === 'string' ? q.sort : '';
    const next = current === c ? `-${c}` : c;
    return `${listUrl(m)}${queryString(q, new Set(['sort', 'page']), { sort: next })}`;
  };
  const pages = Math.max(1, Math.ceil(count / perPage));
  const pageLink = (p: number) => `${listUrl(m)}${queryString(q, new Set(['page']), { page: p })}`;
  const mayAdd = viewerMay(viewer, m.objectType, 'add');
  const mayChange = viewerMay(viewer, m.objectType, 'change');
  const mayDelete = viewerMay(viewer, m.objectType, 'delete');
  const maySelect = mayChange || mayDelete;
  const first = m.key === 'devicetype' ? 'model' : m.key === 'ipaddress' ? 'address' : m.key === 'prefix' ? 'prefix' : m.key === 'vlan' ? 'vid' : 'name';
  const body = html`${menu(m, authed(req).viewer)}
${mayAdd ? html`<div class="actions"><a class="button" href="${listUrl(m)}add/" data-testid="add">Add</a> <a class="button secondary" href="${listUrl(m)}import/" data-testid="import">Import</a></div>` : ''}
${filterForm(m, q)}
${problems ? html`<ul class="errors" role="alert"><li>${problems}</li></ul>` : ''}
<form method="post" data-testid="bulk-form">${csrfField(session.csrfToken)}
<input type="hidden" name="return_url" value="${req.url}">
<table class="objects" data-testid="object-table"><thead><tr>${maySelect ? html`<th><span class="muted">☐</span></th>` : ''}${columns.map((c) => html`<th><a href="${sortLink(c)}">${fieldLabel(m, c)}</a></th>`)}</tr></thead>
<tbody>${rows.map(
    (o) => html`<tr data-id="${o.id}">${maySelect ? html`<td><input type="checkbox" name="pk" value="${o.id}" aria-label="select ${o.display}"></td>` : ''}${columns.map((c, i) =>
      i === 0 || c === first ? html`<td><a href="${pageOf(o) ?? '#'}">${o[c] === null || o[c] === undefined || o[c] === '' ? o.display : typeof o[c] === 'object' ? o.display : String(o[c])}</a></td>` : html`<td>${cell(o[c], c)}</td>`,
    )}</tr>`,
  )}</tbody></table>
${rows.length === 0 && !problems ? html`<p class="muted">No ${plural(m)} found.</p>` : ''}
${maySelect && rows.length ? html`<div class="actions">${mayChange ? html`<button type="submit" formaction="${listUrl(m)}edit/" data-testid="bulk-edit">Edit selected</button> ` : ''}${mayDelete ? html`<button type="submit" class="danger" formaction="${listUrl(m)}delete/" data-testid="bulk-delete">Delete selected</button>` : ''}</div>` : ''}
</form>
<p class="pager" data-testid="pager">${pageNo > 1 ? html`<a href="${pageLink(pageNo - 1)}">« Previous</a> ` : ''}<span class="muted">Page ${pageNo} of ${pages} · ${count} ${count === 1 ? m.verboseName : plural(m)}</span>${pageNo < pages ? html` <a href="${pageLink(pageNo + 1)}">Next »</a>` : ''}
 · per page ${[25, 50, 100, 250].map((n) => html`<a href="${listUrl(m)}${queryString(q, new Set(['per_page', 'page']), { per_page: n })}">${n}</a> `)}</p>
<details class="columns"><summary>Configure columns</summary><form method="get" action="${listUrl(m)}" data-testid="column-form">
${Object.entries(q)
  .filter(([k]) => k !== 'columns')
  .flatMap(([k, v]) => (Array.isArray(v) ? v : [v ?? '']).map((x) => html`<input type="hidden" name="${k}" value="${x}">`))}
${available.map((c) => html`<label class="inline-check"><input type="checkbox" name="columns" value="${c}"${columns.includes(c) ? html` checked` : ''}> ${labelOf(c)}</label> `)}
<div><button type="submit">Save columns</button></div></form></details>`;
  return sendPage(req, reply, { title: title(plural(m)), section: 'inventory', body }, problems ? 400 : 200);
}

/** Models whose objects point at `m` through a filterable reference: the "related objects" panel. */
function relatedOf(m: ModelDef): Array<{ model: ModelDef; filter: string }> {
  const out: Array<{ model: ModelDef; filter: string }> = [];
  for (const other of MODELS) {
    const implemented = implementedFilters(other);
    for (const f of other.fields) {
      if ((f.kind === 'fk' || f.kind === 'm2m') && f.fk === m.key && implemented.has(`${f.name}_id`) && !out.some((x) => x.model === other && x.filter === `${f.name}_id`)) {
        out.push({ model: other, filter: `${f.name}_id` });
      }
    }
  }
  if (m.key === 'interface') out.push({ model: MODELS.find((x) => x.key === 'ipaddress')!, filter: 'interface_id' });
  if (m.key === 'vminterface') out.push({ model: MODELS.find((x) => x.key === 'ipaddress')!, filter: 'vminterface_id' });
  if (m.key === 'device' || m.key === 'virtualmachine') out.push({ model: MODELS.find((x) => x.key === 'service')!, filter: m.key === 'device' ? 'device_id' : 'virtual_machine_id' });
  if (m.key === 'tag') for (const other of MODELS.filter((x) => x.taggable)) out.push({ model: other, filter: 'tag_id' });
  return out;
}

/** A related model's row label; a model related through more than one field names the field ("Devices (primary IPv4)", "Device bays (installed device)"). */
function relatedLabel(m: ModelDef, x: { model: ModelDef; filter: string }, all: Array<{ model: ModelDef; filter: string }>): string {
  const name = title(plural(x.model));
  // Named by the field unless it is the only one, or the one named after this model (a device's device bays).
  if (all.filter((y) => y.model === x.model).length === 1 || x.filter === `${m.key}_id`) return name;
  const field = fieldLabel(x.model, x.filter.replace(/_id$/, ''));
  return `${name} (${field.charAt(0).toLowerCase()}${field.slice(1)})`;
}

function tabs(m: ModelDef, id: number, active: 'object' | 'changelog' | 'journal' | 'render-config'): SafeHtml {
  const render = rendersConfig(m) ? html`<a href="${listUrl(m)}${id}/render-config/" class="${active === 'render-config' ? 'active' : ''}" data-testid="render-config-tab">Render config</a>` : '';
  const journal = takesJournal(m) ? html`<a href="${listUrl(m)}${id}/journal/" class="${active === 'journal' ? 'active' : ''}" data-testid="journal-tab">Journal</a>` : '';
  return html`<div class="tabs"><a href="${listUrl(m)}${id}/" class="${active === 'object' ? 'active' : ''}">${title(m.verboseName)}</a>${render}${journal}<a href="${listUrl(m)}${id}/changelog/" class="${active === 'changelog' ? 'active' : ''}" data-testid="changelog-tab">Changelog</a></div>`;
}

async function objectPage(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const { viewer } = authed(req);
  const id = idOf(req);
  const r = id > 0 ? await api(req, backend, 'GET', `${apiList(m)}${id}/`) : { status: 404, body: null };
  if (r.status !== 200) return sendError(req, reply, r.status === 404 ? 404 : r.status, 'Not found', r.status === 404 ? `No ${m.verboseName} with ID ${id} exists.` : apiMessage(r.body));
  const o = r.body;
  const counts = new Set(Object.keys(m.counts ?? {}));
  const attrs = Object.entries(o).filter(([k]) => !BASE_KEYS.has(k) && !counts.has(k));
  const related = await Promise.all(
    relatedOf(m).filter((x) => viewerMay(viewer, x.model.objectType, 'view')).map(async (x) => {
      const res = await api(req, backend, 'GET', `${apiList(x.model)}?${x.filter}=${id}&limit=1&brief=1`);
      return { ...x, count: res.status === 200 ? Number(res.body.count) : 0 };
    }),
  );
  const cfDefs = m.taggable ? await customFieldDefs((url) => api(req, backend, 'GET', url), m.objectType) : [];
  const shownCfs = Object.keys(o.custom_fields ?? {}).length ? shownCustomFields(cfDefs, o.custom_fields) : [];
  const cloneFields = m.fields.filter((f) => !f.unique && f.name !== 'name' && f.name !== 'slug' && f.kind !== 'm2m' && f.kind !== 'json' && f.kind !== 'text' && o[f.name] !== null && o[f.name] !== undefined && o[f.name] !== '');
  // NetBox's clone: the model's clone fields and the custom fields marked cloneable (editable ones: the form's initial values).
  const cloneCfs = cloneCustomFields(cfDefs.filter((f) => f.editable === 'yes'), o.custom_fields);
  const clone = `${listUrl(m)}add/${queryString({ ...Object.fromEntries(cloneFields.map((f) => [f.name, formValue(f, o[f.name]) as string])), ...cloneCfs })}`;
  const buttons = [
    viewerMay(viewer, m.objectType, 'change') ? html`<a class="button" href="${listUrl(m)}${id}/edit/" data-testid="edit">Edit</a> ` : '',
    viewerMay(viewer, m.objectType, 'add') ? html`<a class="button secondary" href="${clone}" data-testid="clone">Clone</a>` : '',
    viewerMay(viewer, 'dcim.cable', 'add') ? connectLink(m, o) : '',
    viewerMay(viewer, m.objectType, 'delete') ? html` <a class="button danger" href="${listUrl(m)}${id}/delete/" data-testid="delete">Delete</a>` : '',
  ].filter((b) => b !== '');
  const body = html`${menu(m, authed(req).viewer)}
${buttons.length ? html`<div class="actions">${buttons}</div>` : ''}
${tabs(m, id, 'object')}
<div class="panels">
<table class="kv" data-testid="attributes"><tbody>${attrs.map(([k, v]) => html`<tr><th>${fieldLabel(m, k)}</th><td data-field="${k}">${cell(v, k)}</td></tr>`)}</tbody></table>
<div>
${m.taggable ? html`<h2>Tags</h2><p data-testid="tags">${(o.tags ?? []).length ? (o.tags as any[]).map((t) => html`<a class="badge badge-gray" href="/extras/tags/${t.id}/">${t.name}</a> `) : html`<span class="muted">No tags</span>`}</p>` : ''}
${shownCfs.length ? html`<h2>Custom fields</h2><table class="kv" data-testid="custom-field-values">${shownCfs.map((f) => html`<tr><th>${f.label}</th><td>${cell(f.value)}</td></tr>`)}</table>` : ''}
${counts.size || related.length ? html`<h2>Related objects</h2><table class="kv" data-testid="related">${related.map((x) => html`<tr><th><a href="${listUrl(x.model)}?${x.filter}=${id}">${relatedLabel(m, x, related)}</a></th><td>${x.count}</td></tr>`)}</table>` : ''}
<p class="muted">Created ${formatTime(o.created)} · Updated ${formatTime(o.last_updated)}</p>
</div></div>`;
  return sendPage(req, reply, { title: String(o.display), section: 'inventory', body });
}

/** NetBox's "Connect" button of a cable termination without a cable: the cable form with this end filled in. */
function connectLink(m: ModelDef, o: any): SafeHtml | string {
  if (!(CABLE_TERMINATION_TYPES as readonly string[]).includes(m.objectType) || o.cable || o.mark_connected) return '';
  const holder = holderOf(m.objectType);
  const parent = o[holder.key === 'powerpanel' ? 'power_panel' : holder.key]?.id;
  const q = new URLSearchParams({ a_terminations_type: m.objectType, a_terminations: String(o.id), ...(parent ? { [`termination_a_${holder.field}`]: String(parent) } : {}) });
  return html` <a class="button secondary" href="/dcim/cables/add/?${q.toString()}" data-testid="connect">Connect</a>`;
}

/** Keys whose values differ between two snapshots: NetBox's change diff. */
function diffKeys(pre: Record<string, unknown> | null, post: Record<string, unknown> | null): string[] {
  const keys = new Set([...Object.keys(pre ?? {}), ...Object.keys(post ?? {})]);
  return [...keys].filter((k) => JSON.stringify(pre?.[k] ?? null) !== JSON.stringify(post?.[k] ?? null));
}

async function changelogPage(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const id = idOf(req);
  const obj = id > 0 ? await api(req, backend, 'GET', `${apiList(m)}${id}/?brief=1`) : { status: 404, body: null };
  const r = await api(req, backend, 'GET', `/api/core/object-changes/?changed_object_type=${urlPart(m.objectType)}&changed_object_id=${id > 0 ? id : 0}&limit=200&ordering=-time`);
  const changes: any[] = r.status === 200 ? r.body.results : [];
  if (obj.status !== 200 && changes.length === 0) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with ID ${id} exists.`);
  const name = obj.status === 200 ? String(obj.body.display) : String(changes[0]?.object_repr ?? id);
  const body = html`${menu(m, authed(req).viewer)}${obj.status === 200 ? tabs(m, id, 'changelog') : ''}
<table data-testid="changelog"><thead><tr><th>Time</th><th>User</th><th>Action</th><th>Changes</th></tr></thead><tbody>
${changes.map((c) => {
  const keys = diffKeys(c.prechange_data, c.postchange_data).filter((k) => k !== 'last_updated');
  return html`<tr><td>${formatTime(c.time)}</td><td>${c.user_name}</td><td>${c.action?.label ?? c.action}</td><td>${keys.length ? html`<ul class="diff">${keys.map((k) => html`<li><strong>${k}</strong>: <del>${JSON.stringify(c.prechange_data?.[k] ?? null)}</del> → <ins>${JSON.stringify(c.postchange_data?.[k] ?? null)}</ins></li>`)}</ul>` : html`<span class="muted">—</span>`}</td></tr>`;
})}
</tbody></table>${changes.length === 0 ? html`<p class="muted">No changes recorded.</p>` : ''}`;
  return sendPage(req, reply, { title: `${name} · Changelog`, section: 'inventory', body });
}

/** Options for the related-object pickers of a form: a select when there are few enough, else an id field. */
async function loadOptions(req: FastifyRequest, backend: UiBackend, m: ModelDef): Promise<Options> {
  const out: Options = new Map();
  // A generic reference's type: the object types that take part (contacts, journaling), by NetBox's label.
  const g = m.genericRef;
  if (g) out.set(g.typeColumn, MODELS.filter((x) => g.supported(x)).map((x) => ({ value: x.objectType, label: objectTypeLabel(x.objectType) })).sort((a, b) => a.label.localeCompare(b.label)));
  await Promise.all(
    editableFields(m).map(async (f) => {
      const target = targetOf(f);
      if (!target) return;
      const r = await api(req, backend, 'GET', `${apiList(target)}?brief=1&limit=${MAX_OPTIONS}`);
      if (r.status !== 200 || r.body.count > MAX_OPTIONS) return void out.set(f.name, null);
      out.set(
        f.name,
        // A list the API names by an attribute (config contexts' tags by slug) offers that attribute's values.
        (r.body.results as any[]).map((x) => ({ value: String(f.itemAttribute ? x[f.itemAttribute] : x.id), label: String(x.display) })),
      );
    }),
  );
  return out;
}

/** The custom fields a model's forms edit (models with tags take custom fields). */
function customFieldsFor(req: FastifyRequest, backend: UiBackend, m: ModelDef): Promise<FormCustomField[]> {
  return m.taggable ? formCustomFields((url) => api(req, backend, 'GET', url), m.objectType) : Promise.resolve([]);
}

async function tagOptions(req: FastifyRequest, backend: UiBackend): Promise<Array<{ value: string; label: string }>> {
  const r = await api(req, backend, 'GET', `/api/extras/tags/?brief=1&limit=${MAX_OPTIONS}`);
  return r.status === 200 ? (r.body.results as any[]).map((t) => ({ value: String(t.id), label: String(t.display) })) : [];
}

/** A cable form's ends from the form's values (`a_terminations_type`, `termination_a_<holder>`, `a_terminations`). */
function cableEndsOf(values: Record<string, string | string[]>): [CableEndForm, CableEndForm] {
  return [cableEndFrom(values, 'a'), cableEndFrom(values, 'b')];
}

/** The form values that hold a cable's ends. */
function cableEndValues(ends: CableEndForm[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  CABLE_ENDS.forEach((end, i) => {
    const e = ends[i]!;
    out[`${end}_terminations_type`] = e.type;
    out[`termination_${end}_${holderOf(e.type).field}`] = e.parent;
    out[`${end}_terminations`] = e.ids;
  });
  return out;
}

async function renderForm(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef, id: number | null, values: Record<string, string | string[]>, errors: FieldErrors, status = 200) {
  const { session } = authed(req);
  const options = await loadOptions(req, backend, m);
  const tags = m.taggable ? await tagOptions(req, backend) : [];
  const cfs = await customFieldsFor(req, backend, m);
  const action = id === null ? `${listUrl(m)}add/` : `${listUrl(m)}${id}/edit/`;
  const fields = editableFields(m);
  // Cables: each end as NetBox's form (type, holder, terminations) instead of the API's JSON lists.
  const ends = m.key === 'cable' ? cableEndsOf(values) : undefined;
  const endControls = ends
    ? await Promise.all(
        CABLE_ENDS.map(async (end, i) => cableEndControls(end, ends[i]!, await cableEndOptions((url) => api(req, backend, 'GET', url), ends[i]!), errors, ends[1 - i])),
      )
    : undefined;
  const body = html`${menu(m, authed(req).viewer)}
${generalErrors(errors, [...fields.map((f) => f.name), 'tags', ...cfs.map((f) => `cf_${f.name}`), ...(ends ? ['a_terminations_type', 'b_terminations_type'] : [])])}
<form method="post" action="${action}" class="edit-form" novalidate data-testid="object-form">${csrfField(session.csrfToken)}
${endControls ? html`<div class="cable-ends">${endControls[0]}${endControls[1]}<div>${refreshButton}</div></div>` : ''}
${fields.map((f) => (endControls && (f.name === 'a_terminations' || f.name === 'b_terminations') ? '' : control(f, values[f.name] ?? (f.kind === 'm2m' ? [] : f.default !== undefined && f.default !== null && id === null ? formValue(f, f.default) : ''), errors, options)))}
${m.taggable ? control({ name: 'tags', column: '', kind: 'm2m', fk: 'tag', label: 'Tags' }, values.tags ?? [], errors, new Map([['tags', tags]])) : ''}
${customFieldControls(cfs, Object.fromEntries(cfs.filter((f) => values[`cf_${f.name}`] !== undefined).map((f) => [f.name, values[`cf_${f.name}`]!])), errors)}
<div class="actions"><button type="submit" data-testid="save">${id === null ? 'Create' : 'Save'}</button> <a class="button secondary" href="${id === null ? listUrl(m) : `${listUrl(m)}${id}/`}">Cancel</a></div>
</form>`;
  return sendPage(req, reply, { title: id === null ? `Add a new ${m.verboseName}` : `Editing ${m.verboseName}`, section: 'inventory', body }, status);
}

async function editPage(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef, id: number | null) {
  const values: Record<string, string | string[]> = {};
  if (id === null) {
    // The model's defaults first, as NetBox's forms show them (an interface's `enabled` ticked, a status chosen):
    // a form sends no value for an unticked box, so without this a new object would take `false` for such a field.
    for (const f of editableFields(m)) if (f.default !== undefined && f.default !== null && f.kind !== 'json') values[f.name] = formValue(f, f.default);
    // NetBox's clone and prefill: initial values from the query string.
    for (const f of editableFields(m)) {
      const v = (req.query as Q)[f.name];
      if (v !== undefined) values[f.name] = f.kind === 'm2m' ? (Array.isArray(v) ? v : [v]) : Array.isArray(v) ? v[0] ?? '' : v;
    }
    for (const f of await customFieldsFor(req, backend, m)) {
      const v = (req.query as Q)[`cf_${f.name}`];
      if (v !== undefined) values[`cf_${f.name}`] = f.type === 'multiselect' || f.type === 'multiobject' ? (Array.isArray(v) ? v : [v]) : Array.isArray(v) ? v[0] ?? '' : v;
    }
    // NetBox's cable add links: `?a_terminations_type=dcim.interface&a_terminations=7&b_terminations_type=dcim.interface`.
    if (m.key === 'cable') Object.assign(values, cableEndValues(cableEndsOf(req.query as Record<string, string | string[]>)));
    return renderForm(req, reply, backend, m, null, values, {});
  }
  const r = id > 0 ? await api(req, backend, 'GET', `${apiList(m)}${id}/`) : { status: 404, body: null };
  if (r.status !== 200) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with ID ${id} exists.`);
  for (const f of editableFields(m)) values[f.name] = formValue(f, r.body[f.name]);
  if (m.taggable) values.tags = (r.body.tags ?? []).map((t: any) => String(t.id));
  for (const f of await customFieldsFor(req, backend, m)) values[`cf_${f.name}`] = customFieldText(f, r.body.custom_fields?.[f.name]);
  if (m.key === 'cable') Object.assign(values, cableEndValues([cableEndOf(r.body, 'a'), cableEndOf(r.body, 'b')]));
  return renderForm(req, reply, backend, m, id, values, {});
}

async function saveObject(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef, id: number | null) {
  const form = (req.body ?? {}) as FormBody;
  const { body, errors } = bodyFromForm(m, form);
  if (m.taggable) body.tags = formList(form, 'tags').filter((t) => /^\d+$/.test(t)).map(Number);
  const typed: Record<string, string | string[]> = {};
  for (const f of editableFields(m)) typed[f.name] = f.kind === 'm2m' || (f.kind === 'json' && f.name === 'object_types') ? formList(form, f.name) : formString(form, f.name);
  typed.tags = formList(form, 'tags');
  // Custom fields: typed from the form; on create a blank one is left out, so the field's default applies.
  const cfs = await customFieldsFor(req, backend, m);
  if (cfs.length) {
    const texts = customFieldTexts(cfs, form);
    for (const f of cfs) typed[`cf_${f.name}`] = texts[f.name]!;
    const data = customFieldData(cfs, texts, errors);
    body.custom_fields = id === null ? Object.fromEntries(Object.entries(data).filter(([, v]) => v !== null)) : data;
  }
  if (m.key === 'cable') {
    // The ends come as NetBox's form sends them; the API takes them as lists of {object_type, object_id}.
    const ends = cableEndsOf(form as Record<string, string | string[]>);
    Object.assign(typed, cableEndValues(ends));
    delete errors.a_terminations;
    delete errors.b_terminations;
    CABLE_ENDS.forEach((end, i) => {
      const list = terminationsOf(ends[i]!, end, errors);
      if (list) body[`${end}_terminations`] = list;
    });
    // "Update choices": show the holders' terminations for what was chosen, save nothing.
    if (formString(form, '_refresh') === '1') return renderForm(req, reply, backend, m, id, typed, errors);
  }
  if (Object.keys(errors).length) return renderForm(req, reply, backend, m, id, typed, errors, 400);
  if (id !== null && id < 0) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with this ID exists.`);
  const r = await api(req, backend, id === null ? 'POST' : 'PATCH', id === null ? apiList(m) : `${apiList(m)}${id}/`, body);
  if (r.status === 200 || r.status === 201) {
    flash(req, 'success', `${id === null ? 'Created' : 'Modified'} ${m.verboseName} ${r.body.display}`);
    return redirectTo(reply, pageOf(r.body) ?? listUrl(m));
  }
  if (r.status === 404) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with ID ${id} exists.`);
  const apiErrors: FieldErrors = r.body && typeof r.body === 'object' && !Array.isArray(r.body) ? Object.fromEntries(Object.entries(r.body).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : [String(v)]])) : { non_field_errors: [apiMessage(r.body)] };
  if (apiErrors.custom_fields) {
    const messages = apiErrors.custom_fields;
    delete apiErrors.custom_fields;
    for (const [k, v] of Object.entries(customFieldErrors(cfs, messages))) (apiErrors[k] ??= []).push(...v);
  }
  return renderForm(req, reply, backend, m, id, typed, apiErrors, r.status >= 400 && r.status < 500 ? r.status : 400);
}

async function deletePage(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const id = idOf(req);
  const r = id > 0 ? await api(req, backend, 'GET', `${apiList(m)}${id}/?brief=1`) : { status: 404, body: null };
  if (r.status !== 200) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with ID ${id} exists.`);
  const { session } = authed(req);
  const body = html`<p data-testid="confirm-text">Are you sure you want to delete ${m.verboseName} <strong>${r.body.display}</strong>?</p>
<form method="post" action="${listUrl(m)}${id}/delete/">${csrfField(session.csrfToken)}<input type="hidden" name="confirm" value="true">
<div class="actions"><button type="submit" class="danger" data-testid="confirm-delete">Delete</button> <a class="button secondary" href="${listUrl(m)}${id}/">Cancel</a></div></form>`;
  return sendPage(req, reply, { title: `Delete ${m.verboseName}?`, section: 'inventory', body });
}

async function deleteObject(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const id = idOf(req);
  if (formString((req.body ?? {}) as FormBody, 'confirm') !== 'true') return redirectTo(reply, `${listUrl(m)}${id}/delete/`);
  const r = id > 0 ? await api(req, backend, 'DELETE', `${apiList(m)}${id}/`) : { status: 404, body: null };
  if (r.status === 204) {
    flash(req, 'success', `Deleted ${m.verboseName} ${id}`);
    return redirectTo(reply, listUrl(m));
  }
  if (r.status === 404) return sendError(req, reply, 404, 'Not found', `No ${m.verboseName} with ID ${id} exists.`);
  flash(req, 'error', apiMessage(r.body));
  return redirectTo(reply, `${listUrl(m)}${id}/`);
}

function selectedIds(form: FormBody): number[] {
  return [...new Set(formList(form, 'pk').filter((v) => /^[1-9]\d{0,14}$/.test(v)).map(Number))].slice(0, MAX_PER_PAGE);
}

async function bulkEdit(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const form = (req.body ?? {}) as FormBody;
  const ids = selectedIds(form);
  if (!ids.length) {
    flash(req, 'info', `No ${plural(m)} were selected.`);
    return redirectTo(reply, listUrl(m));
  }
  let errors: FieldErrors = {};
  const cfs = await customFieldsFor(req, backend, m);
  if (formString(form, '_apply') === 'true') {
    const { body, errors: formErrors } = bodyFromForm(m, form, { partial: true });
    errors = formErrors;
    // Custom fields: the given ones set, "Set null" clears; the API merges them into each object's data.
    const cfData = bulkCustomFieldData(cfs, form, errors);
    if (Object.keys(cfData).length) body.custom_fields = cfData;
    if (!Object.keys(errors).length) {
      if (!Object.keys(body).length) errors = { non_field_errors: ['Nothing to change: set at least one field.'] };
      else {
        const r = await api(req, backend, 'PATCH', apiList(m), ids.map((id) => ({ id, ...body })));
        if (r.status === 200) {
          flash(req, 'success', `Updated ${ids.length} ${ids.length === 1 ? m.verboseName : plural(m)}`);
          return redirectTo(reply, listUrl(m));
        }
        const list = Array.isArray(r.body) ? r.body : [r.body];
        errors = {};
        list.forEach((e: any, i: number) => {
          if (e && typeof e === 'object') for (const [k, v] of Object.entries(e)) (errors[k] ??= []).push(...(Array.isArray(v) ? v : [v]).map((x) => `${ids[i] !== undefined && list.length > 1 ? `#${ids[i]}: ` : ''}${String(x)}`));
        });
      }
    }
  }
  const { session } = authed(req);
  const options = await loadOptions(req, backend, m);
  const fields = editableFields(m).filter((f) => !f.unique && f.kind !== 'json' || f.name === 'ports');
  const body = html`${menu(m, authed(req).viewer)}<p>Editing ${ids.length} ${ids.length === 1 ? m.verboseName : plural(m)}: blank fields stay as they are; tick "Set null" to clear one.</p>
${generalErrors(errors, [...fields.map((f) => f.name), ...cfs.map((f) => `cf_${f.name}`)])}
<form method="post" action="${listUrl(m)}edit/" class="edit-form" data-testid="bulk-edit-form">${csrfField(session.csrfToken)}<input type="hidden" name="_apply" value="true">
${ids.map((id) => html`<input type="hidden" name="pk" value="${id}">`)}
${fields.map((f) =>
  f.kind === 'boolean'
    ? html`<div class="field" data-field="${f.name}"><label for="f-${f.name}">${f.label ?? labelOf(f.name)}</label><select id="f-${f.name}" name="${f.name}"><option value="">—— unchanged ——</option><option value="true">Yes</option><option value="false">No</option></select></div>`
    : html`${control({ ...f, required: false }, formString(form, f.name), errors, options)}${f.nullable || f.kind === 'm2m' ? html`<label class="inline-check"><input type="checkbox" name="_nullify_${f.name}"> Set null</label>` : ''}`,
)}
${customFieldControls(cfs, customFieldTexts(cfs, form), errors, true)}
<div class="actions"><button type="submit" data-testid="apply">Apply</button> <a class="button secondary" href="${listUrl(m)}">Cancel</a></div></form>`;
  return sendPage(req, reply, { title: `Editing ${ids.length} ${plural(m)}`, section: 'inventory', body }, Object.keys(errors).length ? 400 : 200);
}

async function bulkDelete(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const form = (req.body ?? {}) as FormBody;
  const ids = selectedIds(form);
  if (!ids.length) {
    flash(req, 'info', `No ${plural(m)} were selected.`);
    return redirectTo(reply, listUrl(m));
  }
  if (formString(form, '_confirm') === 'true') {
    const r = await api(req, backend, 'DELETE', apiList(m), ids.map((id) => ({ id })));
    if (r.status === 204) flash(req, 'success', `Deleted ${ids.length} ${ids.length === 1 ? m.verboseName : plural(m)}`);
    else flash(req, 'error', apiMessage(r.body));
    return redirectTo(reply, listUrl(m));
  }
  const r = await api(req, backend, 'GET', `${apiList(m)}?brief=1&limit=${ids.length}${ids.map((id) => `&id=${id}`).join('')}`);
  const shown: any[] = r.status === 200 ? r.body.results : [];
  const { session } = authed(req);
  const body = html`${menu(m, authed(req).viewer)}<p data-testid="confirm-text">Are you sure you want to delete these ${shown.length} ${plural(m)}?</p>
<ul>${shown.map((o) => html`<li>${o.display}</li>`)}</ul>
<form method="post" action="${listUrl(m)}delete/">${csrfField(session.csrfToken)}<input type="hidden" name="_confirm" value="true">
${shown.map((o) => html`<input type="hidden" name="pk" value="${o.id}">`)}
<div class="actions"><button type="submit" class="danger" data-testid="confirm-delete">Delete ${shown.length} ${plural(m)}</button> <a class="button secondary" href="${listUrl(m)}">Cancel</a></div></form>`;
  return sendPage(req, reply, { title: `Delete ${plural(m)}?`, section: 'inventory', body });
}

function importPage(req: FastifyRequest, reply: FastifyReply, m: ModelDef, data: string, format: string, errors: string[], status = 200) {
  const { session } = authed(req);
  // Cables are imported by their ends' device, type and name (NetBox's CableImportForm), not the API's termination lists.
  const cable = m.key === 'cable';
  const fields = cable ? editableFields(m).filter((f) => f.name !== 'a_terminations' && f.name !== 'b_terminations') : editableFields(m);
  const required = cable ? CABLE_IMPORT_FIELDS.filter((f) => f.required).map((f) => f.name) : m.fields.filter((f) => f.required).map((f) => f.name);
  const body = html`${menu(m, authed(req).viewer)}
${errors.length ? html`<ul class="errors" role="alert" data-testid="import-errors">${errors.map((e) => html`<li>${e}</li>`)}</ul>` : ''}
<form method="post" action="${listUrl(m)}import/" class="edit-form" data-testid="import-form">${csrfField(session.csrfToken)}
<div class="field"><label for="f-format">Format</label><select id="f-format" name="format">${['csv', 'json', 'yaml'].map((f) => html`<option value="${f}"${f === format ? html` selected` : ''}>${f.toUpperCase()}</option>`)}</select></div>
<div class="field"><label for="f-data">Data</label><textarea id="f-data" name="data" rows="14" spellcheck="false">${data}</textarea>
<div class="help">CSV: a header row of field names (required: ${required.join(', ')}); related objects by ID or name, tags by slug${m.taggable ? html`, custom fields as <code>cf_&lt;name&gt;</code> columns` : ''}. JSON: a list of objects as the REST API takes them. YAML: the same as a list, or one object per document (separated by <code>---</code>).</div></div>
<div class="actions"><button type="submit" data-testid="submit-import">Import</button> <a class="button secondary" href="${listUrl(m)}">Cancel</a></div>
</form>
<h2>Fields</h2><table><thead><tr><th>Field</th><th>Required</th><th>Accepted values</th></tr></thead><tbody>${cable ? CABLE_IMPORT_FIELDS.map((f) => html`<tr><td><code>${f.name}</code></td><td>${f.required ? '✓' : ''}</td><td>${f.help}</td></tr>`) : ''}${fields.map(
    (f) => html`<tr><td><code>${f.name}</code></td><td>${f.required ? '✓' : ''}</td><td>${f.choices ? f.choices.map((c) => c.value).join(', ') : f.kind === 'fk' ? `${targetOf(f)!.verboseName} (ID or name)` : f.kind}</td></tr>`,
  )}</tbody></table>`;
  return sendPage(req, reply, { title: `Import ${plural(m)}`, section: 'inventory', body }, status);
}

async function importObjects(req: FastifyRequest, reply: FastifyReply, backend: UiBackend, m: ModelDef) {
  const form = (req.body ?? {}) as FormBody;
  const data = formString(form, 'data');
  const chosen = formString(form, 'format');
  const format = chosen === 'json' || chosen === 'yaml' ? chosen : 'csv';
  if (data.length > MAX_IMPORT_CHARS) return importPage(req, reply, m, '', format, [`The data is too large: at most ${MAX_IMPORT_CHARS} characters.`], 400);
  let records: Record<string, unknown>[] = [];
  const errors: string[] = [];
  if (format === 'json') {
    try {
      const parsed = JSON.parse(data);
      records = Array.isArray(parsed) ? parsed : [parsed];
      if (records.some((r) => !r || typeof r !== 'object' || Array.isArray(r))) errors.push('Each JSON record must be an object.');
    } catch (err) {
      errors.push(`Invalid JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
  } else if (format === 'yaml') {
    const parsed = parseYamlRecords(data);
    if ('error' in parsed) errors.push(parsed.error);
    else records = parsed.records;
  } else {
    const parsed = parseCsv(data);
    if ('error' in parsed) errors.push(parsed.error);
    else {
      // Custom fields come as NetBox's `cf_<name>` columns, typed by their definitions; a blank cell is left out.
      const isCf = (h: string) => m.taggable && h.startsWith('cf_');
      const cfs = parsed.header.some(isCf) ? await customFieldsFor(req, backend, m) : [];
      for (const h of parsed.header.filter(isCf)) if (!cfs.some((f) => `cf_${f.name}` === h)) errors.push(`${h}: unknown custom field`);
      // A cable's ends come as the import form's side_* columns (resolved below), the rest as the model's fields.
      const own = parsed.header.map((h) => !(m.key === 'cable' && /^side_[ab]_/.test(h)) && !isCf(h));
      parsed.records.forEach((rec, i) => {
        const { body, errors: recErrors } = bodyFromCsv(m, parsed.header.filter((_, j) => own[j]), rec.filter((_, j) => own[j]));
        parsed.header.forEach((h, j) => {
          if (!own[j] && !isCf(h)) body[h] = rec[j];
        });
        for (const e of recErrors) errors.push(`Record ${i + 1} ${e}`);
        const texts: Record<string, string> = {};
        parsed.header.forEach((h, j) => {
          if (isCf(h) && (rec[j] ?? '').trim() !== '') texts[h.slice(3)] = rec[j]!;
        });
        const given = cfs.filter((f) => f.name in texts);
        if (given.length) {
          const cfErrors: FieldErrors = {};
          body.custom_fields = customFieldData(given, texts, cfErrors);
          for (const [k, v] of Object.entries(cfErrors)) for (const msg of v) errors.push(`Record ${i + 1} ${k}: ${msg}`);
        }
        records.push(body);
      });
    }
  }
  if (!errors.length && !records.length) errors.push('No records to import.');
  if (!errors.length && m.key === 'cable') {
    // NetBox's CableImportForm: the ends by device (or power panel, circuit), type and name, through the API.
    const cache = new Map();
    const get = (url: string) => api(req, backend, 'GET', url);
    for (const [i, rec] of records.entries()) {
      if (!usesSideFields(rec)) continue;
      const id = typeof rec.id === 'number' ? rec.id : undefined;
      const recErrors = await resolveCableRecord(rec, id, get, cache);
      for (const [k, v] of Object.entries(recErrors)) for (const msg of v) errors.push(`Record ${i + 1} ${k}: ${msg}`);
    }
  }
  if (errors.length) return importPage(req, reply, m, data, format, errors, 400);
  // Records with an id update those objects (NetBox's import does the same); the rest are created. All or nothing each.
  const updates = records.filter((r) => r.id !== undefined);
  const creates = records.filter((r) => r.id === undefined);
  const results: any[] = [];
  for (const [method, list] of [['POST', creates], ['PATCH', updates]] as const) {
    if (!list.length) continue;
    const r = await api(req, backend, method, apiList(m), list);
    if (r.status !== 200 && r.status !== 201) {
      const msgs = Array.isArray(r.body)
        ? r.body.flatMap((e: any, i: number) =>
            // NetBox's import view: `Record 3 name: …` for a field, `Record 3: …` for the object as a whole.
            e && typeof e === 'object' ? Object.entries(e).map(([k, v]) => `Record ${records.indexOf(list[i]!) + 1}${k === 'non_field_errors' || k === '__all__' ? '' : ` ${k}`}: ${Array.isArray(v) ? v.join(' ') : String(v)}`) : [],
          )
        : [apiMessage(r.body)];
      return importPage(req, reply, m, data, format, msgs.length ? msgs : [apiMessage(r.body)], 400);
    }
    results.push(...(Array.isArray(r.body) ? r.body : [r.body]));
  }
  flash(req, 'success', `Imported ${results.length} ${results.length === 1 ? m.verboseName : plural(m)}`);
  return redirectTo(reply, listUrl(m));
}

/** NetBox's global search lookups: the form's value, its label and the API lookup on each search field (partial is `q`). */
const SEARCH_LOOKUPS: Array<[value: string, label: string, suffix: string]> = [
  ['', 'Partial match', ''],
  ['iexact', 'Exact match', '__ie'],
  ['istartswith', 'Starts with', '__isw'],
  ['iendswith', 'Ends with', '__iew'],
  ['iregex', 'Regex', '__iregex'],
];
const SEARCH_SHOWN = 10;

/**
 * NetBox's global search (`/search/`): `q` over every model's search fields, narrowed to `obj_types` (object types, several
 * allowed) and matched by `lookup` (partial by default, exact, starts with, ends with, regex — each case-insensitive, the
 * regex through the API's linear-time engine), through the API with the user's token: a partial match is the model's `q`,
 * the others the field lookups on each of its search fields, results merged.
 */
async function searchPage(req: FastifyRequest, reply: FastifyReply, backend: UiBackend) {
  const query = req.query as Q;
  const raw = query.q;
  const q = (Array.isArray(raw) ? raw[0] : raw)?.trim().slice(0, 200) ?? '';
  const lookupRaw = formString(query as FormBody, 'lookup');
  const lookup = SEARCH_LOOKUPS.find(([v]) => v === lookupRaw) ?? SEARCH_LOOKUPS[0]!;
  const types = new Set(formList(query as FormBody, 'obj_types'));
  const errors: string[] = [];
  if (lookupRaw && lookup[0] !== lookupRaw) errors.push(`lookup: Select a valid choice. ${lookupRaw.slice(0, 50)} is not one of the available choices.`);
  const unknownType = [...types].find((t) => !MODELS.some((m) => m.objectType === t));
  if (unknownType !== undefined) errors.push(`obj_types: Select a valid choice. ${unknownType.slice(0, 100)} is not one of the available choices.`);
  const groups: Array<{ m: ModelDef; count: number; more: boolean; results: any[] }> = [];
  if (q && !errors.length) {
    for (const m of MODELS) {
      if (!m.search.length || (types.size && !types.has(m.objectType)) || !viewerMay(authed(req).viewer, m.objectType, 'view')) continue;
      if (!lookup[2]) {
        const r = await api(req, backend, 'GET', `${apiList(m)}?q=${encodeURIComponent(q)}&limit=${SEARCH_SHOWN}&brief=1`);
        if (r.status === 200 && r.body.count > 0) groups.push({ m, count: r.body.count, more: false, results: r.body.results });
        continue;
      }
      // One request per search field the API filters with this lookup; the objects found by any of them.
      const found = new Map<number, any>();
      let more = false;
      for (const field of m.search) {
        const r = await api(req, backend, 'GET', `${apiList(m)}?${field}${lookup[2]}=${encodeURIComponent(q)}&limit=50&brief=1`);
        if (r.status === 400 && lookup[0] === 'iregex' && JSON.stringify(r.body).includes('regular expression')) {
          errors.push(`q: ${apiMessage(r.body).replace(/^[\w]+: /, '')}`);
          break;
        }
        if (r.status !== 200) continue;
        if (r.body.count > r.body.results.length) more = true;
        for (const o of r.body.results) found.set(o.id, o);
      }
      if (errors.length) break;
      if (found.size) groups.push({ m, count: found.size, more, results: [...found.values()].sort((a, b) => a.id - b.id).slice(0, SEARCH_SHOWN) });
    }
  }
  const objectTypes = [...new Set(MODELS.filter((m) => m.search.length).map((m) => m.objectType))].sort();
  const body = html`<form method="get" action="/search/" class="filters"><label>Search <input type="search" name="q" value="${q}" data-testid="global-search"></label>
<label>Lookup <select name="lookup" data-testid="search-lookup">${SEARCH_LOOKUPS.map(([v, l]) => html`<option value="${v}"${v === lookup[0] ? html` selected` : ''}>${l}</option>`)}</select></label>
<label>Object type(s) <select name="obj_types" multiple size="4" data-testid="search-types">${objectTypes.map((t) => html`<option value="${t}"${types.has(t) ? html` selected` : ''}>${objectTypeLabel(t)}</option>`)}</select></label>
<button type="submit">Search</button></form>
${errors.length ? html`<ul class="errors" role="alert" data-testid="search-errors">${errors.map((e) => html`<li>${e}</li>`)}</ul>` : ''}
${q && !errors.length && !groups.length ? html`<p class="muted">No results.</p>` : ''}
${groups.map(
  (g) => html`<h2><a href="${listUrl(g.m)}${lookup[2] ? '' : `?q=${encodeURIComponent(q)}`}">${title(plural(g.m))}</a> <span class="muted">(${g.count}${g.more ? '+' : ''})</span></h2>
<ul data-testid="search-results">${g.results.map((o) => html`<li><a href="${pageOf(o) ?? '#'}">${o.display}</a></li>`)}</ul>`,
)}`;
  return sendPage(req, reply, { title: q ? `Search: ${q}` : 'Search', section: 'search', body }, errors.length ? 400 : 200);
}
