import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { holdRow, isTransientStorageError, type SqlDialect } from '@svc/storage';

/** Plain queries over the asset tables; callers decide visibility and answer shapes. */

export interface AssetRow {
  id: string;
  owner: string;
  name: string;
  hash: string | null;
  size: number;
  mime_type: string | null;
  user_metadata: Record<string, unknown>;
  metadata: Record<string, unknown>;
  preview_id: string | null;
  job_id: string | null;
  file_path: string | null;
  missing: boolean;
  created_at: number;
  updated_at: number;
  last_access_time: number;
}

export interface ContentRow {
  hash: string;
  size: number;
  mime_type: string | null;
  path: string;
}

type Db = Kysely<any> | Transaction<any>;

export function readAsset(d: SqlDialect, r: any): AssetRow {
  return {
    id: r.id,
    owner: r.owner,
    name: r.name,
    hash: r.hash ?? null,
    size: Number(r.size),
    mime_type: r.mime_type ?? null,
    user_metadata: d.parseJson<Record<string, unknown>>(r.user_metadata) ?? {},
    metadata: JSON.parse(r.metadata) ?? {},
    preview_id: r.preview_id ?? null,
    job_id: r.job_id ?? null,
    file_path: r.file_path ?? null,
    missing: Number(r.missing) === 1,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
    last_access_time: Number(r.last_access_time),
  };
}

function ownerIn(owners: readonly string[], col = 'a.owner'): RawBuilder<unknown> {
  return owners.length === 1 ? sql`${sql.ref(col)} = ${owners[0]}` : sql`${sql.ref(col)} in (${sql.join(owners)})`;
}

/** Marks a change to these owners' assets (see asset_generations). */
async function bump(db: Db, owners: Iterable<string>): Promise<void> {
  for (const owner of new Set(owners)) {
    await db
      .insertInto('asset_generations')
      .values({ owner, gen: 1 })
      .onConflict((oc) => oc.column('owner').doUpdateSet({ gen: sql`asset_generations.gen + 1` }))
      .execute();
  }
}

async function bumpById(db: Db, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`update asset_generations set gen = gen + 1 where owner in (select owner from assets where id in (${sql.join(ids)}))`.execute(db);
}

/** The write generations of these owners, as one cache key part. */
export async function generations(db: Db, owners: readonly string[]): Promise<string> {
  const rows = await db.selectFrom('asset_generations').select(['owner', 'gen']).where('owner', 'in', [...owners]).execute();
  const by = new Map(rows.map((r) => [r.owner as string, Number(r.gen)]));
  return owners.map((o) => by.get(o) ?? 0).join(',');
}

export async function getContent(db: Db, hash: string): Promise<ContentRow | undefined> {
  const r = await db.selectFrom('asset_contents').select(['hash', 'size', 'mime_type', 'path']).where('hash', '=', hash).executeTakeFirst();
  return r ? { hash: r.hash, size: Number(r.size), mime_type: r.mime_type ?? null, path: r.path } : undefined;
}

/** Records a content; a concurrent writer of the same hash leaves one row. */
export async function putContent(db: Db, c: ContentRow, now: number): Promise<void> {
  await db
    .insertInto('asset_contents')
    .values({ hash: c.hash, size: c.size, mime_type: c.mime_type, path: c.path, created_at: now })
    .onConflict((oc) => oc.column('hash').doNothing())
    .execute();
}

export async function setContentPath(db: Db, hash: string, logical: string): Promise<void> {
  await db.updateTable('asset_contents').set({ path: logical }).where('hash', '=', hash).execute();
}

export interface NewAsset {
  id: string;
  owner: string;
  name: string;
  hash: string;
  size: number;
  mimeType: string;
  userMetadata: Record<string, unknown>;
  metadata: Record<string, unknown>;
  previewId: string | null;
  jobId: string | null;
  filePath: string | null;
  dedupKey: string | null;
  now: number;
  tags: string[];
}

/** The AssetRow a successful insert of `a` stored (what getAsset would read back). */
export function newAssetRow(a: NewAsset): AssetRow {
  return {
    id: a.id,
    owner: a.owner,
    name: a.name,
    hash: a.hash,
    size: a.size,
    mime_type: a.mimeType,
    user_metadata: a.userMetadata,
    metadata: a.metadata,
    preview_id: a.previewId,
    job_id: a.jobId,
    file_path: a.filePath,
    missing: false,
    created_at: a.now,
    updated_at: a.now,
    last_access_time: a.now,
  };
}

