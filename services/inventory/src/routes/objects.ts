import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { Type } from 'typebox';
import { authenticate } from '../auth/index.ts';
import { requirePermission } from '../api/guards.ts';
import { notFound, validationError } from '../api/errors.ts';
import { baseUrl, pageOf, paginated } from '../api/pagination.ts';
import { objectId, selectFields, truthy } from '../api/params.ts';
import { runWrite, type ChangeSink, type WriteContext } from '../changes/write.ts';
import type { Query } from '../models/filters.ts';
import { listRows } from '../models/list.ts';
import { fetchRow, fetchRowsByIds, type ReadCtx } from '../models/read.ts';
import { represent } from '../models/represent.ts';
import { MODELS } from '../models/registry.ts';
import { errorBody, idParams, listQuerySchema, pageOf as pageSchema, responseSchemas, writableSchema } from '../models/schemas.ts';
import type { ModelDef } from '../models/types.ts';
import { validateInput, type Errors } from '../models/validate.ts';
import { createObject, deleteObject, lockRow, readCtxOf, uniquenessErrors, updateObject } from '../models/write.ts';

const MAX_BULK = 1000;
/** These routes build absolute URLs and apply ?brief / ?fields themselves (api/shape.ts skips them). */
const SHAPED = { shaped: true };

/** A relative-URL representation (as computed for events) with the request's absolute base, as the API returns it. */
function absoluteUrls(v: unknown, base: string): any {
  if (Array.isArray(v)) return v.map((x) => absoluteUrls(x, base));
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = (k === 'url' || k === 'display_url') && typeof x === 'string' && x.startsWith('/') && !x.startsWith('//') ? base + x : absoluteUrls(x, base);
  return out;
}

function readCtx(sink: ChangeSink, req: FastifyRequest): ReadCtx {
  const ctx: ReadCtx = { db: sink.deps.storage.db, dialect: sink.deps.storage.dialect, base: baseUrl(req) };
  // As NetBox skips the config context annotation: `?exclude=config_context` costs no merge.
  if (omitted((req.query ?? {}) as Query)?.split(',').includes('config_context')) ctx.skipConfigContext = true;
  return ctx;
}

function asList(body: unknown, max = MAX_BULK): unknown[] {
  if (!Array.isArray(body)) {
    const t = body === null || body === undefined ? 'NoneType' : typeof body === 'string' ? 'str' : typeof body === 'object' ? 'dict' : typeof body;
    throw validationError({ non_field_errors: [`Expected a list of items but got type "${t}".`] });
  }
  if (body.length > max) throw validationError({ non_field_errors: [`Ensure this field has no more than ${max} elements.`] });
  return body;
}

