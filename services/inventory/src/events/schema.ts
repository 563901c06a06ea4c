import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

async function exec(db: Kysely<any>, statements: string[]): Promise<void> {
  for (const s of statements) await sql.raw(s).execute(db);
}

/**
 * Webhooks, event rules, and the delivery outbox. Contexts are stored as
 * text (not jsonb) because jsonb reorders keys and the default body must keep
 * the object's key order byte for byte. Scheduling columns are epoch
 * milliseconds so both dialects compare them the same way.
 */
export const eventMigrations: Migration[] = [
  {
    name: '100_events',
    async up(db, d: SqlDialect) {
      await exec(db, [
        `create table extras_webhook (
          id ${d.serialPrimaryKey}, name varchar(150) not null unique, description varchar(200) not null,
          payload_url varchar(500) not null, http_method varchar(30) not null, http_content_type varchar(100) not null,
          additional_headers text not null, body_template text not null, secret varchar(255) not null,
          ssl_verification ${d.booleanType} not null, ca_file_path varchar(4096),
          timeout integer, max_retries integer,
          custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null)`,
        `create table extras_eventrule (
          id ${d.serialPrimaryKey}, name varchar(150) not null unique, description varchar(200) not null,
          enabled ${d.booleanType} not null, object_types text not null, event_types text not null,
          conditions text, action_type varchar(30) not null, action_object_type varchar(100) not null,
          action_object_id bigint, action_data text, comments text not null,
          custom_fields ${d.jsonType} not null, created ${d.timestampType} not null, last_updated ${d.timestampType} not null)`,
        `create table events_delivery (
          id ${d.serialPrimaryKey}, message_id varchar(64) not null unique,
          webhook_id bigint, event_rule_id bigint, webhook_name varchar(150) not null, event_rule_name varchar(150) not null,
          object_type varchar(100) not null, object_id bigint not null, event varchar(30) not null, request_id varchar(128) not null,
          context text not null, status varchar(20) not null,
          attempts integer not null default 0, retry_base integer not null default 0,
          next_attempt_at bigint not null, claimed_by varchar(200), claim_expires_at bigint,
          created_at bigint not null, enqueued_at bigint not null, started_at bigint, ended_at bigint,
          last_status_code integer, last_error text)`,
        `create index events_delivery_due on events_delivery (status, next_attempt_at)`,
        `create index events_delivery_webhook on events_delivery (webhook_id, id)`,
        `create table events_delivery_attempt (
          id ${d.serialPrimaryKey}, delivery_id bigint not null references events_delivery(id) on delete cascade,
          attempt integer not null, worker varchar(200) not null, started_at bigint not null, duration_ms double precision not null,
          request_method varchar(10) not null, request_url text not null, request_headers text not null, request_body text not null,
          response_status integer, response_body text, error text, success ${d.booleanType} not null)`,
        `create index events_delivery_attempt_delivery on events_delivery_attempt (delivery_id, attempt)`,
      ]);
    },
  },
  {
    // The claim picks queued rows in id order and stale claims by status; both want their own index.
    name: '101_delivery_claim_indexes',
    async up(db) {
      await exec(db, [`create index events_delivery_status_id on events_delivery (status, id)`]);
    },
  },
  {
    // Only scheduled retries are looked up by due time: a partial index is not rewritten on every other status change.
    name: '102_delivery_due_partial_index',
    async up(db) {
      await exec(db, [`drop index events_delivery_due`, `create index events_delivery_due on events_delivery (next_attempt_at) where status = 'scheduled'`]);
    },
  },
  {
    // A delivery's row is rewritten by every claim and outcome: its context (the largest column, written
    // once) lives in a table of its own, so those rewrites touch a few small rows per page instead of one.
    name: '103_delivery_context_table',
    async up(db) {
      await exec(db, [
        `create table events_delivery_context (
          delivery_id bigint primary key references events_delivery(id) on delete cascade, context text not null)`,
        `insert into events_delivery_context (delivery_id, context) select id, context from events_delivery`,
        `alter table events_delivery drop column context`,
      ]);
    },
  },
  {
    // An attempt that sent the default body (the context as json.dumps prints it) logs a mark instead
    // of a second copy of it; the task view rebuilds the body from the delivery's context.
    name: '104_attempt_default_body',
    async up(db, d: SqlDialect) {
      await exec(db, [`alter table events_delivery_attempt add column request_body_default ${d.booleanType} not null default ${d.kind === 'postgres' ? 'false' : '0'}`]);
    },
  },
  {
    // PostgreSQL writes a new entry into every index of a row that a claim or an outcome rewrites (both change the
    // indexed status), and a unique index also probes for a duplicate each time. No query looks deliveries up by
    // message_id, and a message_id is 128 random bits: its unique index cost about a fifth of the server's time per
    // delivery for nothing. SQLite updates a row in place and rewrites only the index entries whose columns change,
    // so it keeps its constraint (dropping it there would mean rebuilding the table).
    name: '105_delivery_message_id_not_indexed',
    async up(db, d: SqlDialect) {
      if (d.kind === 'postgres') await exec(db, [`alter table events_delivery drop constraint if exists events_delivery_message_id_key`]);
    },
  },
  {
    // PostgreSQL rewrites a row without touching its indexes (a heap-only tuple) only if no indexed column, key or
    // predicate, changes and the new version fits on the same page. The claim (queued → sent) changed the indexed status,
    // so it wrote a new entry into every index. Now no index mentions status or a claim column: unfinished deliveries are
    // found through a partial index on ended_at (which the claim leaves null and the outcome sets), due retries through
    // due_at (set only while a delivery waits as a retry), and pages are half filled so the claim's new version fits
    // beside the old. The attempt rows' foreign key goes too: its check locked the delivery's row once per attempt row,
    // and the only delete of a delivery removes its attempts itself. SQLite updates rows in place: unchanged.
    name: '106_delivery_hot_claims',
    async up(db, d: SqlDialect) {
      if (d.kind !== 'postgres') return;
      await exec(db, [
        `alter table events_delivery add column due_at bigint`,
        `update events_delivery set due_at = next_attempt_at where status = 'scheduled'`,
        `create index events_delivery_open on events_delivery (id) where ended_at is null`,
        `drop index events_delivery_due`,
        `create index events_delivery_due on events_delivery (due_at) where due_at is not null`,
        `drop index events_delivery_status_id`,
        `alter table events_delivery set (fillfactor = 50)`,
        `alter table events_delivery_attempt drop constraint if exists events_delivery_attempt_delivery_id_fkey`,
      ]);
    },
  },
];
