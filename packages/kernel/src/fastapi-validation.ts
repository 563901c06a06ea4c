import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

/** One entry of FastAPI/pydantic v2's `{"detail": [...]}` 422 body. */
export interface ValidationEntry {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

type Where = 'body' | 'query' | 'path' | 'header';
const CONTEXT: Record<string, Where> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

export function locPrefix(validationContext: string | undefined): Where {
  return CONTEXT[validationContext ?? 'body'] ?? 'body';
}

function pointerToLoc(pointer: string): Array<string | number> {
  if (!pointer) return [];
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}

function valueAt(root: unknown, loc: Array<string | number>): unknown {
  let cur: any = root;
  for (const k of loc) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[k as any];
  }
  return cur;
}

function typeEntry(expected: string, input: unknown): Pick<ValidationEntry, 'type' | 'msg'> {
  const isStr = typeof input === 'string';
  switch (expected) {
    case 'string':
      return { type: 'string_type', msg: 'Input should be a valid string' };
    case 'integer':
      if (isStr) return { type: 'int_parsing', msg: 'Input should be a valid integer, unable to parse string as an integer' };
      if (typeof input === 'number') return { type: 'int_from_float', msg: 'Input should be a valid integer, got a number with a fractional part' };
      return { type: 'int_type', msg: 'Input should be a valid integer' };
    case 'number':
      if (isStr) return { type: 'float_parsing', msg: 'Input should be a valid number, unable to parse string as a number' };
      return { type: 'float_type', msg: 'Input should be a valid number' };
    case 'boolean':
      if (isStr || typeof input === 'number') return { type: 'bool_parsing', msg: 'Input should be a valid boolean, unable to interpret input' };
      return { type: 'bool_type', msg: 'Input should be a valid boolean' };
    case 'object':
      return { type: 'dict_type', msg: 'Input should be a valid dictionary' };
    case 'array':
      return { type: 'list_type', msg: 'Input should be a valid list' };
    case 'null':
      return { type: 'none_required', msg: 'Input should be None' };
    default:
      return { type: 'value_error', msg: `Input should be a valid ${expected}` };
  }
}

/** The pydantic message for an unparsable UUID, including its literal backticks. */
export function uuidParsingMessage(input: string): string {
  const body = input.replace(/^urn:uuid:/i, '');
  const bad = [...body].findIndex((c) => !/[0-9a-fA-F-]/.test(c));
  if (bad >= 0) {
    return `invalid character: expected an optional prefix of \`urn:uuid:\` followed by [0-9a-fA-F-], found \`${body[bad]}\` at ${bad + 1}`;
  }
  if (!body.includes('-')) return `invalid length: expected length 32 for simple format, found ${body.length}`;
  const groups = body.split('-');
  if (groups.length !== 5) return `invalid group count: expected 5, found ${groups.length}`;
  const expected = [8, 4, 4, 4, 12];
  const i = groups.findIndex((g, n) => g.length !== expected[n]);
  return `invalid group length in group ${i}: expected ${expected[i]}, found ${groups[i]?.length ?? 0}`;
}

/**
 * Maps Ajv errors (allErrors, verbose) onto pydantic v2's entries. Errors of
 * a failed `anyOf` branch are collapsed onto the first non-null branch, as
 * pydantic reports `Optional[X]` failures as failures of X.
 */
