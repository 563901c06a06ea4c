import { html, type SafeHtml } from '../html.ts';
import { objectTypeLabel } from '../../models/lookup.ts';

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
  // Paths may hold digits (`/vpn/l2vpns/3/`).
  return /^\/[a-z0-9-]+\/[a-z0-9-]+\/\d+\/$/.test(p) ? p : undefined;
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
    // Object types (a custom field's, an export template's) as NetBox's pickers name them.
    if (key.endsWith('_types') && value.every((v) => typeof v === 'string' && /^[a-z]+\.[a-z][a-z0-9]*$/.test(v))) return html`${value.map((v) => objectTypeLabel(v as string)).join(', ')}`;
    // A port's peers and endpoints name their device, as NetBox's "device › interface".
    if (key === 'link_peers' || key === 'connected_endpoints') return html`${value.map((v, i) => html`${i ? ', ' : ''}${v && typeof v === 'object' && (v as any).device ? html`${cell((v as any).device)} › ` : ''}${cell(v)}`)}`;
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
    // An IP address's interface names its device too.
    if (key === 'assigned_object' && o.device && typeof o.device === 'object') return html`${cell(o.device)} › ${cell(o)}`;
    if ('display' in o || 'name' in o) {
      const label = String(o.display ?? o.name);
      const href = pageOf(o);
      return href ? html`<a href="${href}">${label}</a>` : html`${label}`;
    }
    return html`<code>${JSON.stringify(value).slice(0, 200)}</code>`;
  }
  if (key === 'color' && typeof value === 'string' && /^[0-9a-f]{6}$/i.test(value)) return html`<span class="swatch">#${value}</span>`;
  // An object type (`link_peers_type: dcim.interface`) as NetBox's pickers name it ("DCIM > Interface").
  if (key.endsWith('_type') && typeof value === 'string' && /^[a-z]+\.[a-z][a-z0-9]*$/.test(value)) return html`${objectTypeLabel(value)}`;
  return html`${String(value)}`;
}

/** "device_type" → "Device type", as NetBox's column headers. */
export function labelOf(name: string): string {
  const special: Record<string, string> = { vrf: 'VRF', vlan: 'VLAN', vid: 'VID', mtu: 'MTU', vcpus: 'vCPUs', id: 'ID', rd: 'RD', mac_address: 'MAC address', dns_name: 'DNS name', ipaddresses: 'IP addresses', vdcs: 'Virtual device contexts', wwn: 'WWN', qinq_svlan: 'Q-in-Q SVLAN', wireless_lans: 'Wireless LANs', asns: 'ASNs', desc_units: 'Descending units', termination_a: 'Side A', termination_z: 'Side Z', _occupied: 'Occupied' };
  if (special[name]) return special[name]!;
  // NetBox's abbreviations: PoE, RF, LAG, VLAN(s), IP, OOB.
  const text = name
    .replace(/^_+/, '')
    .replace(/s?_count$/, 's')
    .replace(/_/g, ' ')
    .replace(/\bip\b/g, 'IP')
    .replace(/\bvlans?\b/g, (v) => v.toUpperCase())
    .replace(/\boob\b/g, 'OOB')
    .replace(/\bpoe\b/g, 'PoE')
    .replace(/\brf\b/g, 'RF')
    .replace(/\blag\b/g, 'LAG')
    .replace(/\bnat\b/g, 'NAT')
    .replace(/\bui\b/g, 'UI')
    .replace(/\bid\b/g, 'ID');
  return text.charAt(0).toUpperCase() + text.slice(1);
}