/** The assets row of a new asset (single and bulk inserts): the AssetRow above, encoded for the table. */
function assetRow(d: SqlDialect, a: NewAsset): Record<string, unknown> {
  const row = newAssetRow(a);
  return { ...row, dedup_key: a.dedupKey, user_metadata: d.json(row.user_metadata), metadata: JSON.stringify(row.metadata), missing: 0 };
}

async function insertAssetIn(tx: Db, d: SqlDialect, a: NewAsset): Promise<boolean> {
  const r = await tx
    .insertInto('assets')
    .values(assetRow(d, a))
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  if (Number(r.numInsertedOrUpdatedRows ?? 0) === 0) return false;
  await insertTags(tx, a.id, a.owner, a.tags, a.now);
  await bump(tx, [a.owner]);
  return true;
}

/** The content row was deleted (its last reference went with delete_content) before a new reference to it was stored. */
export class ContentGone extends Error {}

/**
 * Inserts a reference and its tags; false when its id, file path or dedup
 * key is already taken. With `requireContent`, the content row of its hash
 * is locked first and must exist (ContentGone otherwise): a reference made
 * from stored bytes and a delete of their last reference then serialise, so
 * the delete either sees the new reference and keeps the bytes, or has
 * removed them before the reference is made.
 */
export async function insertAsset(db: Kysely<any>, d: SqlDialect, a: NewAsset, requireContent = false): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    if (requireContent && a.hash && !(await lockContent(tx, a.hash))) throw new ContentGone();
    return insertAssetIn(tx, d, a);
  });
}

/** Holds the content row's lock for the rest of the transaction; false when there is no such row. */
function lockContent(tx: Db, hash: string): Promise<boolean> {
  return holdRow(tx, 'asset_contents', 'hash', hash);
}

/** What registering a file at a logical path must know: the content row of its hash, and the path's asset with its tags. */
export interface FileState {
  content?: ContentRow;
  asset?: AssetRow;
  tags: string[];
}

/** FileState in one query: the content row, the asset holding the path, and that asset's tags (one row per tag). */
export async function fileState(db: Db, d: SqlDialect, logical: string, hash: string): Promise<FileState> {
  const res = await sql<any>`select c.hash as c_hash_, c.size as c_size_, c.mime_type as c_mime_, c.path as c_path_, a.*, t.tag as tag_name_
    from (select 1 as one_) q
    left join asset_contents c on c.hash = ${hash}
    left join assets a on a.file_path = ${logical}
    left join asset_tags t on t.asset_id = a.id
    order by t.added_at, t.tag`.execute(db);
  const first = res.rows[0];
  const out: FileState = { tags: [] };
  if (!first) return out;
  if (first.c_hash_ != null) out.content = { hash: first.c_hash_, size: Number(first.c_size_), mime_type: first.c_mime_ ?? null, path: first.c_path_ };
  if (first.id != null) out.asset = readAsset(d, first);
  for (const r of res.rows) if (r.tag_name_ != null) out.tags.push(r.tag_name_);
  return out;
}

/**
 * The writes of a file registration, in one transaction: the content row
 * (recorded, or pointed at this file when its old place no longer holds
 * it), then the path's asset (re-pointed at the new content, or inserted).
 * Returns whether the insert happened (false: another writer took the path).
 */
export async function recordFile(
  db: Kysely<any>,
  d: SqlDialect,
  w: {
    content: { put: ContentRow } | { repoint: { hash: string; path: string } } | undefined;
    replace?: { id: string; hash: string; size: number; mimeType: string; metadata: Record<string, unknown>; jobId: string | null };
    insert?: NewAsset;
    now: number;
  },
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    if (w.content && 'put' in w.content) await putContent(tx, w.content.put, w.now);
    else if (w.content) await setContentPath(tx, w.content.repoint.hash, w.content.repoint.path);
    if (w.replace) await replaceFileContent(tx, d, w.replace.id, w.replace, w.now);
    return w.insert ? insertAssetIn(tx, d, w.insert) : false;
  });
}

async function insertTags(db: Db, id: string, owner: string, tags: string[], now: number): Promise<void> {
  if (tags.length === 0) return;
  await db
    .insertInto('asset_tags')
    .values(tags.map((tag, i) => ({ asset_id: id, tag, owner, added_at: now * 1000 + i })))
    .onConflict((oc) => oc.columns(['asset_id', 'tag']).doNothing())
    .execute();
}

