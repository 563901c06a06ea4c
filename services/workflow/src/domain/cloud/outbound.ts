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
const SPECIAL_V6: Array<[string, number]> = [
  ['::', 128], ['::1', 128], ['::ffff:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
];

const special = new net.BlockList();
for (const [a, p] of SPECIAL_V4) special.addSubnet(a, p, 'ipv4');
for (const [a, p] of SPECIAL_V6) special.addSubnet(a, p, 'ipv6');

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

function familyOf(address: string): 'ipv4' | 'ipv6' {
  return net.isIPv4(address) ? 'ipv4' : 'ipv6';
}

/** Whether a connection to `address` is allowed. IPv4-mapped IPv6 addresses are judged as IPv4. */
export function addressAllowed(cfg: OutboundConfig, address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const a = mapped ? mapped[1]! : address;
  const f = familyOf(a);
  if (cfg.allow.check(a, f)) return true;
  return !special.check(a, f);
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
