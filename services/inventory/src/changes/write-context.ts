import type { Kysely } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import type { Principal } from '../auth/principal.ts';
import type { RecordedChange } from './coalesce.ts';

/** Configurable NetBox validation rules. */
export interface ModelSettings {
  /** ENFORCE_GLOBAL_UNIQUE: no duplicate IP addresses outside VRFs (NetBox's default since 3.7: true). */
  enforceGlobalUnique: boolean;
}

/** What a domain write function gets: the request's transaction and its change list. */
export interface WriteContext {
  trx: Kysely<any>;
  dialect: SqlDialect;
  principal: Principal;
  requestId: string;
  /** One clock reading per request: created/last_updated and the changelog agree. */
  now: Date;
  changes: RecordedChange[];
  settings?: ModelSettings;
  /** Final REST representations (relative URLs) of the changed objects, by `type:id`, filled when the request's changes are flushed. */
  representations: Map<string, Record<string, unknown>>;
}
