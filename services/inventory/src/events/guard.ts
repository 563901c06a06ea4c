import dns from 'node:dns/promises';
import net from 'node:net';

/**
 * Destination guard: refuses link-local and cloud-metadata addresses by
 * default, with operator allow/deny lists of networks. It checks the
 * addresses a host resolves to, and the sender connects to the address that
 * was checked, so a DNS answer that changes between check and connect
 * (rebinding) cannot reach a refused network.
 */

export interface Cidr {
  text: string;
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

export function parseCidr(text: string): Cidr {
  const [addr, p] = text.split('/');
  const family = net.isIPv4(addr ?? '') ? 'ipv4' : net.isIPv6(addr ?? '') ? 'ipv6' : undefined;
  if (!family) throw new Error(`not an IP network: ${text}`);
  const max = family === 'ipv4' ? 32 : 128;
  const prefix = p === undefined ? max : Number(p);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max || (p !== undefined && !/^\d+$/.test(p))) throw new Error(`bad prefix length in ${text}`);
  return { text, address: addr!, prefix, family };
}

export function parseCidrList(items: string[], what: string): Cidr[] {
  return items.map((t) => {
    try {
      return parseCidr(t);
    } catch (err) {
      throw new Error(`${what}: ${(err as Error).message}`);
    }
  });
}

/** Link-local (incl. 169.254.169.254 used by AWS/GCP/Azure/OpenStack), AWS IPv6 IMDS, Alibaba metadata, "this host". */
export const DEFAULT_DENY = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128', '100.100.100.200/32', '0.0.0.0/8', '::/128'].map(parseCidr);

function blockList(cidrs: Cidr[]): net.BlockList {
  const b = new net.BlockList();
  for (const c of cidrs) b.addSubnet(c.address, c.prefix, c.family);
  return b;
}

/** ::ffff:a.b.c.d is the IPv4 host a.b.c.d. */
function normalise(ip: string): { ip: string; family: 'ipv4' | 'ipv6' } {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return { ip: m[1]!, family: 'ipv4' };
  return { ip, family: net.isIPv4(ip) ? 'ipv4' : 'ipv6' };
}

export class DestinationRefused extends Error {}

export class DestinationGuard {
  #allow: net.BlockList | undefined;
  #deny: net.BlockList;
  #defaults = blockList(DEFAULT_DENY);

  constructor(opts: { allow: Cidr[]; deny: Cidr[] }) {
    this.#allow = opts.allow.length ? blockList(opts.allow) : undefined;
    this.#deny = blockList(opts.deny);
  }

  /** Why an address is refused, or undefined when it may be contacted. */
  refusal(address: string): string | undefined {
    const { ip, family } = normalise(address);
    if (this.#deny.check(ip, family)) return `${ip} is in INVENTORY_WEBHOOK_DENY`;
    if (this.#allow) return this.#allow.check(ip, family) ? undefined : `${ip} is not in INVENTORY_WEBHOOK_ALLOW`;
    if (this.#defaults.check(ip, family)) return `${ip} is a link-local or cloud metadata address`;
    return undefined;
  }

  #dns = new Map<string, { at: number; addrs: Array<{ address: string; family: 4 | 6 }> }>();
  #verdicts = new Map<string, string | undefined>();

  #check(address: string): string | undefined {
    if (this.#verdicts.has(address)) return this.#verdicts.get(address);
    const why = this.refusal(address);
    if (this.#verdicts.size > 10_000) this.#verdicts.clear();
    this.#verdicts.set(address, why);
    return why;
  }

  /** Resolves the host (answers cached for 5 s) and returns the first permitted address (refusing if none is). */
  async resolve(hostname: string): Promise<{ address: string; family: 4 | 6 }> {
    const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
    const literal = net.isIP(host);
    let candidates: Array<{ address: string; family: 4 | 6 }>;
    if (literal) candidates = [{ address: host, family: literal as 4 | 6 }];
    else {
      const hit = this.#dns.get(host);
      if (hit && Date.now() - hit.at < 5000) candidates = hit.addrs;
      else {
        candidates = (await dns.lookup(host, { all: true, verbatim: true })) as Array<{ address: string; family: 4 | 6 }>;
        if (this.#dns.size > 1000) this.#dns.clear();
        this.#dns.set(host, { at: Date.now(), addrs: candidates });
      }
    }
    const reasons: string[] = [];
    for (const c of candidates) {
      const why = this.#check(c.address);
      if (!why) return c;
      reasons.push(why);
    }
    throw new DestinationRefused(`Destination refused: ${hostname} (${reasons.join('; ') || 'no addresses'})`);
  }
}
