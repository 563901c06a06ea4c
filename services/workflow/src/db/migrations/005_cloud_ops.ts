import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * The hosted runtime's operations: background tasks (downloads, exports),
 * the credit ledger (append-only: a workspace's balance is the sum of its
 * events, and a job is charged at most once through `dedup_key`), billing
 * accounts and operations, node packs installed per workspace, and asset
 * export archives. Times are epoch milliseconds; JSON is text.
 */
export const cloudOpsMigration: Migration = {
  name: '005_cloud_ops',
  async up(db: Kysely<any>, _d: SqlDialect) {
    const stmts = [
      sql`create table cloud_tasks (
        id text primary key,
        owner text not null,
        task_name text not null,
        idempotency_key text not null,
        payload text not null,
        status text not null,
        result text,
        error text,
        create_time bigint not null,
        update_time bigint not null,
        started_at bigint,
        completed_at bigint
      )`,
      sql`create unique index cloud_tasks_idem on cloud_tasks (owner, task_name, idempotency_key)`,
      sql`create index cloud_tasks_owner on cloud_tasks (owner, create_time, id)`,
      sql`create table billing_events (
        id text primary key,
        owner text not null,
        type text not null,
        delta bigint not null,
        description text,
        job_id text,
        op_id text,
        dedup_key text,
        created_at bigint not null
      )`,
      sql`create unique index billing_events_dedup on billing_events (owner, dedup_key)`,
      sql`create index billing_events_owner on billing_events (owner, created_at, id)`,
      sql`create table billing_accounts (
        owner text primary key,
        plan_id text,
        subscription_id text,
        subscription_status text,
        period_start bigint,
        period_end bigint,
        cancel_at_period_end integer not null default 0,
        payment_method_id text,
        created_at bigint not null,
        updated_at bigint not null
      )`,
      sql`create table billing_ops (
        id text primary key,
        owner text not null,
        kind text not null,
        status text not null,
        amount bigint,
        plan_id text,
        provider text not null,
        provider_ref text,
        error text,
        created_at bigint not null,
        completed_at bigint
      )`,
      sql`create index billing_ops_owner on billing_ops (owner, created_at)`,
      sql`create table cloud_node_packs (
        owner text not null,
        id text not null,
        version text not null,
        installed_at bigint not null,
        primary key (owner, id)
      )`,
      sql`create table cloud_asset_exports (
        owner text not null,
        name text not null,
        task_id text not null,
        file text,
        size bigint,
        created_at bigint not null,
        primary key (owner, name)
      )`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};
