// Placeholder with the contract's signatures so the core compiles; Owner B replaces this file.
import type { Kysely } from 'kysely';
import type { JobQueue, TaskHandler } from '@svc/queue';
import type { MemoryDeps } from '../search/index.ts';

export function deriverTasks(_deps: MemoryDeps): Record<string, TaskHandler> {
  return {};
}

export async function enqueueDerivation(
  _trx: Kysely<any>,
  _queue: JobQueue,
  _msg: { id: string; session_id: string; content: string; is_user: boolean },
  _sessionMetadata: Record<string, unknown>,
): Promise<void> {}
