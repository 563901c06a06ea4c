/**
 * Node-side half of secret inputs (`InputOptions.secret`): the runtime moves
 * a secret input's value out of the stored prompt (runtime/secrets.ts) and
 * the node reads it back here.
 */
import type { NodeContext } from './api.ts';

/** What a secret input holds in the stored prompt, history, jobs and saved files. */
export const REDACTED = '[redacted]';

/** Where the moved values travel, inside the prompt's sensitive data: `{node_id: {input: value}}`. */
export const NODE_SECRETS_KEY = 'node_secrets';

/**
 * A secret input's real value inside a node: the moved value for a node of
 * the queued prompt, or the input itself for a node an expansion created
 * (never stored). Undefined when empty.
 */
export function secretInputOf(ctx: NodeContext, name: string, value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '' && value !== REDACTED) return value;
  const moved = (ctx.env.extraData[NODE_SECRETS_KEY] as Record<string, Record<string, unknown>> | undefined)?.[ctx.nodeId]?.[name];
  return typeof moved === 'string' && moved !== '' ? moved : undefined;
}
