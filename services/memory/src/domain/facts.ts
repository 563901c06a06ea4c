import { sql, type Kysely } from 'kysely';
import type { Storage } from '@svc/storage';
import { RESERVED_COLLECTION } from './collections.ts';
import { isForeignKeyViolation, isUniqueViolation, newId, nextSeq, readBool } from './values.ts';
import { dot } from '../search/embedding.ts';
import type { Search } from '../search/index.ts';
import { normalizeText, stem, words } from '../search/text.ts';

/**
 * Two facts whose embeddings are at least this close say the same thing
 * (e.g. "The user loves their dog." / "The user really loves their dog.");
 * "lives in Paris" vs "lives in Lyon" stay well below it.
 */
export const DUPLICATE_COSINE = 0.9;
/** Existing facts compared with each new one. */
const SIMILAR_EXISTING = 10;

/** The user's reserved "honcho" collection, created on first use (as the reference's chat and deriver do). */
export async function honchoCollectionId(storage: Storage, userId: string): Promise<string> {
  let cache = honchoIds.get(storage);
  if (!cache) honchoIds.set(storage, (cache = new Map()));
  const known = cache.get(userId);
  if (known) return known;
  const id = await findOrCreateHoncho(storage, userId);
  if (cache.size >= 10_000) cache.clear();
  cache.set(userId, id);
  return id;
}

/**
 * Collection ids found per user, to save a lookup per derivation. A cached id
 * whose collection was deleted makes the fact insert fail (foreign key):
 * storeFacts then forgets it and the job's retry looks it up again.
 */
const honchoIds = new WeakMap<Storage, Map<string, string>>();

export function forgetHonchoCollection(storage: Storage, collectionId: string): void {
  const cache = honchoIds.get(storage);
  if (!cache) return;
  for (const [user, id] of cache) if (id === collectionId) cache.delete(user);
}

async function findOrCreateHoncho(storage: Storage, userId: string): Promise<string> {
  const { db, dialect: d } = storage;
  const find = () => db.selectFrom('collections').select('id').where('user_id', '=', userId).where('name', '=', RESERVED_COLLECTION).executeTakeFirst();
  const found = await find();
  if (found) return found.id as string;
  const id = newId();
  try {
    await db
      .insertInto('collections')
      .values({ id, user_id: userId, name: RESERVED_COLLECTION, metadata: d.json({}), created_at: d.timestamp(new Date()), seq: nextSeq() })
      .execute();
    return id;
  } catch (err) {
    // Another request created it first.
    if (!isUniqueViolation(err)) throw err;
    const again = await find();
    if (!again) throw err;
    return again.id as string;
  }
}

export interface RecentMessage {
  is_user: boolean;
  content: string;
}

/** The session's last `limit` messages in conversation order, optionally up to and including the message with sequence `uptoSeq`. */
export async function recentMessages(db: Kysely<any>, sessionId: string, limit: number, uptoSeq?: number): Promise<RecentMessage[]> {
  let q = db.selectFrom('messages').select(['is_user', 'content']).where('session_id', '=', sessionId);
  if (uptoSeq !== undefined) q = q.where('seq', '<=', uptoSeq);
  const rows = await q.orderBy('created_at', 'desc').orderBy('seq', 'desc').limit(limit).execute();
  return rows.reverse().map((r) => ({ is_user: readBool(r.is_user), content: String(r.content) }));
}

export function formatConversation(messages: RecentMessage[]): string {
  return messages.map((m) => `${m.is_user ? 'user' : 'ai'}: ${m.content.slice(0, 2000)}`).join('\n');
}

/** Words that do not change what a fact says ("really loves" = "loves"). */
const FILLERS = new Set('the a an really also very just actually so totally absolutely definitely truly'.split(' '));

/** A fact's identity: its distinct word stems without fillers, sorted. */
export function factKey(f: string): string {
  const stems = new Set(words(normalizeText(f)).filter((w) => !FILLERS.has(w)).map(stem));
  return [...stems].sort().join(' ');
}

