import { isIPv4, isIPv6 } from 'node:net';

/** Python's repr of a JSON-ish value, for messages that quote user input as NetBox does. */
export function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(v);
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v as object).map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(', ')}}`;
  return String(v);
}

/** Python's type name of a JSON value, for DRF's "Expected a dictionary, but got str." */
export function pyType(v: unknown): string {
  if (v === null) return 'NoneType';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

/** An IP address with mask, normalised as netaddr prints it; undefined when invalid. */
export function parseIpInterface(input: string): { address: string; family: 4 | 6 } | { error: string } | undefined {
  const s = input.trim();
  const slash = s.indexOf('/');
  const host = slash < 0 ? s : s.slice(0, slash);
  const lenText = slash < 0 ? undefined : s.slice(slash + 1);
  let family: 4 | 6;
  let norm: string;
  if (isIPv4(host) && !/(^|\.)0\d/.test(host)) {
    family = 4;
    norm = host;
  } else if (isIPv6(host) && !host.includes('%')) {
    family = 6;
    try {
      norm = new URL(`http://[${host}]/`).hostname.slice(1, -1);
    } catch {
      return undefined;
    }
  } else return undefined;
  const maxLen = family === 4 ? 32 : 128;
  let len = maxLen;
  if (lenText !== undefined) {
    if (!/^\d{1,3}$/.test(lenText)) return undefined;
    len = Number(lenText);
    if (len > maxLen) return undefined;
  }
  if (len === 0) return { error: 'Cannot create IP address with /0 mask.' };
  return { address: `${norm}/${len}`, family };
}

/** A MAC address as NetBox shows it (upper case, colons); undefined when invalid. */
export function normaliseMac(input: string): string | undefined {
  const hex = input.trim().replace(/[:\-.]/g, '');
  if (!/^[0-9a-fA-F]{12}$/.test(hex)) return undefined;
  if (!/^([0-9a-fA-F]{2}([:-]?)){5}[0-9a-fA-F]{2}$/.test(input.trim()) && !/^[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}$/.test(input.trim())) return undefined;
  return hex.toUpperCase().match(/../g)!.join(':');
}

/** Django's DjangoJSONEncoder datetime form: milliseconds (dropped when zero) and `Z`. */
export function djangoIso(iso: string): string {
  return iso.replace(/\.000Z$/, 'Z');
}

/** NetBox's naturalize(): digit runs left-padded to 8 places, so text order is natural order. */
export function naturalize(value: string | null, maxLength = 100): string | null {
  if (!value) return value;
  return value
    .split(/(\d+)/)
    .map((seg) => (/^\d+$/.test(seg) ? seg.padStart(8, '0') : seg))
    .join('')
    .slice(0, maxLength);
}
