import { isIPv4, isIPv6 } from 'node:net';

/** IP arithmetic on BigInts, for prefixes, containment and allocation. */
export interface Net {
  family: 4 | 6;
  /** First address of the network. */
  first: bigint;
  /** Last address of the network. */
  last: bigint;
  len: number;
}

export const bits = (family: 4 | 6) => (family === 4 ? 32 : 128);

export function ipToBig(host: string): { value: bigint; family: 4 | 6 } | undefined {
  if (isIPv4(host)) return { value: host.split('.').reduce((a, o) => (a << 8n) | BigInt(Number(o)), 0n), family: 4 };
  if (!isIPv6(host) || host.includes('%')) return undefined;
  let s = host;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    const n = ipToBig(v4[1]!)!.value;
    s = s.slice(0, -v4[1]!.length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return { value: groups.reduce((a, g) => (a << 16n) | BigInt(parseInt(g || '0', 16)), 0n), family: 6 };
}

export function bigToIp(v: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((v >> BigInt(112 - i * 16)) & 0xffffn));
  // RFC 5952: the longest run (≥ 2) of zero groups becomes '::'.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) (best = i), (bestLen = j - i);
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** `10.0.0.0/24` (host bits cleared, as NetBox stores a prefix's cidr); undefined when not a network. */
export function parseNet(input: string): Net | undefined {
  const s = input.trim();
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const ip = ipToBig(s.slice(0, slash));
  const lenText = s.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(lenText)) return undefined;
  if (ip.family === 4 && /(^|\.)0\d/.test(s.slice(0, slash))) return undefined;
  const len = Number(lenText);
  const width = bits(ip.family);
  if (len > width) return undefined;
  const host = (1n << BigInt(width - len)) - 1n;
  const first = ip.value & ~host & ((1n << BigInt(width)) - 1n);
  return { family: ip.family, first, last: first | host, len };
}

export function netString(n: Net): string {
  return `${bigToIp(n.first, n.family)}/${n.len}`;
}

/** Fixed-width hex, so text comparison is numeric comparison (v4: 8 digits, v6: 32). */
export function hexKey(v: bigint, family: 4 | 6): string {
  return v.toString(16).padStart(family === 4 ? 8 : 32, '0');
}

/** The host part of `address/len` as a sortable key. */
export function hostKey(address: string): string | null {
  const ip = ipToBig(address.split('/')[0]!);
  return ip ? hexKey(ip.value, ip.family) : null;
}
