import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * The hosted runtime's identity: users, workspaces and their members,
 * invites, API keys, signing keys, sessions, and the OAuth authorization
 * server's clients, requests, codes, token families and refresh tokens.
 * Secrets (API keys, refresh tokens, codes, session and invite tokens) are
 * stored only as SHA-256 hashes; times are epoch milliseconds.
 */
export const identityMigration: Migration = {
  name: '003_identity',
  async up(db: Kysely<any>, _d: SqlDialect) {
    const stmts = [
      sql`create table id_users (
        id text primary key,
        email text not null,
        email_norm text not null,
        display_name text,
        avatar_url text,
        password_hash text,
        personal_workspace_id text not null,
        created_at bigint not null,
        updated_at bigint not null
      )`,
      sql`create unique index id_users_email on id_users (email_norm)`,
      sql`create table id_workspaces (
        id text primary key,
        name text not null,
        type text not null,
        owner_id text not null,
        created_at bigint not null,
        updated_at bigint not null,
        deleted_at bigint
      )`,
      sql`create table id_members (
        workspace_id text not null,
        user_id text not null,
        role text not null,
        joined_at bigint not null,
        primary key (workspace_id, user_id)
      )`,
      sql`create index id_members_user on id_members (user_id)`,
      sql`create table id_invites (
        id text primary key,
        workspace_id text not null,
        email text not null,
        email_norm text not null,
        role text not null,
        token_hash text not null,
        invited_by text not null,
        status text not null,
        created_at bigint not null,
        expires_at bigint not null
      )`,
      sql`create unique index id_invites_token on id_invites (token_hash)`,
      sql`create index id_invites_ws on id_invites (workspace_id, status)`,
      sql`create table id_api_keys (
        id text primary key,
        workspace_id text not null,
        user_id text not null,
        name text not null,
        description text not null,
        prefix text not null,
        key_hash text not null,
        created_at bigint not null,
        last_used_at bigint
      )`,
      sql`create unique index id_api_keys_hash on id_api_keys (key_hash)`,
      sql`create index id_api_keys_ws on id_api_keys (workspace_id, user_id)`,
      sql`create table id_signing_keys (
        kid text primary key,
        alg text not null,
        public_jwk text not null,
        private_jwk text not null,
        created_at bigint not null,
        retire_at bigint not null,
        expires_at bigint not null
      )`,
      sql`create table id_families (
        id text primary key,
        user_id text not null,
        workspace_id text not null,
        client_id text,
        scope text not null,
        kind text not null,
        created_at bigint not null,
        revoked_at bigint,
        revoked_reason text
      )`,
      sql`create index id_families_user on id_families (user_id)`,
      sql`create table id_refresh_tokens (
        token_hash text primary key,
        family_id text not null,
        created_at bigint not null,
        expires_at bigint not null,
        used_at bigint
      )`,
      sql`create index id_refresh_family on id_refresh_tokens (family_id)`,
      sql`create table id_sessions (
        id text primary key,
        token_hash text not null,
        csrf_hash text not null,
        user_id text not null,
        workspace_id text not null,
        family_id text,
        created_at bigint not null,
        expires_at bigint not null,
        revoked_at bigint
      )`,
      sql`create unique index id_sessions_token on id_sessions (token_hash)`,
      sql`create table id_oauth_clients (
        client_id text primary key,
        client_name text,
        redirect_uris text not null,
        grant_types text not null,
        response_types text not null,
        application_type text not null,
        created_at bigint not null
      )`,
      sql`create table id_oauth_requests (
        id text primary key,
        csrf_hash text not null,
        client_id text not null,
        redirect_uri text not null,
        scope text not null,
        state text not null,
        code_challenge text not null,
        resource text,
        created_at bigint not null,
        expires_at bigint not null,
        consumed_at bigint
      )`,
      sql`create table id_oauth_codes (
        code_hash text primary key,
        client_id text not null,
        user_id text not null,
        workspace_id text not null,
        redirect_uri text not null,
        scope text not null,
        code_challenge text not null,
        created_at bigint not null,
        expires_at bigint not null,
        used_at bigint,
        family_id text
      )`,
      sql`create table id_oauth_consents (
        user_id text not null,
        client_id text not null,
        workspace_id text not null,
        scope text not null,
        updated_at bigint not null,
        primary key (user_id, client_id, workspace_id)
      )`,
      sql`create table id_feedback (
        id text primary key,
        user_id text not null,
        workspace_id text not null,
        message text not null,
        rating integer,
        context text,
        created_at bigint not null
      )`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};
