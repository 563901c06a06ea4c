import type { ErrorStyle } from '@svc/kernel';

/** aiohttp's plain-text answers for unknown paths and methods, `{"error": …}` for bad requests, as the reference's routes. */
export const workflowErrorStyle: ErrorStyle = {
  validation(err) {
    return { statusCode: 400, body: { error: `Invalid request: ${err.message}` } };
  },
  invalidBody(err, req) {
    if (req.is404) return workflowErrorStyle.notFound(req, false);
    const message = `Invalid JSON body: ${err.message}`;
    if (/\/prompt$/.test(req.routeOptions.url ?? '')) {
      return { statusCode: 400, body: { error: { type: 'invalid_prompt', message: 'Invalid JSON body', details: err.message, extra_info: {} }, node_errors: {} } };
    }
    return { statusCode: 400, body: { error: message } };
  },
  notFound(_req, methodNotAllowed) {
    return methodNotAllowed
      ? { statusCode: 405, body: '405: Method Not Allowed', contentType: 'text/plain; charset=utf-8' }
      : { statusCode: 404, body: '404: Not Found', contentType: 'text/plain; charset=utf-8' };
  },
  internal() {
    return { statusCode: 500, body: { error: 'Internal server error' } };
  },
  unavailable() {
    return { statusCode: 503, body: { error: 'The service is busy (database locked); retry the request.' } };
  },
};
