import type { FastifyRequest } from 'fastify';
import { HttpError } from '@svc/kernel';
import { unstorableText } from '../domain/values.ts';

/** Deeper JSON than this is refused: serialisation, containment checks and jsonb all recurse. */
export const MAX_JSON_DEPTH = 64;

interface Problem {
  loc: Array<string | number>;
  type: string;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

function checkString(s: string, loc: Array<string | number>): Problem | undefined {
  // PostgreSQL text and jsonb cannot hold NUL or unpaired surrogates; refuse them on every storage alike.
  const why = unstorableText(s);
  if (why === 'nul') return { loc, type: 'string_unicode', msg: 'Input should be a valid string, NUL characters are not allowed', input: s };
  if (why === 'surrogate') return { loc, type: 'string_unicode', msg: 'Input should be a valid string, unable to parse raw data as a unicode string', input: s };
  return undefined;
}

/**
 * Depth-first over a JSON value; `path` is the location of `v`, shared and
 * restored on the way back (copied only for a problem: a batch of 100
 * messages walks thousands of values, and a location array per value was
 * most of this hook's cost).
 */
function walk(v: unknown, path: Array<string | number>, depth: number): Problem | undefined {
  if (typeof v === 'string') return checkString(v, path) && checkString(v, [...path]);
  if (v === null || typeof v !== 'object') return undefined;
  if (depth > MAX_JSON_DEPTH) {
    const reason = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
    return { loc: [...path], type: 'value_error', msg: `Value error, ${reason}`, input: null, ctx: { error: reason } };
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      const p = walk(v[i], path, depth + 1);
      path.pop();
      if (p) return p;
    }
    return undefined;
  }
  for (const k in v) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    path.push(k);
    const p = (checkString(k, path) && checkString(k, [...path])) || walk((v as Record<string, unknown>)[k], path, depth + 1);
    path.pop();
    if (p) return p;
  }
  return undefined;
}

/**
 * Refuses, as a FastAPI-shaped 422, input that passed the schema but that no
 * storage can keep faithfully: NUL characters, unpaired surrogates, and
 * absurdly deep JSON. Runs after validation, before any handler.
 */
export async function inputGuard(req: FastifyRequest): Promise<void> {
  const problem =
    walk(req.params, ['path'], 0) ?? walk(req.query, ['query'], 0) ?? walk(req.body, ['body'], 0);
  if (!problem) return;
  const entry: Record<string, unknown> = { type: problem.type, loc: problem.loc, msg: problem.msg, input: problem.input };
  if (problem.ctx) entry.ctx = problem.ctx;
  throw new HttpError(422, { detail: [entry] });
}
