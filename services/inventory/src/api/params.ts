import { notFound } from './errors.ts';

/** A detail route's `<int:pk>`: anything else is a 404, as Django's URL resolver. */
export function objectId(params: unknown): number {
  const raw = (params as { id?: string }).id ?? '';
  if (!/^\d{1,15}$/.test(raw)) throw notFound();
  return Number(raw);
}

export function truthy(v: unknown): boolean {
  const s = Array.isArray(v) ? v[v.length - 1] : v;
  return typeof s === 'string' && ['true', '1', 'True', 'yes', 'on'].includes(s.trim());
}

/** `?fields=a,b` (NetBox 4 dynamic fields): keep only those keys. */
export function selectFields<T extends Record<string, unknown>>(obj: T, fields: unknown, omit?: unknown): T {
  const names = (v: unknown) => {
    const s = Array.isArray(v) ? v[v.length - 1] : v;
    return typeof s === 'string' && s.trim() !== '' ? new Set(s.split(',').map((x) => x.trim())) : undefined;
  };
  const keep = names(fields);
  const drop = names(omit);
  if (!keep && !drop) return obj;
  return Object.fromEntries(Object.entries(obj).filter(([k]) => (!keep || keep.has(k)) && !drop?.has(k))) as T;
}
