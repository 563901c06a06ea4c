import type { TSchema } from 'typebox';
import { ValidationErrorSchema, HttpDetail } from '../schemas/common.ts';

/** Route schema parts shared by every operation: tags, the 200 body and the documented error bodies. */
export function op(tag: string, summary: string, ok: TSchema, extra: Record<string, unknown> = {}) {
  return {
    tags: [tag],
    summary,
    ...extra,
    response: { 200: ok, 404: HttpDetail, 422: ValidationErrorSchema },
  };
}
