import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { sql } from 'kysely';
import { requirePermission, requireViewOr404 } from '../api/guards.ts';
import { notFound, validationError } from '../api/errors.ts';
import { baseUrl, pageOf } from '../api/pagination.ts';
import { objectId } from '../api/params.ts';
import type { ChangeSink } from '../changes/write.ts';
import { bigToIp, hexKey, netString, parseNet, type Net } from '../models/ip.ts';
import { fetchRow, type ReadCtx } from '../models/read.ts';
import { loadBriefs } from '../models/represent.ts';
import { model } from '../models/registry.ts';
import type { Row } from '../models/types.ts';
import type { Errors } from '../models/validate.ts';
import { lockRow, readCtxOf } from '../models/write.ts';
import { asList, createOne, showObjects, writeAs } from './objects.ts';

const prefixModel = () => model('prefix');
const ipModel = () => model('ipaddress');

/** NetBox's get_child_ips scope: a global container sees every VRF; otherwise the prefix's own VRF. */
function vrfScope(p: Row) {
  return p.vrf_id === null && p.status === 'container' ? undefined : p.vrf_id;
}

/** Usable host range of a prefix (NetBox omits an IPv4 network's first and last, an IPv6 network's first, unless pool or tiny). */
function hostRange(net: Net, isPool: boolean): [bigint, bigint] {
  const whole = (net.family === 6 && net.len >= 127) || isPool || (net.family === 4 && net.len >= 31);
  if (whole) return [net.first, net.last];
  return net.family === 4 ? [net.first + 1n, net.last - 1n] : [net.first + 1n, net.last];
}

/**
 * Per prefix range and VRF scope, the first address that was free when last looked at: everything
 * below it was in use then. Without it, each allocation from a filling prefix would read every used
 * address before the first gap. Only a hint: it holds while no address was deleted or moved since
 * (migration 007's counter stands still); otherwise one index-only count checks it, and a hint that
 * fails that check is dropped. On PostgreSQL a delete whose counter step is taken just before this
 * reads the counter and that commits after the scan can leave a freed address below the hint until
 * the next delete: the allocation then takes a higher free address, never a used one.
 */
const scanHints = new Map<string, { next: bigint; freed: string }>();
const MAX_HINTS = 10_000;

/** Migration 007's counter of deleted or moved IP addresses, as an opaque value. */
async function freedCounter(ctx: ReadCtx): Promise<string> {
  if (ctx.dialect.kind === 'postgres') {
    const r = await sql<{ last_value: unknown; is_called: unknown }>`select last_value, is_called from ipam_ip_freed`.execute(ctx.db);
    return `${r.rows[0]?.last_value}:${r.rows[0]?.is_called}`;
  }
  const r = await sql<{ n: unknown }>`select n from ipam_ip_freed where id = 1`.execute(ctx.db);
  return String(r.rows[0]?.n);
}

function scopeFilter<Q extends { where: (...a: any[]) => Q }>(q: Q, vrf: number | null | undefined): Q {
  return vrf === undefined ? q : vrf === null ? q.where('vrf_id', 'is', null) : q.where('vrf_id', '=', vrf);
}

/** Whether every address of [lo, hi) is in use (in the scope): as many distinct used hosts as addresses. */
async function allUsed(ctx: ReadCtx, family: 4 | 6, vrf: number | null | undefined, lo: bigint, hi: bigint): Promise<boolean> {
  const q = scopeFilter(
    ctx.db
      .selectFrom('ipam_ipaddress')
      .select(sql<number>`count(distinct _host)`.as('n'))
      .where('family', '=', family)
      .where('_host', '>=', hexKey(lo, family))
      .where('_host', '<', hexKey(hi, family)),
    vrf,
  );
  const row = await q.executeTakeFirst();
  return BigInt(Number(row?.n ?? 0)) === hi - lo;
}

