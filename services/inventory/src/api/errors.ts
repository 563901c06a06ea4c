import { HttpError, type ErrorStyle } from '@svc/kernel';

/** DRF/NetBox error bodies: `{"field": ["message"]}`, `{"detail": "..."}`. */
export type FieldErrors = Record<string, unknown>;

export function validationError(errors: FieldErrors | unknown[]): HttpError {
  return new HttpError(400, errors);
}

export function fieldError(field: string, message: string): HttpError {
  return new HttpError(400, { [field]: [message] });
}

export function nonFieldError(message: string): HttpError {
  return new HttpError(400, { non_field_errors: [message] });
}

export function notFound(): HttpError {
  return new HttpError(404, { detail: 'Not found.' });
}

export function conflict(detail: string): HttpError {
  return new HttpError(409, { detail });
}

export const NOT_AUTHENTICATED = 'Authentication credentials were not provided.';
export const PERMISSION_DENIED = 'You do not have permission to perform this action.';

export function forbidden(detail = PERMISSION_DENIED): HttpError {
  return new HttpError(403, { detail });
}

function jsonErrorDetail(message: string): string {
  // DRF reports Python's json error text; keep the shape, not the exact wording.
  return `JSON parse error - ${message.replace(/^Body is not valid JSON but content-type is set to 'application\/json'$/, 'Expecting value: line 1 column 1 (char 0)')}`;
}

/** How the framework's own errors look on the inventory API (DRF wording). */
export const netboxErrorStyle: ErrorStyle = {
  validation(err) {
    const out: Record<string, string[]> = {};
    for (const e of err.validation ?? []) {
      const p = e.params as Record<string, unknown>;
      const field =
        e.keyword === 'required' ? String(p.missingProperty) : e.instancePath.split('/').filter(Boolean)[0] ?? 'non_field_errors';
      const msg = e.keyword === 'required' ? 'This field is required.' : e.keyword === 'type' && p.type === 'integer' ? 'A valid integer is required.' : (e.message ?? 'Invalid value.');
      (out[field] ??= []).push(msg);
    }
    return { statusCode: 400, body: out };
  },
  invalidBody(err) {
    return { statusCode: 400, body: { detail: jsonErrorDetail(err.message) } };
  },
  notFound(req, methodNotAllowed) {
    return methodNotAllowed
      ? { statusCode: 405, body: { detail: `Method "${req.method}" not allowed.` } }
      : { statusCode: 404, body: { detail: 'Not found.' } };
  },
  internal() {
    return { statusCode: 500, body: { detail: 'A server error occurred.' } };
  },
};