export function toFastApiErrors(
  errors: FastifySchemaValidationError[],
  where: Where,
  data: unknown,
  rawQuery?: Record<string, unknown>,
): ValidationEntry[] {
  const out: ValidationEntry[] = [];
  const seen = new Set<string>();
  // Ajv reports anyOf failures as the branch errors followed by the anyOf error itself.
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const e of errors as Array<FastifySchemaValidationError & { data?: unknown; schemaPath: string }>) {
    if (e.keyword === 'anyOf') continue;
    let loc = pointerToLoc(e.instancePath);
    const p = (e.params ?? {}) as Record<string, any>;
    if (anyOfPaths.has(e.instancePath) && /\/anyOf\/(\d+)\//.test(e.schemaPath)) {
      const branch = Number(/\/anyOf\/(\d+)\//.exec(e.schemaPath)![1]);
      if (e.keyword === 'type' && p.type === 'null') continue;
      if (branch > 0 && e.keyword === 'type') {
        // Keep only the first branch that is not `null`.
        const key = `${e.instancePath}|anyof`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
    }
    let input: unknown = e.data !== undefined ? e.data : valueAt(data, loc);
    if (where === 'query' && rawQuery && loc.length === 1 && typeof loc[0] === 'string' && rawQuery[loc[0]] !== undefined) {
      input = rawQuery[loc[0]];
    }
    let entry: ValidationEntry;
    switch (e.keyword) {
      case 'required': {
        const parent = loc;
        loc = [...loc, p.missingProperty];
        entry = { type: 'missing', loc: [], msg: 'Field required', input: where === 'body' ? valueAt(data, parent) ?? null : null };
        break;
      }
      case 'type': {
        const expected = String(Array.isArray(p.type) ? p.type[0] : p.type);
        const format = (e as { parentSchema?: { format?: string } }).parentSchema?.format;
        if (where === 'body' && loc.length === 0 && expected === 'object') {
          // The body as a whole is a model: pydantic validates it with from_attributes.
          entry = { type: 'model_attributes_type', loc: [], msg: 'Input should be a valid dictionary or object to extract fields from', input };
        } else if (expected === 'string' && format === 'uuid') {
          entry = { type: 'uuid_type', loc: [], msg: 'UUID input should be a string, bytes or UUID object', input };
        } else {
          entry = { ...typeEntry(expected, input), loc: [], input };
        }
        break;
      }
      case 'minimum':
        entry = { type: 'greater_than_equal', loc: [], msg: `Input should be greater than or equal to ${p.limit}`, input, ctx: { ge: p.limit } };
        break;
      case 'maximum':
        entry = { type: 'less_than_equal', loc: [], msg: `Input should be less than or equal to ${p.limit}`, input, ctx: { le: p.limit } };
        break;
      case 'exclusiveMinimum':
        entry = { type: 'greater_than', loc: [], msg: `Input should be greater than ${p.limit}`, input, ctx: { gt: p.limit } };
        break;
      case 'exclusiveMaximum':
        entry = { type: 'less_than', loc: [], msg: `Input should be less than ${p.limit}`, input, ctx: { lt: p.limit } };
        break;
      case 'minLength':
        entry = { type: 'string_too_short', loc: [], msg: `String should have at least ${p.limit} character${p.limit === 1 ? '' : 's'}`, input, ctx: { min_length: p.limit } };
        break;
      case 'maxLength':
        entry = { type: 'string_too_long', loc: [], msg: `String should have at most ${p.limit} character${p.limit === 1 ? '' : 's'}`, input, ctx: { max_length: p.limit } };
        break;
      case 'minItems':
        entry = { type: 'too_short', loc: [], msg: `List should have at least ${p.limit} item${p.limit === 1 ? '' : 's'} after validation, not ${Array.isArray(input) ? input.length : 0}`, input, ctx: { field_type: 'List', min_length: p.limit, actual_length: Array.isArray(input) ? input.length : 0 } };
        break;
      case 'maxItems':
        entry = { type: 'too_long', loc: [], msg: `List should have at most ${p.limit} item${p.limit === 1 ? '' : 's'} after validation, not ${Array.isArray(input) ? input.length : 0}`, input, ctx: { field_type: 'List', max_length: p.limit, actual_length: Array.isArray(input) ? input.length : 0 } };
        break;
      case 'format':
        if (p.format === 'uuid') {
          const s = String(input);
          entry = { type: 'uuid_parsing', loc: [], msg: `Input should be a valid UUID, ${uuidParsingMessage(s)}`, input, ctx: { error: uuidParsingMessage(s) } };
        } else if (p.format === 'date-time') {
          entry = { type: 'datetime_from_date_parsing', loc: [], msg: 'Input should be a valid datetime or date, invalid character in year', input, ctx: { error: 'invalid character in year' } };
        } else {
          entry = { type: 'value_error', loc: [], msg: `Value error, invalid ${p.format}`, input };
        }
        break;
      case 'enum': {
        const allowed = (p.allowedValues ?? []) as unknown[];
        const expected = allowed.map((v) => `'${v}'`).join(', ').replace(/, ([^,]*)$/, ' or $1');
        entry = { type: 'enum', loc: [], msg: `Input should be ${expected}`, input, ctx: { expected } };
        break;
      }
      case 'const':
        entry = { type: 'literal_error', loc: [], msg: `Input should be ${JSON.stringify(p.allowedValue)}`, input, ctx: { expected: JSON.stringify(p.allowedValue) } };
        break;
      case 'additionalProperties':
        loc = [...loc, p.additionalProperty];
        entry = { type: 'extra_forbidden', loc: [], msg: 'Extra inputs are not permitted', input: valueAt(data, loc) };
        break;
      case 'pattern':
        entry = { type: 'string_pattern_mismatch', loc: [], msg: `String should match pattern '${p.pattern}'`, input, ctx: { pattern: p.pattern } };
        break;
      default:
        entry = { type: 'value_error', loc: [], msg: e.message ?? 'Invalid value', input };
    }
    // FastAPI's key order: type, loc, msg, input, ctx.
    const ordered: ValidationEntry = { type: entry.type, loc: [where, ...loc], msg: entry.msg, input: entry.input === undefined ? null : entry.input };
    if (entry.ctx) ordered.ctx = entry.ctx;
    entry = ordered;
    const key = JSON.stringify(entry.loc) + entry.type;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(entry);
  }
  return out;
}