/** Up to `limit` free addresses of a prefix, in order, scanning the used ones in chunks. */
async function freeAddresses(ctx: ReadCtx, p: Row, limit: number): Promise<bigint[]> {
  const net = parseNet(p.prefix)!;
  const [lo, hi] = hostRange(net, !!p.is_pool);
  const out: bigint[] = [];
  const vrf = vrfScope(p);
  const hintKey = `${net.family}:${vrf === undefined ? '*' : String(vrf)}:${lo}:${hi}`;
  let cursor = lo;
  const freed = await freedCounter(ctx);
  const hint = scanHints.get(hintKey);
  if (hint !== undefined && hint.next > lo && hint.next <= hi + 1n && (hint.freed === freed || (await allUsed(ctx, net.family, vrf, lo, hint.next)))) cursor = hint.next;
  while (out.length < limit && cursor <= hi) {
    const q = scopeFilter(
      ctx.db
        .selectFrom('ipam_ipaddress')
        .select('_host')
        .distinct()
        .where('family', '=', net.family)
        .where('_host', '>=', hexKey(cursor, net.family))
        .where('_host', '<=', hexKey(hi, net.family)),
      vrf,
    );
    const used = (await q.orderBy('_host').limit(1000).execute()).map((r) => BigInt(`0x${r._host}`));
    for (const u of used) {
      while (cursor < u && out.length < limit) out.push(cursor++);
      if (out.length >= limit) break;
      cursor = u + 1n;
    }
    if (used.length < 1000) {
      while (cursor <= hi && out.length < limit) out.push(cursor++);
      break;
    }
  }
  const next = out.length ? out[0]! : cursor;
  if (next > lo) {
    if (scanHints.size >= MAX_HINTS && !scanHints.has(hintKey)) scanHints.delete(scanHints.keys().next().value!);
    scanHints.set(hintKey, { next, freed });
  } else scanHints.delete(hintKey);
  return out;
}

/** Free child blocks of a prefix (its range minus child prefixes in the same VRF), as CIDRs. */
async function freePrefixes(ctx: ReadCtx, p: Row): Promise<Net[]> {
  const net = parseNet(p.prefix)!;
  let q = ctx.db
    .selectFrom('ipam_prefix')
    .select(['_first', '_last'])
    .where('family', '=', net.family)
    .where('_first', '>=', hexKey(net.first, net.family))
    .where('_last', '<=', hexKey(net.last, net.family))
    .where('_len', '>', net.len);
  const vrf = vrfScope(p);
  if (vrf !== undefined) q = vrf === null ? q.where('vrf_id', 'is', null) : q.where('vrf_id', '=', vrf);
  const children = (await q.orderBy('_first').limit(100_000).execute()).map((r) => [BigInt(`0x${r._first}`), BigInt(`0x${r._last}`)] as const);
  const out: Net[] = [];
  let cursor = net.first;
  const width = net.family === 4 ? 32 : 128;
  const emit = (from: bigint, to: bigint) => {
    // The largest aligned blocks that tile [from, to].
    while (from <= to) {
      let size = 0;
      while (size < width && (from & ((1n << BigInt(size + 1)) - 1n)) === 0n && from + (1n << BigInt(size + 1)) - 1n <= to) size++;
      out.push({ family: net.family, first: from, last: from + (1n << BigInt(size)) - 1n, len: width - size });
      from += 1n << BigInt(size);
    }
  };
  for (const [a, b] of children) {
    if (a > cursor) emit(cursor, a - 1n);
    if (b + 1n > cursor) cursor = b + 1n;
  }
  if (cursor <= net.last) emit(cursor, net.last);
  return out;
}

async function vrfBrief(req: FastifyRequest, ctx: ReadCtx, vrfId: number | null) {
  if (vrfId === null) return null;
  return (await loadBriefs({ ...ctx, base: baseUrl(req) }, model('vrf'), [vrfId])).get(vrfId) ?? null;
}

function requestedItems(body: unknown, max: number): { items: Record<string, unknown>[]; many: boolean } {
  const many = Array.isArray(body);
  const raw = many ? asList(body, max) : [body ?? {}];
  for (const item of raw) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw validationError({ non_field_errors: ['Invalid data. Expected a dictionary.'] });
  }
  return { items: raw as Record<string, unknown>[], many };
}

/**
 * `/api/ipam/prefixes/<id>/available-ips/` and `available-prefixes/`: GET lists what is free; POST
 * allocates one object (a dict) or many (a list) in one transaction that holds the prefix's row
 * lock, so concurrent allocations from one prefix never hand out the same address.
 */
