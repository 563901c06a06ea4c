import { HttpError } from '@svc/kernel';

/** CloudError `{error, code, details}`: the hosted runtime's error body. */
export function cloudError(status: number, code: string, error: string, details: Record<string, unknown> = {}, headers: Record<string, string> = {}): HttpError {
  return new HttpError(status, { error, code, details }, headers);
}

/** OAuth endpoints answer with their RFC shapes and must never be cached. */
export const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' } as const;

/** RFC 6749 §5.2 / RFC 7591 §3.2.2 error body. */
export function oauthError(status: number, error: string, description: string, headers: Record<string, string> = {}): HttpError {
  return new HttpError(status, { error, error_description: description }, { ...NO_STORE, ...headers });
}
