import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * Tables of the v3 API (workspaces → peers, sessions, messages, conclusions).
 * They sit beside the seed's tables in the same database: v3 names are
 * caller-chosen strings (the seed's ids are UUIDs), a v3 session has many
 * peers (a seed session belongs to one user) and a v3 message names its peer
 * (a seed message has only `is_user`), so neither API's rows can be shown
 * through the other without inventing data (README, "v3 and the seed API").
 *
 * `seq` orders rows by insertion (created_at may be given by the client for
 * messages); every key starts with the workspace so a workspace's rows are
 * found and deleted by index.
 */
export const v3Migration: Migration = {
  name: '010_v3',
  async up(db: Kysely<any>, d: SqlDialect) {
    const json = sql.raw(d.jsonType);
    const ts = sql.raw(d.timestampType);
    const bool = sql.raw(d.booleanType);
    const stmts = [
      sql`create table v3_workspaces (
        name text primary key,
        metadata ${json} not null,
        configuration ${json} not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create index v3_workspaces_list on v3_workspaces (created_at, seq)`,
      sql`create table v3_peers (
        workspace text not null,
        name text not null,
        metadata ${json} not null,
        configuration ${json} not null,
        created_at ${ts} not null,
        seq bigint not null,
        primary key (workspace, name)
      )`,
      sql`create index v3_peers_list on v3_peers (workspace, created_at, seq)`,
      sql`create table v3_sessions (
        workspace text not null,
        name text not null,
        is_active ${bool} not null,
        metadata ${json} not null,
        configuration ${json} not null,
        created_at ${ts} not null,
        seq bigint not null,
        primary key (workspace, name)
      )`,
      sql`create index v3_sessions_list on v3_sessions (workspace, created_at, seq)`,
      sql`create table v3_session_peers (
        workspace text not null,
        session text not null,
        peer text not null,
        configuration ${json} not null,
        joined_at ${ts} not null,
        left_at ${ts},
        seq bigint not null,
        primary key (workspace, session, peer)
      )`,
      sql`create index v3_session_peers_peer on v3_session_peers (workspace, peer)`,
      sql`create table v3_messages (
        id text primary key,
        workspace text not null,
        session text not null,
        peer text not null,
        content text not null,
        metadata ${json} not null,
        token_count integer not null,
        created_at ${ts} not null,
        seq bigint not null,
        seq_in_session bigint not null
      )`,
      sql`create unique index v3_messages_session on v3_messages (workspace, session, seq_in_session)`,
      sql`create index v3_messages_peer on v3_messages (workspace, peer, seq)`,
      sql`create table v3_peer_cards (
        workspace text not null,
        observer text not null,
        observed text not null,
        card ${json} not null,
        primary key (workspace, observer, observed)
      )`,
      sql`create table v3_conclusions (
        id text primary key,
        workspace text not null,
        observer text not null,
        observed text not null,
        session text,
        content text not null,
        level text not null,
        metadata ${json} not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create index v3_conclusions_pair on v3_conclusions (workspace, observer, observed, seq)`,
      sql`create table v3_summaries (
        workspace text not null,
        session text not null,
        summary_type text not null,
        content text not null,
        message_id text not null,
        message_seq bigint not null,
        token_count integer not null,
        created_at ${ts} not null,
        primary key (workspace, session, summary_type)
      )`,
      sql`create table v3_webhooks (
        id text primary key,
        workspace text not null,
        url text not null,
        created_at ${ts} not null,
        seq bigint not null
      )`,
      sql`create unique index v3_webhooks_url on v3_webhooks (workspace, url)`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};
