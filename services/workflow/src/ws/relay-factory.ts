import type { Storage } from '@svc/storage';
import { RedisRelay, redisChannel } from './redis-relay.ts';
import { PgRelay, type RelayFrame } from './relay.ts';

/** What the hub and the runtime need of a cross-process relay. */
export interface Relay {
  start(deliver: (frames: RelayFrame[]) => void): Promise<void>;
  publish(frame: RelayFrame): void;
  close(): Promise<void>;
}

function redisUrlOf(flags: Record<string, unknown>, env: NodeJS.ProcessEnv): string | undefined {
  const v = typeof flags.redisUrl === 'string' ? flags.redisUrl : env.REDIS_URL;
  return v && v.trim() ? v.trim() : undefined;
}

/**
 * The relay between processes that share one database: Redis pub/sub when
 * REDIS_URL (or `--redis-url`) is set, else PostgreSQL LISTEN/NOTIFY. None on
 * SQLite (one process) or with `wsRelay: false`. `sockets`: this process
 * holds client sockets (an API process, not an execution worker).
 */
export function createRelay(storage: Storage, flags: Record<string, unknown>, log: { warn(o: object, m: string): void }, env: NodeJS.ProcessEnv = process.env, sockets = true): Relay | undefined {
  if (flags.wsRelay === false) return undefined;
  if (storage.dialect.kind !== 'postgres') return undefined;
  const redisUrl = redisUrlOf(flags, env);
  if (redisUrl) {
    if (!/^rediss?:\/\//i.test(redisUrl)) throw new Error(`REDIS_URL must be a redis:// or rediss:// URL, got ${redisUrl.replace(/\/\/[^@/]*@/, '//…@')}`);
    return new RedisRelay(redisUrl, redisChannel(storage.databaseUrl!, storage.pgSchema!), log, sockets);
  }
  return new PgRelay(storage.databaseUrl!, storage.pgSchema!, log, sockets);
}
