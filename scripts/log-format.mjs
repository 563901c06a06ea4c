/**
 * How scripts/start-all.mjs shows a service's output lines. pino's JSON lines
 * stay JSON when the output is not a terminal (a log collector reads them);
 * on a terminal they become one readable line each, a request as
 * `GET /path → 200 (3 ms)` on its completion. Other lines get the service's
 * name in front. Fastify's "Server listening at" is left out: the banner
 * says it.
 */
const LEVELS = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLORS = { 10: 90, 20: 90, 30: 32, 40: 33, 50: 31, 60: 31 };
const SKIP = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg', 'request_id', 'reqId', 'req', 'res', 'responseTime', 'v']);

function clock(t) {
  const d = new Date(typeof t === 'number' ? t : Date.now());
  return d.toISOString().slice(11, 19);
}

function fields(obj) {
  const out = [];
  for (const [k, v] of Object.entries(obj)) {
    if (SKIP.has(k) || v === undefined) continue;
    if (k === 'err' && v && typeof v === 'object') {
      out.push(`\n    ${String(v.stack ?? v.message ?? JSON.stringify(v)).replace(/\n/g, '\n    ')}`);
      continue;
    }
    out.push(`${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  return out.join(' ');
}

/** Returns a function from one output line of service `name` to the text to show, or null to show nothing. */
export function logFormatter(name, { pretty, color = pretty }) {
  const tag = name.padEnd(9);
  const paint = (code, text) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const pending = new Map();
  return (line) => {
    if (line.length === 0) return null;
    let entry;
    if (line.startsWith('{')) {
      try {
        entry = JSON.parse(line);
      } catch {
        entry = undefined;
      }
    }
    if (!entry || typeof entry !== 'object' || typeof entry.level !== 'number') return `${paint(36, tag)} ${line}`;
    // The banner says where each service listens.
    if (typeof entry.msg === 'string' && entry.msg.startsWith('Server listening at ')) return null;
    if (!pretty) return line;
    const id = entry.request_id ?? entry.reqId;
    if (entry.msg === 'incoming request' && entry.req) {
      pending.set(id, `${entry.req.method} ${entry.req.url}`);
      if (pending.size > 10_000) pending.delete(pending.keys().next().value);
      return null;
    }
    let msg = entry.msg ?? '';
    if (msg === 'request completed' && entry.res) {
      const what = pending.get(id) ?? 'request';
      pending.delete(id);
      const ms = typeof entry.responseTime === 'number' ? ` (${entry.responseTime < 10 ? entry.responseTime.toFixed(1) : Math.round(entry.responseTime)} ms)` : '';
      msg = `${what} → ${entry.res.statusCode}${ms}`;
    }
    const level = LEVELS[entry.level] ?? String(entry.level);
    const rest = fields(entry);
    return `${paint(90, clock(entry.time))} ${paint(36, tag)} ${paint(COLORS[entry.level] ?? 0, level.padEnd(5))} ${msg}${rest ? ` ${rest}` : ''}`;
  };
}
