import { sql, type RawBuilder } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import { parseIsoTime, validation } from './util.ts';

/**
 * The v3 filter language (the reference's `apply_filter`): field conditions
 * ANDed together, `AND` / `OR` / `NOT` lists of sub-filters, comparison
 * operators, `*` wildcards and metadata conditions. Compiled to one SQL
 * condition for either dialect; anything it cannot express is a 422
 * `{"detail": …}` before any SQL runs.
 */
export type ColumnKind = 'text' | 'time' | 'bool' | 'int' | 'json' | 'absent';
export interface FilterColumn {
  /**
   * Qualified column reference, e.g. `v3_messages.peer`. Kind `absent`: a JSON list column of the reference
   * that this service never fills (every row holds NULL there), so it has no SQL column.
   */
  ref: string;
  kind: ColumnKind;
}
export interface FilterModel {
  /** The reference's model name, for error messages. */
  name: string;
  columns: Record<string, FilterColumn>;
}

const OPS = new Set(['gte', 'lte', 'gt', 'lt', 'ne', 'in', 'contains', 'icontains']);
const SORTED_OPS = "['contains', 'gt', 'gte', 'icontains', 'in', 'lt', 'lte', 'ne']";
const LOGICAL = new Set(['AND', 'OR', 'NOT']);
/** The reference's nesting limit. */
export const MAX_FILTER_DEPTH = 5;
/** Our bound on conditions per filter, so a 10,000-term filter is refused before it becomes SQL. */
export const MAX_FILTER_TERMS = 1000;

type Cond = RawBuilder<unknown>;
const fail = (msg: string) => validation(msg);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const typeName = (v: unknown) =>
  v === null ? 'NoneType' : Array.isArray(v) ? 'list' : typeof v === 'string' ? 'str' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? (Number.isInteger(v) ? 'int' : 'float') : 'dict';

function and(conds: Cond[]): Cond | undefined {
  if (!conds.length) return undefined;
  return conds.length === 1 ? conds[0] : sql`(${sql.join(conds, sql` and `)})`;
}

class Compiler {
  terms = 0;
  constructor(
    readonly model: FilterModel,
    readonly d: SqlDialect,
  ) {}

  count(n = 1): void {
    this.terms += n;
    if (this.terms > MAX_FILTER_TERMS) throw fail(`Filter has too many conditions (at most ${MAX_FILTER_TERMS})`);
  }

  build(f: unknown, depth: number): Cond | undefined {
    if (depth > MAX_FILTER_DEPTH) throw fail(`Filter nesting exceeds maximum depth of ${MAX_FILTER_DEPTH}`);
    if (!isObj(f)) throw fail('Invalid filter configuration');
    const conds: Cond[] = [];
    for (const op of ['AND', 'OR', 'NOT'] as const) {
      if (!(op in f)) continue;
      const list = f[op];
      if (op === 'NOT' && list === null) throw fail('NOT operator cannot be None');
      if (!Array.isArray(list)) throw fail(`${op} operator must contain a list, got ${typeName(list)}`);
      this.count(list.length);
      const subs = list.map((s) => this.build(s, depth + 1)).filter((c): c is Cond => c !== undefined);
      if (!subs.length) continue;
      if (op === 'AND') conds.push(and(subs)!);
      else if (op === 'OR') conds.push(subs.length === 1 ? subs[0]! : sql`(${sql.join(subs, sql` or `)})`);
      // `is not true`: a row whose column is NULL is not excluded by NOT [{col: value}].
      else conds.push(and(subs.map((c) => sql`((${c}) is not true)`))!);
    }
    for (const [key, value] of Object.entries(f)) {
      if (LOGICAL.has(key)) continue;
      this.count();
      const c = this.field(key, value);
      if (c) conds.push(c);
    }
    return and(conds);
  }

  field(key: string, value: unknown): Cond | undefined {
    const col = Object.hasOwn(this.model.columns, key) ? this.model.columns[key] : undefined;
    if (!col) throw fail(`Column '${key}' is not allowed to be filtered on or does not exist on ${this.model.name}`);
    if (value === '*') return undefined;
    if (col.kind === 'absent') return this.absent(key, value);
    const ref = sql.ref(col.ref);
    if (value === null) return sql`(${ref} is null)`;
    if (Array.isArray(value) && col.kind !== 'json') value = { in: value };
    if (isObj(value)) {
      const keys = Object.keys(value);
      if (keys.some((k) => OPS.has(k))) return this.comparisons(key, col, value);
      if (col.kind === 'json') return this.metadata(col, value);
      throw fail(`Invalid filter for column '${key}': unsupported operator(s) ${pyKeys(keys)}. Expected one of ${SORTED_OPS} or a scalar value.`);
    }
    if (col.kind === 'json') {
      if (Array.isArray(value)) return this.d.jsonContains(col.ref, value);
      throw fail(`Invalid filter for column '${key}': a JSONB column takes an object, optionally under 'contains'`);
    }
    return sql`(${ref} = ${this.operand(key, col, value, '')})`;
  }