/** Unique/FK violations that slipped past the validators (concurrent writers) become 400/409, never 500. */
function translateDbError(err: unknown): never {
  const e = err as { code?: string; message?: string };
  if (e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE') throw validationError({ non_field_errors: ['An object with these values already exists.'] });
  if (e?.code === '23503' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw new HttpError(409, { detail: 'The request conflicts with related objects that changed concurrently.' });
  throw err;
}

/** Field-level unique errors for the fields that did validate, merged in field order as DRF reports them. */
async function withUniqueFieldErrors(w: WriteContext, m: ModelDef, errors: Errors, values: Record<string, unknown> | undefined, existing: Record<string, unknown> | null): Promise<Errors> {
  if (!values) return errors;
  const valid = Object.fromEntries(Object.entries(values).filter(([col]) => !errors[m.fields.find((f) => f.column === col)?.name ?? col]));
  const unique: Errors = {};
  await uniquenessErrors(w, m, valid, existing as any, unique, true);
  if (!Object.keys(unique).length) return errors;
  const merged: Errors = {};
  for (const f of m.fields) if (errors[f.name] || unique[f.name]) merged[f.name] = errors[f.name] ?? unique[f.name]!;
  return { ...merged, ...errors };
}

async function createOne(w: WriteContext, m: ModelDef, data: unknown): Promise<{ id?: number; errors?: Errors }> {
  const ctx = readCtxOf(w);
  const v = await validateInput(ctx, m, data, null, false);
  if (!v.ok) return { errors: await withUniqueFieldErrors(w, m, v.errors, v.values, null) };
  const errors: Errors = {};
  await uniquenessErrors(w, m, v.value.values, null, errors);
  if (Object.keys(errors).length) return { errors };
  return { id: await createObject(w, m, v.value) };
}

async function updateOne(w: WriteContext, m: ModelDef, id: number, data: unknown, partial: boolean): Promise<{ errors?: Errors }> {
  const ctx = readCtxOf(w);
  const existing = await lockRow(w, m, id);
  if (!existing) throw notFound();
  const v = await validateInput(ctx, m, data, existing, partial);
  if (!v.ok) return { errors: await withUniqueFieldErrors(w, m, v.errors, v.values, existing) };
  const errors: Errors = {};
  await uniquenessErrors(w, m, v.value.values, existing, errors);
  if (Object.keys(errors).length) return { errors };
  await updateObject(w, m, existing, v.value);
  return {};
}

/** `?omit=` plus NetBox's `?exclude=config_context` (devices and VMs: the rendered context left out, as Ansible's inventory asks). */
function omitted(q: Query): string | undefined {
  const pick = (v: unknown) => (Array.isArray(v) ? v[v.length - 1] : v);
  const omit = pick(q.omit);
  const exclude = pick(q.exclude);
  const excluded = typeof exclude === 'string' && exclude.split(',').some((x) => x.trim() === 'config_context');
  if (!excluded) return typeof omit === 'string' ? omit : undefined;
  return typeof omit === 'string' && omit.trim() ? `${omit},config_context` : 'config_context';
}

/** Representations for the response: those the write already computed (re-based to absolute URLs), else read afresh. */
export async function showObjects(sink: ChangeSink, req: FastifyRequest, m: ModelDef, ids: number[], known?: Map<string, Record<string, unknown>>) {
  const base = baseUrl(req);
  const missing = ids.filter((id) => !known?.has(`${m.objectType}:${id}`));
  const rows = missing.length ? await fetchRowsByIds(readCtx(sink, req), m, missing) : new Map();
  const fresh = new Map((await represent(readCtx(sink, req), m, missing.map((id) => rows.get(id)!).filter(Boolean))).map((r) => [r.id as number, r]));
  return ids
    .map((id) => {
      const k = known?.get(`${m.objectType}:${id}`);
      return k ? absoluteUrls(k, base) : fresh.get(id);
    })
    .filter(Boolean);
}

/** Runs a write request in one transaction as the caller; unique/FK races become 4xx. */
export async function writeAs<T>(sink: ChangeSink, req: FastifyRequest, fn: (w: WriteContext) => Promise<T>): Promise<[T, WriteContext]> {
  const p = (await authenticate(req))!;
  let ctx: WriteContext | undefined;
  const out = await runWrite(sink, req, p, (w) => {
    ctx = w;
    return fn(w);
  }).catch(translateDbError);
  return [out, ctx!];
}

export { createOne, asList };

/** The NetBox REST endpoints of one model: list/create/bulk on the collection, read/update/delete on members. */
export function registerModelRoutes(app: FastifyInstance, sink: ChangeSink, m: ModelDef): void {
  const list = `/api/${m.app}/${m.path}/`;
  const detail = `${list}:id/`;
  const tags = [m.docsTag ?? m.app];
  const out = responseSchemas(MODELS);
  const one = Type.Union([out.full(m), out.brief(m.key)]);
  const errors4xx = { 400: errorBody, 403: errorBody, 404: errorBody };
  // NetBox's object permissions: the method names the action on this model.
  const perm = requirePermission(m.objectType);
  const write = async <T>(req: FastifyRequest, fn: (w: WriteContext) => Promise<T>): Promise<[T, WriteContext]> => {
    const p = (await authenticate(req))!;
    let ctx: WriteContext | undefined;
    const out = await runWrite(sink, req, p, (w) => {
      ctx = w;
      return fn(w);
    }).catch(translateDbError);
    return [out, ctx!];
  };

  const show = (req: FastifyRequest, ids: number[], known?: Map<string, Record<string, unknown>>) => showObjects(sink, req, m, ids, known);

  app.get(list, { preHandler: perm, config: SHAPED, schema: { tags, summary: `List ${m.verboseName}s`, querystring: listQuerySchema(m), response: { 200: pageSchema(one), ...errors4xx } } }, async (req) => {
    const q = req.query as Query;
    const page = pageOf(q);
    const ctx = readCtx(sink, req);
    const { count, rows } = await listRows(ctx, m, q, page).catch((err) => {
      // PostgreSQL refuses a few patterns RE2 accepts (`$?`): its "invalid regular expression" is the filter's 400.
      if ((err as { code?: string })?.code === '2201B') {
        const key = Object.keys(q).find((k) => /__i?regex$/.test(k)) ?? 'non_field_errors';
        throw validationError({ [key]: [`Invalid regular expression: ${String((err as Error).message).slice(0, 200)}`] });
      }
      throw err;
    });
    const omit = omitted(q);
    const results = (await represent(ctx, m, rows, truthy(q.brief))).map((r) => selectFields(r, q.fields, omit));
    return paginated(req, page, count, results);
  });

  app.get(detail, { preHandler: perm, config: SHAPED, schema: { tags, summary: `Get a ${m.verboseName}`, params: idParams, response: { 200: one, ...errors4xx } } }, async (req) => {
    const id = objectId(req.params);
    const ctx = readCtx(sink, req);
    const row = await fetchRow(ctx, m, id);
    if (!row) throw notFound();
    const q = req.query as Query;
    return selectFields((await represent(ctx, m, [row], truthy(q.brief)))[0]!, q.fields, omitted(q));
  });
  if (m.readOnly) return;

  app.post(
    list,
    { preHandler: perm, schema: { tags, summary: `Create one ${m.verboseName} or a list of them`, body: Type.Union([writableSchema(m, false), Type.Array(writableSchema(m, false))]), response: { 201: Type.Union([out.full(m), Type.Array(out.full(m))]), ...errors4xx } } },
    async (req, reply) => {
      const body = req.body ?? {};
      const bulk = Array.isArray(body);
      const items = bulk ? asList(body, sink.deps.config.maxBulk) : [body];
      const [ids, done] = await write(req, async (w) => {
        const out: number[] = [];
        const errors: Errors[] = [];
        for (const item of items) {
          const r = await createOne(w, m, item);
          errors.push(r.errors ?? {});
          if (r.id !== undefined) out.push(r.id);
        }
        if (errors.some((e) => Object.keys(e).length)) throw validationError(bulk ? errors : errors[0]!);
        return out;
      });
      const shown = await show(req, ids, done.representations);
      reply.code(201);
      return bulk ? shown : shown[0];
    },
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    const partial = method === 'PATCH';
    app.route({
      method,
      url: detail,
      preHandler: perm,
      schema: { tags, summary: `${partial ? 'Partially update' : 'Update'} a ${m.verboseName}`, params: idParams, body: writableSchema(m, partial), response: { 200: out.full(m), ...errors4xx } },
      handler: async (req) => {
        const id = objectId(req.params);
        const [, done] = await write(req, async (w) => {
          const r = await updateOne(w, m, id, req.body ?? {}, partial);
          if (r.errors) throw validationError(r.errors);
        });
        return (await show(req, [id], done.representations))[0];
      },
    });
    app.route({
      method,
      url: list,
      preHandler: perm,
      schema: {
        tags,
        summary: `Bulk ${partial ? 'partial ' : ''}update of ${m.verboseName}s (a list with ids)`,
        body: Type.Array(Type.Intersect([Type.Object({ id: Type.Integer({ minimum: 1 }) }), writableSchema(m, true)])),
        response: { 200: Type.Array(out.full(m)), ...errors4xx },
      },
      handler: async (req) => {
        const items = asList(req.body, sink.deps.config.maxBulk);
        const [ids, done] = await write(req, async (w) => {
          const out: number[] = [];
          const errors: Errors[] = [];
          for (const item of items) {
            const rawId = item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>).id : undefined;
            if (rawId === undefined || rawId === null) {
              errors.push({ id: ['This field is required.'] });
              continue;
            }
            if (!(typeof rawId === 'number' && Number.isSafeInteger(rawId)) && !(typeof rawId === 'string' && /^\d{1,15}$/.test(rawId))) {
              errors.push({ id: ['A valid integer is required.'] });
              continue;
            }
            const r = await updateOne(w, m, Number(rawId), item, partial);
            errors.push(r.errors ?? {});
            out.push(Number(rawId));
          }
          if (errors.some((e) => Object.keys(e).length)) throw validationError(errors);
          return out;
        });
        return show(req, [...new Set(ids)], done.representations);
      },
    });
  }

  app.delete(detail, { preHandler: perm, schema: { tags, summary: `Delete a ${m.verboseName}`, params: idParams } }, async (req, reply) => {
    const id = objectId(req.params);
    await write(req, async (w) => {
      const row = await lockRow(w, m, id);
      if (!row) throw notFound();
      await deleteObject(w, m, row);
    });
    return reply.code(204).send();
  });

  app.delete(
    list,
    { preHandler: perm, schema: { tags, summary: `Bulk delete of ${m.verboseName}s (a list of {id})`, body: Type.Array(Type.Object({ id: Type.Integer({ minimum: 1 }) })) } },
    async (req, reply) => {
      const items = asList(req.body, sink.deps.config.maxBulk);
      const errors: Errors[] = items.map((item): Errors => {
        const id = item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>).id : undefined;
        if (id === undefined || id === null) return { id: ['This field is required.'] };
        if (!(typeof id === 'number' && Number.isSafeInteger(id)) && !(typeof id === 'string' && /^\d{1,15}$/.test(id))) return { id: ['A valid integer is required.'] };
        return {};
      });
      if (errors.some((e) => Object.keys(e).length)) throw validationError(errors);
      const ids = [...new Set(items.map((i) => Number((i as Record<string, unknown>).id)))];
      await write(req, async (w) => {
        for (const id of ids) {
          // Cascades may already have removed a listed object.
          const row = await lockRow(w, m, id);
          if (row) await deleteObject(w, m, row);
        }
      });
      return reply.code(204).send();
    },
  );
}
