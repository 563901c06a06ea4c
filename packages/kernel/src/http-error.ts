/**
 * An error whose body is sent to the client as-is, in the owning service's
 * error shape (FastAPI `{"detail": …}`, NetBox `{"field": [...]}`, …).
 */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly body: unknown;
  readonly headers: Record<string, string>;
  constructor(statusCode: number, body: unknown, headers: Record<string, string> = {}) {
    super(typeof body === 'string' ? body : JSON.stringify(body));
    this.statusCode = statusCode;
    this.body = body;
    this.headers = headers;
  }
}

/** FastAPI's HTTPException shape: `{"detail": "..."}`. */
export function detailError(statusCode: number, detail: unknown): HttpError {
  return new HttpError(statusCode, { detail });
}