export async function getAsset(db: Db, d: SqlDialect, id: string): Promise<AssetRow | undefined> {
  const r = await db.selectFrom('assets').selectAll().where('id', '=', id).executeTakeFirst();
  return r ? readAsset(d, r) : undefined;
}

export async function getByDedup(db: Db, d: SqlDialect, owner: string, key: string): Promise<AssetRow | undefined> {
  const r = await db.selectFrom('assets').selectAll().where('owner', '=', owner).where('dedup_key', '=', key).executeTakeFirst();
  return r ? readAsset(d, r) : undefined;
}

export async function getByFilePath(db: Db, d: SqlDialect, logical: string): Promise<AssetRow | undefined> {
  const r = await db.selectFrom('assets').selectAll().where('file_path', '=', logical).executeTakeFirst();
  return r ? readAsset(d, r) : undefined;
}

export async function tagsOf(db: Db, ids: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return out;
  const rows = await db.selectFrom('asset_tags').select(['asset_id', 'tag']).where('asset_id', 'in', ids).orderBy('asset_id').orderBy('added_at').orderBy('tag').execute();
  for (const r of rows) out.get(r.asset_id)?.push(r.tag);
  return out;
}

export interface AssetFilter {
  owners: readonly string[];
  includeTags: string[];
  excludeTags: string[];
  nameContains?: string;
  metadataFilter?: Record<string, unknown>;
  /** Exact content hash (`asset_hash` in the query). */
  hash?: string;
}

function likeEscape(s: string): string {
  return s.replace(/[\\%_]/g, (c) => '\\' + c);
}

/** The where clause of a filtered listing (table alias `a`). */
function filterSql(d: SqlDialect, f: AssetFilter): RawBuilder<unknown> {
  const conds: RawBuilder<unknown>[] = [ownerIn(f.owners), sql`a.missing = 0`];
  for (const tag of f.includeTags) conds.push(sql`exists (select 1 from asset_tags t where t.asset_id = a.id and t.tag = ${tag})`);
  if (f.excludeTags.length > 0) conds.push(sql`not exists (select 1 from asset_tags t where t.asset_id = a.id and t.tag in (${sql.join(f.excludeTags)}))`);
  if (f.hash) conds.push(sql`a.hash = ${f.hash}`);
  if (f.nameContains) conds.push(sql`lower(a.name) like ${'%' + likeEscape(f.nameContains.toLowerCase()) + '%'} escape '\\'`);
  for (const [key, want] of Object.entries(f.metadataFilter ?? {})) {
    const one = (v: unknown): RawBuilder<unknown> => (v === null ? sql`${d.jsonText('a.user_metadata', key)} is null` : d.jsonContains('a.user_metadata', { [key]: v }));
    if (Array.isArray(want)) conds.push(want.length === 0 ? sql`1 = 0` : sql`(${sql.join(want.map(one), sql` or `)})`);
    else conds.push(one(want));
  }
  return sql.join(conds, sql` and `);
}

export type SortColumn = 'created_at' | 'updated_at' | 'name' | 'size' | 'last_access_time';

export interface PageQuery {
  sort: SortColumn;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
  after?: { value: string | number; id: string };
}

/** One page (limit + 1 rows fetched, to know whether another follows) and the filter's total. */
export async function listAssets(db: Kysely<any>, d: SqlDialect, f: AssetFilter, p: PageQuery, withTotal = true): Promise<{ rows: AssetRow[]; tags: Map<string, string[]>; more: boolean; total: number }> {
  const where = filterSql(d, f);
  const col = sql.ref(`a.${p.sort}`);
  const dir = sql.raw(p.order);
  const cmp = sql.raw(p.order === 'asc' ? '>' : '<');
  const keyset = p.after ? sql` and (${col}, a.id) ${cmp} (${p.after.value}, ${p.after.id})` : sql``;
  const offset = p.after ? 0 : p.offset;
  // The page and its tags in one round trip: the page's rows, each repeated per tag.
  const page = sql`select a.*, t.tag as tag_name_ from (select a.* from assets a where ${where}${keyset} order by ${col} ${dir}, a.id ${dir} limit ${p.limit + 1} offset ${offset}) a
    left join asset_tags t on t.asset_id = a.id order by ${col} ${dir}, a.id ${dir}, t.added_at, t.tag`.execute(db);
  const total = withTotal ? countAssets(db, d, f) : undefined;
  const [res, count] = await Promise.all([page, total]);
  const all: AssetRow[] = [];
  const tags = new Map<string, string[]>();
  for (const r of res.rows as any[]) {
    let list = tags.get(r.id);
    if (!list) {
      list = [];
      tags.set(r.id, list);
      all.push(readAsset(d, r));
    }
    if (r.tag_name_ != null) list.push(r.tag_name_);
  }
  return { rows: all.slice(0, p.limit), tags, more: all.length > p.limit, total: count ?? 0 };
}

