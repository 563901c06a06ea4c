import type { Storage } from '@svc/storage';
import { PgRelay, type RelayFrame } from './relay.ts';

/** What the hub and the runtime need of a cross-process relay. */
export interface Relay {
  start(deliver: (frames: RelayFrame[]) => void): Promise<void>;
  publish(frame: RelayFrame): void;
  close(): Promise<void>;
}

/**
 * The relay between processes that share one database: PostgreSQL
 * LISTEN/NOTIFY. None on SQLite (one process) or with `wsRelay: false`.
 */
export function createRelay(storage: Storage, flags: Record<string, unknown>, log: { warn(o: object, m: string): void }): Relay | undefined {
  if (flags.wsRelay === false) return undefined;
  if (storage.dialect.kind !== 'postgres') return undefined;
  return new PgRelay(storage.databaseUrl!, storage.pgSchema!, log);
}
