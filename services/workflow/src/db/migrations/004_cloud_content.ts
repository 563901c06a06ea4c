import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * What a hosted workspace keeps besides its jobs and files: secrets
 * (AES-256-GCM ciphertext with the id of the key that sealed it, so keys can
 * rotate), saved workflows with their versions, and the hub (profiles,
 * published workflows (labels are a fixed list in code), uploaded hub assets). Prompts learn which
 * workflow version they ran. Times are epoch milliseconds; JSON is text.
 */
export const cloudContentMigration: Migration = {
  name: '004_cloud_content',
  async up(db: Kysely<any>, _d: SqlDialect) {
    const stmts = [
      sql`alter table prompts add column workflow_version_id text`,
      sql`create index prompts_owner_workflow on prompts (owner, workflow_id)`,
      sql`create table cloud_secrets (
        id text primary key,
        workspace_id text not null,
        name text not null,
        provider text,
        key_id text not null,
        ciphertext text not null,
        created_by text not null,
        created_at bigint not null,
        updated_at bigint not null,
        last_used_at bigint
      )`,
      sql`create unique index cloud_secrets_name on cloud_secrets (workspace_id, name)`,
      sql`create table cloud_workflows (
        id text primary key,
        workspace_id text not null,
        name text not null,
        name_norm text not null,
        description text not null,
        share_id text,
        listed integer not null default 0,
        publish_time bigint,
        source_path text,
        latest_version integer not null,
        latest_version_id text,
        thumbnail_url text,
        forked_from text,
        created_by text not null,
        created_at bigint not null,
        updated_at bigint not null
      )`,
      sql`create unique index cloud_workflows_share on cloud_workflows (share_id)`,
      sql`create unique index cloud_workflows_source on cloud_workflows (workspace_id, source_path)`,
      sql`create index cloud_workflows_ws_updated on cloud_workflows (workspace_id, updated_at, id)`,
      sql`create table cloud_workflow_versions (
        id text primary key,
        workflow_id text not null,
        workspace_id text not null,
        version integer not null,
        content text not null,
        created_by text not null,
        created_at bigint not null
      )`,
      sql`create unique index cloud_workflow_versions_num on cloud_workflow_versions (workflow_id, version)`,
      sql`create table hub_profiles (
        workspace_id text primary key,
        username text not null,
        username_norm text not null,
        display_name text,
        bio text,
        avatar_url text,
        links text not null,
        created_by text not null,
        created_at bigint not null,
        updated_at bigint not null
      )`,
      sql`create unique index hub_profiles_username on hub_profiles (username_norm)`,
      sql`create table hub_workflows (
        share_id text primary key,
        workspace_id text not null,
        workflow_id text not null,
        name text not null,
        name_norm text not null,
        description text not null,
        status text not null,
        labels text not null,
        detail text not null,
        workflow_json text not null,
        likes integer not null default 0,
        views integer not null default 0,
        forks integer not null default 0,
        publish_time bigint not null,
        created_at bigint not null,
        updated_at bigint not null
      )`,
      sql`create unique index hub_workflows_workflow on hub_workflows (workspace_id, workflow_id)`,
      sql`create index hub_workflows_updated on hub_workflows (status, updated_at)`,
      sql`create table hub_uploads (
        id text primary key,
        workspace_id text not null,
        token_hash text not null,
        filename text not null,
        content_type text not null,
        size bigint,
        stored_size bigint,
        created_at bigint not null,
        expires_at bigint not null,
        uploaded_at bigint
      )`,
      sql`create unique index hub_uploads_token on hub_uploads (token_hash)`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};
