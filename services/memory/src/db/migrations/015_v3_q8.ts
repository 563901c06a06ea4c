import { sql, type Kysely } from 'kysely';
import type { Migration, SqlDialect } from '@svc/storage';

/**
 * A message embedding's int8 copy as the search index holds it (float32
 * inverse scale, then a byte per dimension; message-index.ts `quantize`),
 * written by the ingest job beside the float vector: an index build reads
 * a quarter of the bytes.
 */
export const v3Q8Migration: Migration = {
  name: '015_v3_q8',
  async up(db: Kysely<any>, d: SqlDialect) {
    await sql`alter table v3_vectors add column q8 ${sql.raw(d.blobType)}`.execute(db);
  },
};