  comparisons(key: string, col: FilterColumn, ops: Record<string, unknown>): Cond | undefined {
    const conds: Cond[] = [];
    const ref = sql.ref(col.ref);
    for (const [op, v] of Object.entries(ops)) {
      this.count();
      if (!OPS.has(op)) throw fail(`Unsupported comparison operator: ${op}`);
      if (v === '*') continue;
      if (v === null) {
        if (op !== 'ne') throw fail(`Operator '${op}' does not accept null. Use {"ne": null} for a not-null check, or null on its own for a null check.`);
        conds.push(sql`(${ref} is not null)`);
        continue;
      }
      if (col.kind === 'json') {
        if (op === 'contains' && (isObj(v) || Array.isArray(v))) conds.push(this.d.jsonContains(col.ref, v));
        else throw fail(`Invalid filter for column '${key}': a JSONB column takes an object, optionally under 'contains'`);
        continue;
      }
      if (op === 'in') {
        if (!Array.isArray(v)) throw fail(`Invalid value for 'in' operator: ${String(v)}. Expected an iterable (list, tuple, set), got ${typeName(v)}`);
        if (v.includes('*')) continue;
        this.count(v.length);
        if (!v.length) {
          conds.push(sql`(1 = 0)`);
          continue;
        }
        const vals = v.map((x) => this.operand(key, col, x, 'in'));
        conds.push(sql`(${ref} in (${sql.join(vals)}))`);
        continue;
      }
      if (op === 'contains' || op === 'icontains') {
        if (col.kind !== 'text') throw fail(`Operator '${op}' requires a text column, but '${key}' is ${pyType(col.kind)}`);
        conds.push(this.textContains(ref, String(v), op === 'icontains'));
        continue;
      }
      const operand = this.operand(key, col, v, op);
      if (col.kind === 'bool' && op !== 'ne') throw fail(`Operator '${op}' is not supported on boolean column '${key}'`);
      conds.push(sql`(${ref} ${sql.raw(SQL_OP[op]!)} ${operand})`);
    }
    return and(conds);
  }

  /**
   * A column that is NULL on every row (kind `absent`): `null` matches all, `{"ne": null}` and containment
   * match none. Containment takes a list or an object, as on the reference's JSONB columns, and also one
   * string (an element: the SDK's `conclusions.derived()` sends `{"source_ids": {"contains": id}}`).
   */
  absent(key: string, value: unknown): Cond | undefined {
    if (value === null) return sql`(1 = 1)`;
    const ops = isObj(value) && Object.keys(value).some((k) => OPS.has(k)) ? value : { contains: value };
    const conds: Cond[] = [];
    for (const [op, v] of Object.entries(ops)) {
      this.count();
      if (!OPS.has(op)) throw fail(`Unsupported comparison operator: ${op}`);
      if (v === '*') continue;
      if (v === null && op !== 'ne') throw fail(`Operator '${op}' does not accept null. Use {"ne": null} for a not-null check, or null on its own for a null check.`);
      if (v !== null && !(op === 'contains' && (isObj(v) || Array.isArray(v) || typeof v === 'string'))) {
        throw fail(`Invalid filter for column '${key}': a JSONB column takes an object, optionally under 'contains'`);
      }
      conds.push(sql`(1 = 0)`);
    }
    return and(conds);
  }

  textContains(ref: Cond | ReturnType<typeof sql.ref>, needle: string, insensitive: boolean): Cond {
    // strpos/instr: no LIKE pattern, so `%` and `_` in the needle are plain characters.
    const fn = sql.raw(this.d.kind === 'postgres' ? 'strpos' : 'instr');
    return insensitive ? sql`(${fn}(lower(${ref}), lower(${needle})) > 0)` : sql`(${fn}(${ref}, ${needle}) > 0)`;
  }