/**
 * Rows a filter selects. With tags to include, counting starts from the
 * rarest side: the tag's postings (one index range) joined to their assets,
 * rather than every asset probed for the tag.
 */
export async function countAssets(db: Kysely<any>, d: SqlDialect, f: AssetFilter): Promise<number> {
  if (f.includeTags.length === 1 && f.excludeTags.length === 0 && !f.nameContains && !f.metadataFilter && !f.hash) {
    const r = await sql<{ n: number }>`select count(*) as n from asset_tags p where ${ownerIn(f.owners, 'p.owner')} and p.tag = ${f.includeTags[0]} and p.missing = 0`.execute(db);
    return Number(r.rows[0]!.n);
  }
  if (f.includeTags.length > 0) {
    const [first, ...rest] = f.includeTags;
    const r = await sql<{ n: number }>`select count(*) as n from asset_tags p join assets a on a.id = p.asset_id where ${ownerIn(f.owners, 'p.owner')} and p.tag = ${first} and ${filterSql(d, { ...f, includeTags: rest })}`.execute(db);
    return Number(r.rows[0]!.n);
  }
  const r = await sql<{ n: number }>`select count(*) as n from assets a where ${filterSql(d, f)}`.execute(db);
  return Number(r.rows[0]!.n);
}

export interface Changes {
  name?: string;
  userMetadata?: Record<string, unknown>;
  previewId?: string | null;
  mimeType?: string;
}

/** False when the new preview asset was deleted meanwhile (nothing is changed then). */
export async function updateAsset(db: Kysely<any>, d: SqlDialect, id: string, c: Changes, now: number): Promise<boolean> {
  const set: Record<string, unknown> = { updated_at: now };
  if (c.name !== undefined) set.name = c.name;
  if (c.userMetadata !== undefined) set.user_metadata = d.json(c.userMetadata);
  if (c.previewId !== undefined) set.preview_id = c.previewId;
  if (c.mimeType !== undefined) set.mime_type = c.mimeType;
  return transactAgainOnConflict(db, async (tx) => {
    // The asset and its new preview locked in id order (as a delete locks an asset and the assets it previews):
    // a preview deleted meanwhile is found gone instead of left as a dangling reference.
    const held = await lockAssets(tx, c.previewId ? [id, c.previewId] : [id]);
    if (c.previewId && !held.has(c.previewId)) return false;
    await tx.updateTable('assets').set(set).where('id', '=', id).execute();
    await bumpById(tx, [id]);
    return true;
  });
}

/**
 * A write transaction run again (up to three times) when the database aborted
 * it to break a deadlock. A delete reads the assets previewing it before it
 * locks them, so a preview set to it in between, by a request that already
 * holds the previewing asset and waits for this one, closes a cycle that no
 * lock order avoids; PostgreSQL aborts one side, and that side, rolled back,
 * runs again as if it had come later.
 */
async function transactAgainOnConflict<T>(db: Kysely<any>, fn: (tx: Transaction<any>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute(fn);
    } catch (err) {
      if (attempt >= 3 || !isTransientStorageError(err)) throw err;
    }
  }
}

/** Holds the locks of these asset rows, taken in id order (no two transactions wait on each other); the ids that exist. */
async function lockAssets(tx: Db, ids: string[]): Promise<Set<string>> {
  const held = new Set<string>();
  for (const id of [...new Set(ids)].sort()) if (await lockAsset(tx, id)) held.add(id);
  return held;
}

export async function touch(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('assets').set({ last_access_time: now }).where('id', '=', id).execute();
}

/** Deletes a reference; returns how many references still hold its content. */
export async function deleteAsset(db: Kysely<any>, id: string, hash: string | null): Promise<number> {
  return transactAgainOnConflict(db, async (tx) => {
    // The asset rows first (this one and those it is the preview of, in id order), then its tags, then the
    // generation: the order every writer of assets takes its locks in, so a delete racing an update, a tag
    // change or the delete of an asset previewing it waits instead of deadlocking.
    const previewing = await tx.selectFrom('assets').select('id').where('preview_id', '=', id).execute();
    await lockAssets(tx, [id, ...previewing.map((r) => r.id as string)]);
    const gone = await tx.deleteFrom('assets').where('id', '=', id).returning('owner').executeTakeFirst();
    await tx.deleteFrom('asset_tags').where('asset_id', '=', id).execute();
    await tx.updateTable('assets').set({ preview_id: null }).where('preview_id', '=', id).execute();
    if (gone) await bump(tx, [gone.owner as string]);
    if (!hash) return 0;
    const r = await tx.selectFrom('assets').select(sql<number>`count(*)`.as('n')).where('hash', '=', hash).executeTakeFirstOrThrow();
    return Number(r.n);
  });
}

