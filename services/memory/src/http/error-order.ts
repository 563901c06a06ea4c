import { fastApiErrorStyle, type ErrorStyle } from '@svc/kernel';

const PAGING = new Set(['page', 'size']);
const isPaging = (e: { loc?: unknown[] }) => e.loc?.[0] === 'query' && PAGING.has(String(e.loc?.[1]));

/**
 * fastapi-pagination adds `page`/`size` as a route dependency, and FastAPI
 * validates dependencies before the endpoint's own path, query and body
 * parameters, so on the paged lists their errors come first.
 */
export const memoryErrorStyle: ErrorStyle = {
  ...fastApiErrorStyle,
  validation(err, req) {
    const r = fastApiErrorStyle.validation(err, req);
    const detail = (r.body as { detail?: Array<{ loc?: unknown[] }> }).detail;
    if (Array.isArray(detail) && detail.some(isPaging)) {
      (r.body as { detail: unknown[] }).detail = [...detail.filter(isPaging), ...detail.filter((e) => !isPaging(e))];
    }
    return r;
  },
};
