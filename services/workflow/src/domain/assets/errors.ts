/** An asset request refused with the reference's local error body `{"error": {code, message, details}}`. */
export class AssetError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }

  body(): { error: { code: string; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * NUL and lone surrogates are refused in every text an asset stores or
 * filters on: PostgreSQL text and jsonb cannot hold NUL, and a lone
 * surrogate would be stored as U+FFFD, so the same request must not mean
 * different things on the two databases.
 */
export function badText(s: string): boolean {
  return s.includes('\u0000') || LONE_SURROGATE.test(s);
}

export function checkText(s: string, field: string, code: string, maxLength = 512): string {
  if (badText(s)) throw new AssetError(400, code, `${field} must not contain NUL characters or unpaired surrogates.`, { field });
  if (s.length > maxLength) throw new AssetError(400, code, `${field} must be at most ${maxLength} characters.`, { field });
  return s;
}

/** Depth and text rules for JSON objects a client stores (user_metadata) or filters with (metadata_filter). */
export const MAX_METADATA_DEPTH = 32;
export const MAX_METADATA_BYTES = 256 * 1024;

export function checkJsonValue(value: unknown, field: string, code: string): void {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > MAX_METADATA_DEPTH) throw new AssetError(400, code, `${field} is nested deeper than ${MAX_METADATA_DEPTH} levels.`, { field });
    if (typeof v === 'string') {
      if (badText(v)) throw new AssetError(400, code, `${field} must not contain NUL characters or unpaired surrogates.`, { field });
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new AssetError(400, code, `${field} holds a number JSON cannot represent.`, { field });
    } else if (Array.isArray(v)) {
      for (const x of v) stack.push([x, depth + 1]);
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (badText(k)) throw new AssetError(400, code, `${field} keys must not contain NUL characters or unpaired surrogates.`, { field });
        stack.push([x, depth + 1]);
      }
    }
  }
  if (JSON.stringify(value).length > MAX_METADATA_BYTES) throw new AssetError(400, code, `${field} is larger than ${MAX_METADATA_BYTES} bytes.`, { field });
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
