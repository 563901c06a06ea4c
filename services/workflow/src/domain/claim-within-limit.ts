import { sql } from 'kysely';
import type { Storage } from '@svc/storage';
import { decode, type PromptRecord } from './prompts.ts';

/**
 * Claims the first pending prompt, in queue order, whose owner has fewer than
 * `limit` prompts running: with several execution slots, one workspace's long
 * prompts leave the other slots to the prompts queued behind them
 * (max_concurrent_jobs). One statement, so two slots never both take an
 * owner's last free place (SQLite runs it alone; PostgreSQL locks the row).
 */
export async function claimNextWithinLimit(storage: Storage, worker: string, now: number, limit: number): Promise<PromptRecord | null> {
  const lock = storage.dialect.kind === 'postgres' ? sql` for update skip locked` : sql``;
  const r = await sql<Record<string, unknown>>`
    update prompts set status = 'in_progress', worker = ${worker}, start_time = ${now}
    where id = (
      select p.id from prompts p
      where p.status = 'pending'
        and (select count(*) from prompts r where r.owner = p.owner and r.status = 'in_progress') < ${limit}
      order by p.number, p.id limit 1${lock})
      and status = 'pending'
    returning *`.execute(storage.db);
  return r.rows[0] ? decode(r.rows[0]) : null;
}
