import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

/**
 * Outbound HTTP for URLs that clients hand the service (remote metadata,
 * assets created from a URL). Every address a name resolves to is checked
 * when the connection is made (so a DNS answer cannot swap a public address
 * for a private one afterwards), redirects are followed by hand and checked
 * again, and time and size are bounded. Private, loopback, link-local,
 * multicast and other special ranges are refused unless configuration
 * allows them.
 */
export class OutboundRefused extends Error {}

export interface OutboundConfig {
  /** Ranges allowed even though they are special (`--outbound-allow loopback,10.0.0.0/8`). */
  allow: net.BlockList;
  timeoutMs: number;
  maxRedirects: number;
}

const SPECIAL_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24],
  ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
];
/**
 * IPv6 ranges refused inside 2000::/3 (everything outside it, which holds
 * ::/96 with the IPv4-compatible forms, the IPv4-mapped ::ffff:0:0/96 and
 * the translated ::ffff:0:0:0/96, ULA, link-local and multicast, is not
 * global unicast and refused too). Mapped addresses are judged by their IPv4.
 */
const SPECIAL_V6: Array<[string, number]> = [
  ['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['3fff::', 20],
];

// One list per family: a BlockList checks an IPv4 address against its IPv6 rules too (as ::ffff:a.b.c.d),
// so an IPv6 rule covering the mapped range in a shared list would refuse every IPv4 destination.
const specialV4 = new net.BlockList();
for (const [a, p] of SPECIAL_V4) specialV4.addSubnet(a, p, 'ipv4');
const specialV6 = new net.BlockList();
for (const [a, p] of SPECIAL_V6) specialV6.addSubnet(a, p, 'ipv6');
const globalUnicastV6 = new net.BlockList();
globalUnicastV6.addSubnet('2000::', 3, 'ipv6');

/** `--outbound-allow`: comma-separated CIDR ranges, single addresses, or the words loopback and private. */
export function outboundConfig(flag: unknown, env = process.env, timeoutFlag?: unknown): OutboundConfig {
  const allow = new net.BlockList();
  const spec = typeof flag === 'string' ? flag : (env.WORKFLOW_OUTBOUND_ALLOW ?? '');
  for (const raw of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (raw === 'loopback') {
      allow.addSubnet('127.0.0.0', 8, 'ipv4');
      allow.addAddress('::1', 'ipv6');
      continue;
    }
    if (raw === 'private') {
      for (const [a, p] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10]] as const) allow.addSubnet(a, p, 'ipv4');
      allow.addSubnet('fc00::', 7, 'ipv6');
      continue;
    }
    const [addr, bits] = raw.split('/');
    const family = net.isIP(addr ?? '');
    if (!family) throw new Error(`--outbound-allow: not an address or range: ${raw}`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) allow.addAddress(addr!, type);
    else allow.addSubnet(addr!, Number(bits), type);
  }
  const t = typeof timeoutFlag === 'string' ? Number(timeoutFlag) : 10_000;
  if (!Number.isInteger(t) || t < 1 || t > 600_000) throw new Error(`--outbound-timeout-ms must be an integer from 1 to 600000, got ${String(timeoutFlag)}`);
  return { allow, timeoutMs: t, maxRedirects: 3 };
}

/** The eight 16-bit groups of a valid IPv6 text (an embedded dotted quad included). */
function v6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = parse(tail);
  return tail === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d, in any spelling), else undefined. */
export function mappedIPv4(address: string): string | undefined {
  if (!net.isIPv6(address)) return undefined;
  const g = v6Groups(address);
  if (g.length !== 8 || g.slice(0, 5).some((x) => x !== 0) || g[5] !== 0xffff) return undefined;
  return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
}

/** Whether a connection to `address` is allowed. IPv4-mapped IPv6 addresses are judged as IPv4. */
export function addressAllowed(cfg: OutboundConfig, address: string): boolean {
  const a = mappedIPv4(address) ?? address;
  if (net.isIPv4(a)) return cfg.allow.check(a, 'ipv4') || !specialV4.check(a, 'ipv4');
  if (!net.isIPv6(a)) return false;
  if (cfg.allow.check(a, 'ipv6')) return true;
  return globalUnicastV6.check(a, 'ipv6') && !specialV6.check(a, 'ipv6');
}

