import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * The core hierarchy: apps → users → sessions → messages → metamessages, and
 * users → collections → documents. `seq` is an insertion sequence that breaks
 * created_at ties so lists keep creation order.
 */
export const coreMigration: Migration = {
  name: '001_core',
  async up(db: Kysely<any>, d: SqlDialect) {
    const json = sql.raw(d.jsonType);
    const ts = sql.raw(d.timestampType);
    const bool = sql.raw(d.booleanType);
    const stmts = [
      sql`create table apps (
        id text primary key,
        name text not null unique,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create table users (
        id text primary key,
        app_id text not null references apps(id),
        name text not null,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null,
        constraint unique_name_app_user unique (app_id, name)
      )`,
      sql`create index users_list on users (app_id, created_at, seq)`,
      sql`create table sessions (
        id text primary key,
        user_id text not null references users(id),
        location_id text not null default 'default',
        is_active ${bool} not null,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create index sessions_list on sessions (user_id, created_at, seq)`,
      sql`create table messages (
        id text primary key,
        session_id text not null references sessions(id),
        is_user ${bool} not null,
        content text not null,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create index messages_list on messages (session_id, created_at, seq)`,
      sql`create table metamessages (
        id text primary key,
        message_id text not null references messages(id),
        metamessage_type text not null,
        content text not null,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create index metamessages_list on metamessages (message_id, created_at, seq)`,
      sql`create table collections (
        id text primary key,
        user_id text not null references users(id),
        name text not null,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null,
        constraint unique_name_collection_user unique (user_id, name)
      )`,
      sql`create index collections_list on collections (user_id, created_at, seq)`,
      sql`create table documents (
        id text primary key,
        collection_id text not null references collections(id) on delete cascade,
        content text not null,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create index documents_list on documents (collection_id, created_at, seq)`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};

export const coreMigrations: Migration[] = [coreMigration];
