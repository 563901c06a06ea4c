/** Query and body checks shared by the secrets, workflows and hub routes (CloudError 400s). */
import { cloudError } from '../identity/errors.ts';
import { storable, textProblem } from '../identity/store.ts';
import { badRequest } from './cloud-common.ts';

export function queryOf(q: unknown): Record<string, unknown> {
  return q && typeof q === 'object' ? (q as Record<string, unknown>) : {};
}

/** A single query value (a repeated parameter is a 400), or undefined. */
export function qString(q: Record<string, unknown>, name: string, max = 200): string | undefined {
  const v = q[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') badRequest(`${name} must be given once`);
  if (!storable(v, max)) badRequest(`${name} must be at most ${max} characters of valid text`);
  return v;
}

export function qInt(q: Record<string, unknown>, name: string, min: number, max: number, fallback: number): number {
  const v = qString(q, name, 20);
  if (v === undefined) return fallback;
  if (!/^-?\d+$/.test(v)) badRequest(`${name} must be an integer`);
  const n = Number(v);
  if (n < min) badRequest(`${name} must be at least ${min}`);
  return Math.min(n, max);
}

export function qEnum<T extends string>(q: Record<string, unknown>, name: string, allowed: readonly T[], fallback: T): T {
  const v = qString(q, name, 50);
  if (v === undefined) return fallback;
  if (!allowed.includes(v as T)) badRequest(`${name} must be one of: ${allowed.join(', ')}`);
  return v as T;
}

export function text(v: unknown, name: string, max: number, opts: { allowEmpty?: boolean } = {}): string {
  const e = textProblem(v, name, max, opts);
  if (e) badRequest(e);
  return opts.allowEmpty ? (v as string) : (v as string).trim();
}

export function optText(v: unknown, name: string, max: number): string | undefined {
  return v === undefined || v === null ? undefined : text(v, name, max, { allowEmpty: true });
}

/** A workflow graph: a JSON object whose text fits the cap. */
export function graph(v: unknown, name: string, maxBytes: number): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) badRequest(`${name} must be a JSON object`);
  const size = Buffer.byteLength(JSON.stringify(v));
  if (size > maxBytes) throw cloudError(413, 'payload_too_large', `${name} is larger than ${maxBytes} bytes`, { max_bytes: maxBytes });
  return v as Record<string, unknown>;
}

export function page<T>(rows: T[], total: number, offset: number): { total: number; has_more: boolean } {
  return { total, has_more: offset + rows.length < total };
}

/** An http(s) URL (absolute, ≤ 2048 characters, no credentials). */
export function urlText(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.length > 2048 || !storable(v, 2048)) badRequest(`${name} must be an http(s) URL of at most 2048 characters`);
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    badRequest(`${name} must be an absolute http(s) URL`);
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.username || u.password) badRequest(`${name} must be an http(s) URL without credentials`);
  return v;
}

export function strList(v: unknown, name: string, maxItems: number, maxLen: number): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > maxItems) badRequest(`${name} must be an array of at most ${maxItems} strings`);
  return v.map((x, i) => text(x, `${name}[${i}]`, maxLen));
}