  /** Binds a value against a column of a given kind, or refuses it (the reference's `_coerce_operand`). */
  operand(key: string, col: FilterColumn, v: unknown, op: string): unknown {
    switch (col.kind) {
      case 'bool':
        if (typeof v !== 'boolean') throw fail(`Invalid value for column '${key}': expected true or false, got ${typeName(v)}`);
        return this.d.bool(v);
      case 'time': {
        if (typeof v !== 'string') throw fail(`Invalid value for column '${key}': expected a datetime, got ${typeName(v)}`);
        const t = parseIsoTime(v);
        if (!t) throw fail(`Invalid datetime value: ${v}`);
        return this.d.timestamp(t);
      }
      case 'int': {
        const n = typeof v === 'number' ? v : typeof v === 'boolean' ? Number(v) : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
        if (!Number.isFinite(n)) throw fail(`Invalid numeric value: ${String(v)}. Expected a number, got ${typeName(v)}`);
        return n;
      }
      case 'text':
        if (typeof v !== 'string') throw fail(`Invalid value for column '${key}': expected a string, got ${typeName(v)}`);
        return v;
      default:
        throw fail(`Column '${key}' cannot be filtered on`);
    }
    void op;
  }

  /** `{"metadata": {"k": v, "n": {"gte": 3}}}`: per-key containment or comparisons on the key's value. */
  metadata(col: FilterColumn, fields: Record<string, unknown>): Cond | undefined {
    const conds: Cond[] = [];
    for (const [k, v] of Object.entries(fields)) {
      this.count();
      if (isObj(v) && Object.keys(v).some((o) => OPS.has(o))) {
        for (const [op, ov] of Object.entries(v)) {
          this.count();
          if (!OPS.has(op)) throw fail(`Unsupported comparison operator: ${op}`);
          if (ov === '*') continue;
          conds.push(this.metaComparison(col, k, op, ov));
        }
      } else if (v !== '*') {
        conds.push(this.d.jsonContains(col.ref, { [k]: v }));
      }
    }
    return and(conds);
  }

  metaComparison(col: FilterColumn, key: string, op: string, v: unknown): Cond {
    const text = this.metaText(col.ref, key);
    if (op === 'in') {
      if (!Array.isArray(v)) throw fail(`Invalid value for 'in' operator: ${String(v)}. Expected an iterable (list, tuple, set), got ${typeName(v)}`);
      this.count(v.length);
      if (v.includes('*')) return sql`(1 = 1)`;
      if (!v.length) return sql`(1 = 0)`;
      return sql`(${text} in (${sql.join(v.map(jsonText))}))`;
    }
    if (op === 'contains' || op === 'icontains') {
      if (v !== null && typeof v === 'object') throw fail(`Invalid value for '${op}' operator: expected a scalar, got ${typeName(v)}`);
      // The reference matches both case-insensitively on metadata values.
      return this.textContains(text, jsonText(v), true);
    }
    // gt/gte/lt/lte/ne: numbers compare numerically (only against numeric values), other strings as text.
    if (typeof v === 'boolean') return sql`(${text} ${sql.raw(SQL_OP[op]!)} ${String(v)})`;
    if (v === null) {
      if (op !== 'ne') throw fail(`Operator '${op}' does not accept null. Use {"ne": null} for a not-null check, or null on its own for a null check.`);
      return sql`(${text} is not null)`;
    }
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v) ? Number(v) : undefined;
    if (n !== undefined && Number.isFinite(n)) return sql`(${this.metaNumber(col.ref, key)} ${sql.raw(SQL_OP[op]!)} ${this.numeric(n)})`;
    if (typeof v !== 'string') throw fail(`Invalid value for numeric operator: ${JSON.stringify(v)}. Expected a number, got ${typeName(v)}`);
    return sql`(${text} ${sql.raw(SQL_OP[op]!)} ${v})`;
  }

  numeric(n: number): Cond {
    return this.d.kind === 'postgres' ? sql`cast(${String(n)} as numeric)` : sql`${n}`;
  }

  /** A metadata key's value as text (PostgreSQL `->>`; booleans as `true`/`false`, objects as JSON). */
  metaText(ref: string, key: string): Cond {
    if (this.d.kind === 'postgres') return sql`(${sql.ref(ref)} ->> ${key})`;
    // json_each is exact for any key (a JSON path would need quoting rules for `"` and `.`).
    return sql`(select case type when 'true' then 'true' when 'false' then 'false' when 'null' then null else cast(value as text) end from json_each(${sql.ref(ref)}) where key = ${key})`;
  }

  /** A metadata key's value when it is a JSON number, else NULL (no cast of arbitrary text can fail). */
  metaNumber(ref: string, key: string): Cond {
    if (this.d.kind === 'postgres') {
      return sql`(case when jsonb_typeof(${sql.ref(ref)} -> ${key}) = 'number' then (${sql.ref(ref)} ->> ${key})::numeric end)`;
    }
    return sql`(select case when type in ('integer', 'real') then value end from json_each(${sql.ref(ref)}) where key = ${key})`;
  }
}