/**
 * Removes a content row when no reference holds it any more (checked under
 * the content row's lock, see insertAsset), and its files with `removeFiles`
 * before the lock is released: a new reference to these bytes waits for
 * that and then finds them gone (and stores them again), never a row whose
 * file is deleted after it was made.
 */
export async function deleteContentIfOrphan(db: Kysely<any>, hash: string, removeFiles: (c: ContentRow) => Promise<void> = async () => {}): Promise<ContentRow | undefined> {
  return db.transaction().execute(async (tx) => {
    if (!(await lockContent(tx, hash))) return undefined;
    const c = await getContent(tx, hash);
    if (!c) return undefined;
    const r = await tx.selectFrom('assets').select(sql<number>`count(*)`.as('n')).where('hash', '=', hash).executeTakeFirstOrThrow();
    if (Number(r.n) > 0) return undefined;
    await tx.deleteFrom('asset_contents').where('hash', '=', hash).execute();
    await removeFiles(c);
    return c;
  });
}

/**
 * Holds the asset row's lock for the rest of the transaction (tag changes
 * serialise with each other and with a delete); false when it is gone.
 */
function lockAsset(tx: Db, id: string): Promise<boolean> {
  return holdRow(tx, 'assets', 'id', id, 'updated_at');
}

/** Null when the asset was deleted meanwhile (no tag is added to a row that is gone). */
export async function addTags(db: Kysely<any>, id: string, owner: string, tags: string[], now: number): Promise<{ added: string[]; already: string[]; total: number } | null> {
  return db.transaction().execute(async (tx) => {
    if (!(await lockAsset(tx, id))) return null;
    const have = new Set((await tx.selectFrom('asset_tags').select('tag').where('asset_id', '=', id).execute()).map((r) => r.tag as string));
    const added = tags.filter((t) => !have.has(t));
    const already = tags.filter((t) => have.has(t));
    await insertTags(tx, id, owner, added, now);
    if (added.length > 0) {
      await tx.updateTable('assets').set({ updated_at: now }).where('id', '=', id).execute();
      await bump(tx, [owner]);
    }
    return { added, already, total: have.size + added.length };
  });
}

/** Null when the asset was deleted meanwhile. */
export async function removeTags(db: Kysely<any>, id: string, tags: string[], now: number): Promise<{ removed: string[]; notPresent: string[]; total: number } | null> {
  return db.transaction().execute(async (tx) => {
    if (!(await lockAsset(tx, id))) return null;
    const have = new Set((await tx.selectFrom('asset_tags').select('tag').where('asset_id', '=', id).execute()).map((r) => r.tag as string));
    const removed = tags.filter((t) => have.has(t));
    const notPresent = tags.filter((t) => !have.has(t));
    if (removed.length > 0) {
      await tx.deleteFrom('asset_tags').where('asset_id', '=', id).where('tag', 'in', removed).execute();
      await tx.updateTable('assets').set({ updated_at: now }).where('id', '=', id).execute();
      await bumpById(tx, [id]);
    }
    return { removed, notPresent, total: have.size - removed.length };
  });
}

export interface TagQuery {
  owners: readonly string[];
  search?: string;
  prefix?: string;
  order: 'count_desc' | 'name_asc';
  limit: number;
  offset: number;
}