export function availableRoutes(app: FastifyInstance, sink: ChangeSink): void {
  const ctxOf = (): ReadCtx => ({ db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base: '' });
  const ips = '/api/ipam/prefixes/:id/available-ips/';
  const prefixes = '/api/ipam/prefixes/:id/available-prefixes/';

  app.get(ips, { preHandler: [requirePermission('ipam.ipaddress'), requireViewOr404('ipam.prefix')], config: { shaped: true }, schema: { tags: ['ipam'], summary: 'Available IP addresses of a prefix' } }, async (req) => {
    const ctx = ctxOf();
    const p = await fetchRow(ctx, prefixModel(), objectId(req.params));
    if (!p) throw notFound();
    const { limit } = pageOf(req.query as Record<string, unknown>);
    const net = parseNet(p.prefix)!;
    const vrf = await vrfBrief(req, ctx, p.vrf_id);
    return (await freeAddresses(ctx, p, limit)).map((a) => ({ family: net.family, address: `${bigToIp(a, net.family)}/${net.len}`, vrf }));
  });

  app.post(ips, { preHandler: [requirePermission('ipam.ipaddress'), requireViewOr404('ipam.prefix')], config: { shaped: true }, schema: { tags: ['ipam'], summary: 'Allocate IP addresses from a prefix' } }, async (req, reply) => {
    const id = objectId(req.params);
    const { items, many } = requestedItems(req.body, sink.deps.config.maxBulk);
    const [created, w] = await writeAs(sink, req, async (w) => {
      const ctx = readCtxOf(w);
      const p = await lockRow(w, prefixModel(), id);
      if (!p) throw notFound();
      const net = parseNet(p.prefix)!;
      const free = await freeAddresses(ctx, p, items.length);
      if (free.length < items.length) {
        throw new HttpError(409, { detail: `An insufficient number of IP addresses are available within prefix ${p.prefix} (${items.length} requested, ${free.length} available)` });
      }
      const ids: number[] = [];
      const errors: Errors[] = [];
      for (const [i, item] of items.entries()) {
        const r = await createOne(w, ipModel(), { ...item, address: `${bigToIp(free[i]!, net.family)}/${net.len}`, vrf: p.vrf_id });
        errors.push(r.errors ?? {});
        if (r.id !== undefined) ids.push(r.id);
      }
      if (errors.some((e) => Object.keys(e).length)) throw validationError(many ? errors : errors[0]!);
      return ids;
    });
    const shown = await showObjects(sink, req, ipModel(), created, w.representations);
    reply.code(201);
    return many ? shown : shown[0];
  });

  app.get(prefixes, { preHandler: [requirePermission('ipam.prefix'), requireViewOr404('ipam.prefix')], config: { shaped: true }, schema: { tags: ['ipam'], summary: 'Available child prefixes of a prefix' } }, async (req) => {
    const ctx = ctxOf();
    const p = await fetchRow(ctx, prefixModel(), objectId(req.params));
    if (!p) throw notFound();
    const vrf = await vrfBrief(req, ctx, p.vrf_id);
    const { limit } = pageOf(req.query as Record<string, unknown>);
    return (await freePrefixes(ctx, p)).slice(0, limit).map((n) => ({ family: n.family, prefix: netString(n), vrf }));
  });

  app.post(prefixes, { preHandler: [requirePermission('ipam.prefix'), requireViewOr404('ipam.prefix')], config: { shaped: true }, schema: { tags: ['ipam'], summary: 'Allocate child prefixes from a prefix' } }, async (req, reply) => {
    const id = objectId(req.params);
    const { items, many } = requestedItems(req.body, sink.deps.config.maxBulk);
    const [created, w] = await writeAs(sink, req, async (w) => {
      const ctx = readCtxOf(w);
      const p = await lockRow(w, prefixModel(), id);
      if (!p) throw notFound();
      const parent = parseNet(p.prefix)!;
      const width = parent.family === 4 ? 32 : 128;
      const ids: number[] = [];
      const errors: Errors[] = [];
      for (const item of items) {
        const len = Number(item.prefix_length);
        if (!Number.isInteger(len) || len < parent.len || len > width) {
          errors.push({ prefix_length: [item.prefix_length === undefined ? 'This field is required.' : `Invalid prefix length (${String(item.prefix_length).slice(0, 20)}) for IPv${parent.family}.`] });
          continue;
        }
        // Each allocation sees the ones before it (same transaction).
        const block = (await freePrefixes(ctx, p)).find((n) => n.len <= len);
        if (!block) throw new HttpError(409, { detail: 'Insufficient space is available to accommodate the requested prefix size(s)' });
        const { prefix_length: _l, ...rest } = item;
        const r = await createOne(w, prefixModel(), { ...rest, prefix: `${bigToIp(block.first, parent.family)}/${len}`, vrf: p.vrf_id });
        errors.push(r.errors ?? {});
        if (r.id !== undefined) ids.push(r.id);
      }
      if (errors.some((e) => Object.keys(e).length)) throw validationError(many ? errors : errors[0]!);
      return ids;
    });
    const shown = await showObjects(sink, req, prefixModel(), created, w.representations);
    reply.code(201);
    return many ? shown : shown[0];
  });
}
