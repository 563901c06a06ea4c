import { sql, type RawBuilder } from 'kysely';

export type DialectKind = 'sqlite' | 'postgres';

/**
 * Every SQL difference between SQLite and PostgreSQL lives here, so that
 * repositories stay dialect-free. Add a method rather than branching on
 * `kind` elsewhere.
 */
export interface SqlDialect {
  readonly kind: DialectKind;
  /** Column type for a JSON document. */
  readonly jsonType: string;
  /** Column type for an auto-incrementing 64-bit primary key (with PRIMARY KEY). */
  readonly serialPrimaryKey: string;
  /** Column type for a timestamp stored as ISO-8601 UTC text (SQLite) or timestamptz (PG). */
  readonly timestampType: string;
  /** Column type for a boolean. */
  readonly booleanType: string;
  /** Column type for binary data. */
  readonly blobType: string;
  /** Serialise a JS value for a JSON column. */
  json(value: unknown): unknown;
  /** Parse a JSON column value read back from the driver. */
  parseJson<T = unknown>(value: unknown): T;
  /** Boolean parameter value. */
  bool(value: boolean): unknown;
  /** Read a boolean column. */
  readBool(value: unknown): boolean;
  /** `column @> value` with PostgreSQL jsonb containment semantics. */
  jsonContains(column: string, value: unknown): RawBuilder<boolean>;
  /** Value of a top-level key of a JSON column as text. */
  jsonText(column: string, key: string): RawBuilder<string | null>;
  /** Normalise a timestamp read from the driver to an ISO string with millisecond precision and `Z`. */
  readTimestamp(value: unknown): string;
  /** Parameter value for a timestamp column. */
  timestamp(value: Date | string): unknown;
  /**
   * Row lock for a read-modify-write inside a transaction: `FOR UPDATE` on
   * PostgreSQL; unchanged on SQLite, whose write transactions (BEGIN
   * IMMEDIATE) are already serialised.
   */
  forUpdate<Q extends { forUpdate(): Q }>(query: Q): Q;
}

function toIso(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') {
    // SQLite stores our own ISO strings; PG may return text for timestamptz in raw queries.
    const d = new Date(value.includes('T') || value.endsWith('Z') ? value : value.replace(' ', 'T') + 'Z');
    return Number.isNaN(d.getTime()) ? value : d.toISOString();
  }
  if (typeof value === 'number') return new Date(value).toISOString();
  return String(value);
}

export const sqliteDialect: SqlDialect = {
  kind: 'sqlite',
  jsonType: 'text',
  serialPrimaryKey: 'integer primary key autoincrement',
  timestampType: 'text',
  booleanType: 'integer',
  blobType: 'blob',
  json: (v) => JSON.stringify(v ?? null),
  parseJson: <T>(v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v) as T,
  bool: (v) => (v ? 1 : 0),
  readBool: (v) => v === 1 || v === true || v === '1',
  // json_contains is a user function registered on every SQLite connection (see sqlite-functions.ts).
  jsonContains: (column, value) => sql<boolean>`json_contains(${sql.ref(column)}, ${JSON.stringify(value)})`,
  jsonText: (column, key) => sql<string | null>`json_extract(${sql.ref(column)}, ${'$."' + key.replace(/"/g, '""') + '"'})`,
  readTimestamp: toIso,
  timestamp: (v) => (v instanceof Date ? v.toISOString() : toIso(v)),
  forUpdate: (q) => q,
};

export const postgresDialect: SqlDialect = {
  kind: 'postgres',
  jsonType: 'jsonb',
  serialPrimaryKey: 'bigserial primary key',
  timestampType: 'timestamptz',
  booleanType: 'boolean',
  blobType: 'bytea',
  json: (v) => JSON.stringify(v ?? null),
  parseJson: <T>(v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v) as T,
  bool: (v) => v,
  readBool: (v) => v === true || v === 't' || v === 1,
  jsonContains: (column, value) => sql<boolean>`${sql.ref(column)} @> ${JSON.stringify(value)}::jsonb`,
  jsonText: (column, key) => sql<string | null>`${sql.ref(column)} ->> ${key}`,
  readTimestamp: toIso,
  timestamp: (v) => (v instanceof Date ? v : new Date(v)),
  forUpdate: (q) => q.forUpdate(),
};
