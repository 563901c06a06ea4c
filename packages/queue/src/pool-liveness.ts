import type pg from 'pg';

/**
 * First key of the session advisory locks that mark graphile-worker pools as
 * alive (the second key is `hashtext(pool id)`); any constant that no other
 * code in the database uses for advisory locks.
 */
export const LIVENESS_LOCK_CLASS = 0x51_7e_a1_1e;

/**
 * Keeps one advisory lock per worker pool of this process on a dedicated
 * connection. graphile-worker marks a job with the pool's id (`locked_by`)
 * and only frees it when that pool finishes it or after 4 hours; a process
 * killed mid-job leaves it locked. Its connection, however, dies with it and
 * PostgreSQL drops its session locks at once, so "no lock for this id" means
 * "the holder is gone" for every other process (pg_locks is readable by any
 * role). Server-side TCP keepalives bound the time it takes when the host
 * itself disappears instead of the process.
 */
export class PoolLiveness {
  #config: pg.ClientConfig;
  #client: pg.Client | undefined;
  #ids = new Set<string>();
  #closed = false;
  #reconnect: NodeJS.Timeout | undefined;
  #onError: (err: unknown) => void;

  constructor(config: pg.ClientConfig, onError: (err: unknown) => void) {
    this.#config = { ...config, keepAlive: true };
    this.#onError = onError;
  }

  async open(): Promise<void> {
    this.#closed = false;
    await this.#connect();
  }

  async #connect(): Promise<void> {
    // Loaded here, not at import: processes on SQLite never open one.
    const { default: pgm } = await import('pg');
    const client = new pgm.Client(this.#config);
    client.on('error', (err) => this.#lost(client, err));
    await client.connect();
    // Not available over Unix sockets; harmless there.
    await client.query('set tcp_keepalives_idle = 10; set tcp_keepalives_interval = 5; set tcp_keepalives_count = 3').catch(() => {});
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    for (const id of this.#ids) await this.#lock(client, id);
  }

  /** The connection broke (database restart): take the locks again on a new one. */
  #lost(client: pg.Client, err: unknown): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => {});
    if (this.#closed) return;
    this.#onError(err);
    const retry = () => {
      this.#reconnect = undefined;
      if (this.#closed) return;
      this.#connect().catch((e) => {
        this.#onError(e);
        this.#reconnect = setTimeout(retry, 1000);
        this.#reconnect.unref();
      });
    };
    this.#reconnect = setTimeout(retry, 200);
    this.#reconnect.unref();
  }

  async #lock(client: pg.Client, id: string): Promise<void> {
    // try: never wait. Should another pool's id hash to the same key (2^-32), that pool's lock
    // keeps this one's jobs looking alive too, which is only the old behaviour for them.
    await client.query('select pg_try_advisory_lock($1::int4, hashtext($2::text))', [LIVENESS_LOCK_CLASS, id]);
  }

  /** Marks a pool as alive (call as soon as the pool exists, before it takes jobs). */
  hold(id: string): void {
    this.#ids.add(id);
    const c = this.#client;
    if (c) this.#lock(c, id).catch((err) => this.#failed(err));
  }

  /** The pool has stopped and released its jobs itself. */
  release(id: string): void {
    if (!this.#ids.delete(id)) return;
    const c = this.#client;
    if (c) c.query('select pg_advisory_unlock($1::int4, hashtext($2::text))', [LIVENESS_LOCK_CLASS, id]).catch((err) => this.#failed(err));
  }

  /** A lock or unlock cut short by close() is no error: the connection's end drops every lock anyway. */
  #failed(err: unknown): void {
    if (!this.#closed) this.#onError(err);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#reconnect) clearTimeout(this.#reconnect);
    const c = this.#client;
    this.#client = undefined;
    this.#ids.clear();
    if (c) await c.end().catch(() => {});
  }
}

/**
 * One statement that finds the pools holding jobs (or named-queue locks) of
 * a graphile-worker schema whose liveness lock is gone and unlocks their jobs
 * through graphile-worker's own `force_unlock_workers`. `$2` (ms) skips locks
 * younger than that: a pool that has only just been created may take its
 * first job a moment before its liveness lock is granted. Returns the dead
 * pool ids and how many of their jobs became available again.
 */
export function releaseDeadPoolsSql(escapedSchema: string): string {
  return `
    with holders as (
      select locked_by as id, count(*) as jobs from ${escapedSchema}._private_jobs
       where locked_by is not null and locked_at < now() - make_interval(secs => $2::float8 / 1000)
       group by locked_by
      union all
      select locked_by, 0 from ${escapedSchema}._private_job_queues
       where locked_by is not null and locked_at < now() - make_interval(secs => $2::float8 / 1000)
    ), dead as (
      select coalesce(array_agg(distinct h.id), '{}') as ids, coalesce(sum(h.jobs), 0)::int as jobs from holders h
       where not exists (
         select 1 from pg_locks l
          where l.locktype = 'advisory' and l.granted and l.objsubid = 2
            and l.database = (select oid from pg_database where datname = current_database())
            and l.classid = $1::int4::oid and l.objid = hashtext(h.id)::oid)
    )
    select dead.ids, dead.jobs, ${escapedSchema}.force_unlock_workers(dead.ids) as unlocked from dead`;
}
