import type { Kysely } from 'kysely';
import type { JobQueue } from '@svc/queue';

// The enqueue side of fact derivation, in the domain because a message's job is written in the message's own
// transaction; deriver/ runs the jobs.

export const DERIVE_TASK = 'memory_derive_facts';

/** A session opts out with metadata `{"deriver_disabled": true}` (Honcho ≥ 0.0.12's flag). */
export function derivationDisabled(sessionMetadata: unknown): boolean {
  return !!sessionMetadata && typeof sessionMetadata === 'object' && (sessionMetadata as Record<string, unknown>).deriver_disabled === true;
}

/**
 * Called by the core inside the message-create transaction: the job commits
 * (or rolls back) with the message, so no message is lost or derived twice.
 */
export async function enqueueDerivation(
  trx: Kysely<any>,
  queue: JobQueue,
  msg: { id: string; session_id: string; user_id: string; content: string; is_user: boolean },
  sessionMetadata: Record<string, unknown>,
): Promise<void> {
  if (!msg.is_user || derivationDisabled(sessionMetadata)) return;
  // One named queue per user: derivations run in message order across all worker
  // processes, so deduplication always compares against the facts of earlier messages.
  await queue.add(
    DERIVE_TASK,
    { message_id: msg.id, session_id: msg.session_id },
    { jobKey: `derive:${msg.id}`, queueName: `derive:${msg.user_id}`, maxAttempts: 5 },
    trx,
  );
}
