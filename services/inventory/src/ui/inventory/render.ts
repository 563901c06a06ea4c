import { html, type SafeHtml } from '../html.ts';

/** The UI page of an object from its API URL (`…/api/dcim/sites/1/` → `/dcim/sites/1/`), as NetBox's display_url. */
export function pageOf(obj: Record<string, unknown>): string | undefined {
  const u = typeof obj.display_url === 'string' ? obj.display_url : typeof obj.url === 'string' ? obj.url : undefined;
  if (!u) return undefined;
  let path: string;
  try {
    path = new URL(u, 'http://x').pathname;
  } catch {
    return undefined;
  }
  const p = path.startsWith('/api/') ? path.slice(4) : path;
  return /^\/[a-z-]+\/[a-z-]+\/\d+\/$/.test(p) ? p : undefined;
}

const STATUS_COLOURS: Record<string, string> = {
  active: 'green',
  planned: 'cyan',
  staging: 'blue',
  staged: 'blue',
  reserved: 'cyan',
  available: 'green',
  decommissioning: 'yellow',
  deprecated: 'red',
  retired: 'red',
  offline: 'gray',
  failed: 'red',
  paused: 'orange',
  container: 'gray',
  dhcp: 'green',
  slaac: 'green',
};

/** One value of a REST representation as a table cell: related objects link to their pages, choices show labels. */
export function cell(value: unknown, key = ''): SafeHtml {
  if (value === null || value === undefined || value === '') return html`<span class="muted">—</span>`;
  if (typeof value === 'boolean') return value ? html`<span class="yes" title="yes">✓</span>` : html`<span class="no" title="no">✗</span>`;
  if (Array.isArray(value)) {
    if (value.length === 0) return html`<span class="muted">—</span>`;
    // A choice set's `[value, label]` pairs.
    if (key === 'extra_choices') return html`${value.map((v, i) => html`${i ? ', ' : ''}${Array.isArray(v) ? `${String(v[0])} (${String(v[1])})` : String(v)}`)}`;
    return html`${value.map((v, i) => html`${i ? ', ' : ''}${cell(v)}`)}`;
  }
  if (typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if ('value' in o && 'label' in o && Object.keys(o).length === 2) {
      if (key === 'status') return html`<span class="badge badge-${STATUS_COLOURS[String(o.value)] ?? 'gray'}">${String(o.label)}</span>`;
      return html`${String(o.label)}`;
    }
    // A cable end ({object_type, object_id, object}): the terminated object's link, with its device.
    if ('object_type' in o && 'object' in o && o.object && typeof o.object === 'object') {
      const t = o.object as Record<string, unknown>;
      return t.device ? html`${cell(t.device)} › ${cell(t)}` : cell(t);
    }
    if ('display' in o || 'name' in o) {
      const label = String(o.display ?? o.name);
      const href = pageOf(o);
      return href ? html`<a href="${href}">${label}</a>` : html`${label}`;
    }
    return html`<code>${JSON.stringify(value).slice(0, 200)}</code>`;
  }
  if (key === 'color' && typeof value === 'string' && /^[0-9a-f]{6}$/i.test(value)) return html`<span class="swatch">#${value}</span>`;
  return html`${String(value)}`;
}

/** "device_type" → "Device type", as NetBox's column headers. */
export function labelOf(name: string): string {
  const special: Record<string, string> = { vrf: 'VRF', vlan: 'VLAN', vid: 'VID', mtu: 'MTU', vcpus: 'vCPUs', id: 'ID', rd: 'RD', mac_address: 'MAC address', dns_name: 'DNS name', ipaddresses: 'IP addresses' };
  if (special[name]) return special[name]!;
  const text = name.replace(/s?_count$/, 's').replace(/_/g, ' ').replace(/\bip\b/g, 'IP').replace(/\bvlans?\b/g, (v) => v.toUpperCase()).replace(/\boob\b/g, 'OOB');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