const SQL_OP: Record<string, string> = { gt: '>', gte: '>=', lt: '<', lte: '<=', ne: '<>' };

function jsonText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null) return 'null';
  return JSON.stringify(v);
}

function pyKeys(keys: string[]): string {
  return `[${[...keys].sort().map((k) => `'${k}'`).join(', ')}]`;
}

function pyType(kind: ColumnKind): string {
  return kind === 'time' ? 'datetime' : kind === 'int' ? 'int' : kind === 'bool' ? 'bool' : 'str';
}

/**
 * The SQL condition for `filters`, or undefined when it constrains nothing
 * (`null`, `{}`, wildcards only). Throws a 422 for anything the language does not allow.
 */
export function compileFilter(filters: unknown, model: FilterModel, d: SqlDialect): Cond | undefined {
  if (filters === undefined || filters === null) return undefined;
  if (isObj(filters) && Object.keys(filters).length === 0) return undefined;
  return new Compiler(model, d).build(filters, 0);
}

// Column sets of each resource, in the reference's external names.
export const WORKSPACE_FILTER: FilterModel = {
  name: 'Workspace',
  columns: { id: { ref: 'v3_workspaces.name', kind: 'text' }, created_at: { ref: 'v3_workspaces.created_at', kind: 'time' }, metadata: { ref: 'v3_workspaces.metadata', kind: 'json' } },
};
export const PEER_FILTER: FilterModel = {
  name: 'Peer',
  columns: {
    id: { ref: 'v3_peers.name', kind: 'text' },
    created_at: { ref: 'v3_peers.created_at', kind: 'time' },
    workspace_id: { ref: 'v3_peers.workspace', kind: 'text' },
    metadata: { ref: 'v3_peers.metadata', kind: 'json' },
  },
};
export const SESSION_FILTER: FilterModel = {
  name: 'Session',
  columns: {
    id: { ref: 'v3_sessions.name', kind: 'text' },
    created_at: { ref: 'v3_sessions.created_at', kind: 'time' },
    is_active: { ref: 'v3_sessions.is_active', kind: 'bool' },
    workspace_id: { ref: 'v3_sessions.workspace', kind: 'text' },
    metadata: { ref: 'v3_sessions.metadata', kind: 'json' },
  },
};
export const MESSAGE_FILTER: FilterModel = {
  name: 'Message',
  columns: {
    workspace_id: { ref: 'v3_messages.workspace', kind: 'text' },
    session_id: { ref: 'v3_messages.session', kind: 'text' },
    peer_id: { ref: 'v3_messages.peer', kind: 'text' },
    token_count: { ref: 'v3_messages.token_count', kind: 'int' },
    created_at: { ref: 'v3_messages.created_at', kind: 'time' },
    metadata: { ref: 'v3_messages.metadata', kind: 'json' },
  },
};
export const CONCLUSION_FILTER: FilterModel = {
  name: 'Document',
  columns: {
    // The reference also takes its Document columns by their own names (`id`: the SDK's `getMany`; `source_ids`:
    // its `derived`, links the dreamer writes, which this service's dreams do not).
    id: { ref: 'v3_conclusions.id', kind: 'text' },
    source_ids: { ref: '', kind: 'absent' },
    session_id: { ref: 'v3_conclusions.session', kind: 'text' },
    workspace_id: { ref: 'v3_conclusions.workspace', kind: 'text' },
    observer_id: { ref: 'v3_conclusions.observer', kind: 'text' },
    observed_id: { ref: 'v3_conclusions.observed', kind: 'text' },
    // The reference falls back to internal column names for documents (its recall filters by them).
    observer: { ref: 'v3_conclusions.observer', kind: 'text' },
    observed: { ref: 'v3_conclusions.observed', kind: 'text' },
    content: { ref: 'v3_conclusions.content', kind: 'text' },
    level: { ref: 'v3_conclusions.level', kind: 'text' },
    created_at: { ref: 'v3_conclusions.created_at', kind: 'time' },
    metadata: { ref: 'v3_conclusions.metadata', kind: 'json' },
  },
};