export async function listTags(db: Kysely<any>, q: TagQuery): Promise<{ tags: Array<{ name: string; count: number }>; total: number }> {
  const conds: RawBuilder<unknown>[] = [ownerIn(q.owners), sql`a.missing = 0`];
  if (q.search) conds.push(sql`lower(t.tag) like ${'%' + likeEscape(q.search.toLowerCase()) + '%'} escape '\\'`);
  if (q.prefix) conds.push(sql`t.tag like ${likeEscape(q.prefix.toLowerCase()) + '%'} escape '\\'`);
  const where = sql.join(conds, sql` and `);
  const order = q.order === 'name_asc' ? sql`t.tag asc` : sql`count(*) desc, t.tag asc`;
  const [rows, total] = await Promise.all([
    sql<{ tag: string; n: number }>`select t.tag as tag, count(*) as n from asset_tags t join assets a on a.id = t.asset_id where ${where} group by t.tag order by ${order} limit ${q.limit} offset ${q.offset}`.execute(db),
    sql<{ n: number }>`select count(distinct t.tag) as n from asset_tags t join assets a on a.id = t.asset_id where ${where}`.execute(db),
  ]);
  return { tags: rows.rows.map((r) => ({ name: r.tag, count: Number(r.n) })), total: Number(total.rows[0]!.n) };
}

/** Counts of the other tags carried by the assets a filter selects (the tags that would narrow it further). */
export async function tagHistogram(db: Kysely<any>, d: SqlDialect, f: AssetFilter, limit: number): Promise<Record<string, number>> {
  const where = filterSql(d, f);
  const skip = f.includeTags.length > 0 ? sql` and t.tag not in (${sql.join(f.includeTags)})` : sql``;
  const rows = await sql<{ tag: string; n: number }>`select t.tag as tag, count(*) as n from asset_tags t join assets a on a.id = t.asset_id where ${where}${skip} group by t.tag order by count(*) desc, t.tag asc limit ${limit}`.execute(db);
  // Tags are the client's: no prototype, so a tag `__proto__` is counted like any other.
  const out: Record<string, number> = Object.create(null);
  for (const r of rows.rows) out[r.tag] = Number(r.n);
  return out;
}

/** Whether one of these owners has a live reference to the content. */
export async function ownerHasHash(db: Db, owners: readonly string[], hash: string): Promise<boolean> {
  const r = await sql<{ id: string }>`select a.id from assets a where a.hash = ${hash} and ${ownerIn(owners)} and a.missing = 0 limit 1`.execute(db);
  return r.rows.length > 0;
}

export async function allFilePaths(db: Kysely<any>): Promise<Array<{ id: string; file_path: string; size: number; missing: boolean }>> {
  const rows = await db.selectFrom('assets').select(['id', 'file_path', 'size', 'missing']).where('file_path', 'is not', null).execute();
  return rows.map((r) => ({ id: r.id, file_path: r.file_path, size: Number(r.size), missing: Number(r.missing) === 1 }));
}

export async function setMissing(db: Db, ids: string[], missing: boolean, now: number): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await db.updateTable('assets').set({ missing: missing ? 1 : 0, updated_at: now }).where('id', 'in', ids.slice(i, i + 500)).execute();
    await db.updateTable('asset_tags').set({ missing: missing ? 1 : 0 }).where('asset_id', 'in', ids.slice(i, i + 500)).execute();
    await bumpById(db, ids.slice(i, i + 500));
  }
}

/** Re-points a file's reference at new content (the file was replaced under its name). */
export async function replaceFileContent(db: Db, d: SqlDialect, id: string, c: { hash: string; size: number; mimeType: string; metadata: Record<string, unknown>; jobId: string | null }, now: number): Promise<void> {
  await db
    .updateTable('assets')
    .set({ hash: c.hash, size: c.size, mime_type: c.mimeType, metadata: JSON.stringify(c.metadata), job_id: c.jobId, missing: 0, updated_at: now })
    .where('id', '=', id)
    .execute();
  await db.updateTable('asset_tags').set({ missing: 0 }).where('asset_id', '=', id).execute();
  await bumpById(db, [id]);
  void d;
}

/** Many references at once (imports, benchmarks): one transaction, multi-row inserts; rows whose keys are taken are skipped. */
export async function insertAssetsBulk(db: Kysely<any>, d: SqlDialect, rows: NewAsset[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    for (let i = 0; i < rows.length; i += 500) {
      const chunk = rows.slice(i, i + 500);
      await tx
        .insertInto('assets')
        .values(chunk.map((a) => assetRow(d, a)))
        .onConflict((oc) => oc.doNothing())
        .execute();
      const tags = chunk.flatMap((a) => a.tags.map((tag, j) => ({ asset_id: a.id, tag, owner: a.owner, added_at: a.now * 1000 + j })));
      for (let j = 0; j < tags.length; j += 1000) {
        await tx.insertInto('asset_tags').values(tags.slice(j, j + 1000)).onConflict((oc) => oc.columns(['asset_id', 'tag']).doNothing()).execute();
      }
    }
    await bump(tx, rows.map((r) => r.owner));
  });
}