/**
 * The candidates that are not already known: not the same words (ignoring
 * case, word forms and fillers, see factKey) and not within DUPLICATE_COSINE of an existing fact of the
 * collection or of an earlier candidate.
 */
export async function novelFacts(search: Search, collectionId: string, candidates: string[]): Promise<{ novel: string[]; similarExisting: string[] }> {
  if (candidates.length === 0) return { novel: [], similarExisting: [] };
  const vectors = await search.embedder.embed(candidates);
  let existing: string[];
  let existingVectors: Float32Array[];
  // In one or two round trips where the backend can, with the vectors it stored (no re-embedding).
  const near = await search.backend.nearestContents?.(collectionId, vectors, SIMILAR_EXISTING);
  if (near) {
    existing = near.map((r) => r.content);
    existingVectors = near.map((r) => r.vector);
  } else {
    const existingKeys = new Set<string | number>();
    for (const v of vectors) {
      for (const h of await search.backend.vectorRanking(collectionId, v, SIMILAR_EXISTING, undefined)) existingKeys.add(h.key);
    }
    const existingRows = await search.backend.fetch(collectionId, [...existingKeys]);
    existing = existingRows.map((r) => String(r.content));
    existingVectors = existing.length ? await search.embedder.embed(existing) : [];
  }
  const known = existing.map((text, i) => ({ key: factKey(text), v: existingVectors[i]! }));
  const novel: string[] = [];
  candidates.forEach((text, i) => {
    const k = factKey(text);
    const v = vectors[i]!;
    if (!k || known.some((x) => x.key === k || dot(x.v, v) >= DUPLICATE_COSINE)) return;
    known.push({ key: k, v });
    novel.push(text);
  });
  return { novel, similarExisting: existing };
}

/** Stores facts as documents of the collection and indexes them, atomically. */
export async function storeFacts(storage: Storage, search: Search, collectionId: string, facts: string[], metadata: Record<string, unknown>): Promise<void> {
  if (facts.length === 0) return;
  const d = storage.dialect;
  const rowOf = (content: string) => ({ id: newId(), collection_id: collectionId, content, metadata: d.json(metadata), created_at: d.timestamp(new Date()), seq: nextSeq() });
  try {
    if (facts.length === 1) {
      // The usual case: one statement on PostgreSQL.
      await search.insertDocument(storage.db, rowOf(facts[0]!));
      return;
    }
    await storage.db.transaction().execute(async (trx) => {
      for (const content of facts) {
        const row = rowOf(content);
        await trx.insertInto('documents').values(row).execute();
        await search.indexDocument(trx, { id: row.id, collection_id: collectionId, content, metadata });
      }
    });
  } catch (err) {
    if (isForeignKeyViolation(err)) forgetHonchoCollection(storage, collectionId);
    throw err;
  }
}

/** The message a derivation job is about, with its session's owner and metadata. */
export async function loadMessage(storage: Storage, messageId: string, sessionId: string) {
  type Row = { content: string; seq: number; is_user: unknown; user_id: string; session_metadata: unknown };
  if (storage.pgPool) {
    // Every job starts here: a named statement is parsed and planned once per connection.
    const r = await storage.pgPool.query({ name: 'memory_derive_message', text: LOAD_MESSAGE_PG, values: [messageId, sessionId] });
    return r.rows[0] as Row | undefined;
  }
  const r = await sql<any>`select m.content, m.seq, m.is_user, s.user_id, s.metadata as session_metadata
    from messages m join sessions s on s.id = m.session_id
    where m.id = ${messageId} and m.session_id = ${sessionId}`.execute(storage.db);
  return r.rows[0] as Row | undefined;
}

const LOAD_MESSAGE_PG = `select m.content, m.seq, m.is_user, s.user_id, s.metadata as session_metadata
  from messages m join sessions s on s.id = m.session_id
  where m.id = $1 and m.session_id = $2`;