function guardedLookup(cfg: OutboundConfig): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as any)(err);
      const list = addresses as dns.LookupAddress[];
      const ok = list.filter((a) => addressAllowed(cfg, a.address));
      if (ok.length === 0) return (callback as any)(new OutboundRefused(`Destination ${hostname} is not allowed (private, loopback, link-local or reserved address)`));
      if ((options as dns.LookupOptions).all) return (callback as any)(null, ok);
      return (callback as any)(null, ok[0]!.address, ok[0]!.family);
    });
  };
}

export interface RemoteHead {
  url: URL;
  status: number;
  headers: http.IncomingHttpHeaders;
  /** At most `maxBytes` of the body. */
  head: Buffer;
  /** The response, paused after `head` unless `keepBody`; destroyed otherwise. */
  body?: http.IncomingMessage;
}

/** Parses and checks a client-supplied URL: http(s) only, no credentials, a literal address must be allowed. */
export function checkUrl(cfg: OutboundConfig, raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundRefused('url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundRefused('url must be an absolute http or https URL');
  if (url.username || url.password) throw new OutboundRefused('url must not carry credentials');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !addressAllowed(cfg, host)) throw new OutboundRefused(`Destination ${host} is not allowed (private, loopback, link-local or reserved address)`);
  return url;
}

/**
 * GET `raw` through the guard: the status, the headers and the first
 * `maxBytes` bytes. With `keepBody` the rest of the response is left to the
 * caller (paused); otherwise the connection is closed after the head.
 */
export async function fetchHead(cfg: OutboundConfig, raw: string, opts: { maxBytes: number; keepBody?: boolean }): Promise<RemoteHead> {
  let url = checkUrl(cfg, raw);
  for (let hop = 0; ; hop++) {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const mod = url.protocol === 'https:' ? https : http;
      const req = mod.request(url, { method: 'GET', lookup: guardedLookup(cfg), headers: { 'user-agent': 'workflow-service', accept: '*/*', 'accept-encoding': 'identity' }, timeout: cfg.timeoutMs }, resolve);
      req.on('timeout', () => req.destroy(new OutboundRefused(`The remote server did not answer within ${cfg.timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    }).catch((err) => {
      if (err instanceof OutboundRefused) throw err;
      throw new OutboundRefused(`The remote URL could not be fetched: ${(err as Error).message}`);
    });
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      res.destroy();
      if (hop >= cfg.maxRedirects) throw new OutboundRefused('Too many redirects');
      url = checkUrl(cfg, new URL(res.headers.location, url).toString());
      continue;
    }
    const head = await readHead(res, opts.maxBytes, cfg.timeoutMs);
    if (!opts.keepBody) res.destroy();
    return { url, status, headers: res.headers, head, body: opts.keepBody ? res : undefined };
  }
}

function readHead(res: http.IncomingMessage, maxBytes: number, timeoutMs: number): Promise<Buffer> {
  if (maxBytes <= 0) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    const timer = setTimeout(() => finish(), timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      res.off('data', onData);
      res.pause();
      const all = Buffer.concat(chunks);
      // What was read beyond the head goes back to the stream for a caller that keeps the body.
      if (all.length > maxBytes) res.unshift(all.subarray(maxBytes));
      resolve(all.subarray(0, maxBytes));
    };
    const onData = (c: Buffer) => {
      chunks.push(c);
      n += c.length;
      if (n >= maxBytes) finish();
    };
    res.on('data', onData);
    res.once('end', finish);
    res.once('error', (e) => {
      clearTimeout(timer);
      reject(new OutboundRefused(`The remote URL could not be read: ${e.message}`));
    });
  });
}

/** A file name from Content-Disposition (RFC 6266, filename* first) or the URL's last path segment. */
export function remoteFilename(headers: http.IncomingHttpHeaders, url: URL): string | undefined {
  const cd = headers['content-disposition'];
  if (typeof cd === 'string') {
    const star = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(cd);
    if (star) {
      try {
        return clean(decodeURIComponent(star[2]!.trim()));
      } catch {
        // fall through to the plain form
      }
    }
    const plain = /filename\s*=\s*("((?:[^"\\]|\\.)*)"|[^;]+)/i.exec(cd);
    if (plain) return clean((plain[2] ?? plain[1]!).replace(/\\(.)/g, '$1').trim());
  }
  const last = url.pathname.split('/').filter(Boolean).pop();
  if (!last) return undefined;
  try {
    return clean(decodeURIComponent(last));
  } catch {
    return clean(last);
  }
}

function clean(name: string): string | undefined {
  const base = name.split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return base && base !== '.' && base !== '..' ? base.slice(0, 255) : undefined;
}
