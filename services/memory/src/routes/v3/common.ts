import type { TSchema } from 'typebox';
import { ValidationErrorSchema } from '../../schemas/common.ts';
import { HonchoError } from '../../schemas/v3.ts';

export const V3 = '/v3';
export const W = `${V3}/workspaces/:workspace_id`;

/** Route schema parts of a v3 operation: tag, summary, the success body under its status and the error bodies. */
export function v3op(tag: string, summary: string, ok: TSchema | undefined, status = 200, description?: string) {
  const response: Record<number, TSchema | { type: 'null'; description: string }> = { 404: HonchoError, 409: HonchoError, 422: ValidationErrorSchema };
  response[status] = ok ?? { type: 'null', description: 'No content' };
  return { tags: [tag], summary, ...(description ? { description } : {}), response };
}

/** FastAPI's `Body(None)`: a list route takes no body, or `null`, as no options. */
export async function optionalBody(req: { body: unknown }): Promise<void> {
  if (req.body === undefined || req.body === null) req.body = {};
}
