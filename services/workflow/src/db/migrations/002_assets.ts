import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * Content-addressed assets. `asset_contents` holds one row per distinct
 * content (`blake3:<hex>`) and where its bytes live; `assets` are the named
 * references users see (several may share one content), owner-scoped;
 * `asset_tags` their tags (with the owner and missing flag of their asset,
 * so a tag's live count is one index range). Size and MIME type are copied onto the reference
 * so every list sort has its own (owner, missing, key, id) index and a page
 * is one index range scan. Times are epoch milliseconds.
 * `asset_generations` counts the writes to each owner's assets: list totals
 * are cached under it, so a walk over many pages counts its rows once, and
 * a write by any process changes the key.
 */
export const assetsMigration: Migration = {
  name: '002_assets',
  async up(db: Kysely<any>, d: SqlDialect) {
    const json = sql.raw(d.jsonType);
    const stmts = [
      sql`create table asset_contents (
        hash text primary key,
        size bigint not null,
        mime_type text,
        path text not null,
        created_at bigint not null
      )`,
      sql`create table assets (
        id text primary key,
        owner text not null default '',
        name text not null,
        hash text,
        size bigint not null default 0,
        mime_type text,
        user_metadata ${json} not null,
        metadata text not null,
        preview_id text,
        job_id text,
        file_path text,
        dedup_key text,
        missing integer not null default 0,
        created_at bigint not null,
        updated_at bigint not null,
        last_access_time bigint not null
      )`,
      sql`create unique index assets_file_path on assets (file_path)`,
      sql`create unique index assets_dedup on assets (owner, dedup_key)`,
      sql`create index assets_hash on assets (hash)`,
      sql`create index assets_by_created on assets (owner, missing, created_at, id)`,
      sql`create index assets_by_updated on assets (owner, missing, updated_at, id)`,
      sql`create index assets_by_name on assets (owner, missing, name, id)`,
      sql`create index assets_by_size on assets (owner, missing, size, id)`,
      sql`create index assets_by_access on assets (owner, missing, last_access_time, id)`,
      sql`create table asset_tags (
        asset_id text not null,
        tag text not null,
        owner text not null,
        missing integer not null default 0,
        added_at bigint not null,
        primary key (asset_id, tag)
      )`,
      sql`create index asset_tags_by_tag on asset_tags (owner, tag, missing, asset_id)`,
      sql`create table asset_generations (owner text primary key, gen bigint not null)`,
    ];
    for (const s of stmts) await s.execute(db);
  },
};
