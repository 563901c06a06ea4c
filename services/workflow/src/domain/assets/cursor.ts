import { AssetError, badText } from './errors.ts';

/**
 * Opaque keyset cursors for GET /api/assets: base64url (no padding) of
 * `{"s": sort, "v": value, "id": id, "o": order}`. A cursor is bound to the
 * sort and direction it was minted for; anything else (another sort, the
 * other order, a malformed or oversized token) is 400 INVALID_CURSOR.
 */
export type CursorSort = 'created_at' | 'updated_at' | 'name' | 'size';
export const CURSOR_SORTS: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'name', 'size']);

const MAX_ENCODED = 8192;
const MAX_VALUE = 512;
const MAX_ID = 128;

export interface CursorPosition {
  value: string | number;
  id: string;
}

export function encodeCursor(sort: CursorSort, order: 'asc' | 'desc', value: string | number, id: string): string {
  const payload = JSON.stringify({ s: sort, v: String(value), id, o: order });
  return Buffer.from(payload, 'utf8').toString('base64url');
}

function invalid(message: string): AssetError {
  return new AssetError(400, 'INVALID_CURSOR', `Invalid cursor: ${message}`);
}

export function decodeCursor(cursor: string, sort: string, order: 'asc' | 'desc'): CursorPosition {
  if (!CURSOR_SORTS.has(sort)) throw invalid(`cursor pagination does not support sort=${sort}`);
  if (cursor.length > MAX_ENCODED) throw invalid('cursor exceeds maximum length');
  if (!/^[A-Za-z0-9_-]*$/.test(cursor)) throw invalid('not base64url');
  let decoded: unknown;
  try {
    decoded = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(cursor, 'base64url')));
  } catch {
    throw invalid('malformed payload');
  }
  if (!decoded || typeof decoded !== 'object' || Array.isArray(decoded)) throw invalid('payload is not an object');
  const { s, v, id, o } = decoded as Record<string, unknown>;
  if (typeof s !== 'string' || typeof v !== 'string' || typeof id !== 'string' || typeof o !== 'string') throw invalid('missing or non-string fields');
  if (id === '' || id.length > MAX_ID || v.length > MAX_VALUE || badText(v) || badText(id)) throw invalid('field out of bounds');
  if (s !== sort) throw invalid(`cursor was issued for sort=${s}, not sort=${sort}`);
  if (o !== 'asc' && o !== 'desc') throw invalid(`unsupported order ${o}`);
  if (o !== order) throw invalid(`cursor order ${o} does not match request order ${order}`);
  if (sort === 'name') return { value: v, id };
  if (!/^-?\d{1,16}$/.test(v)) throw invalid('value is not an integer');
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw invalid('value is out of range');
  return { value: n, id };
}
