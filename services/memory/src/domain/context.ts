import type { Storage } from '@svc/storage';
import type { JobQueue } from '@svc/queue';
import type { Search } from '../search/index.ts';

/** What the domain functions need: storage, the search index (documents) and the job queue (deriver). */
export interface Ctx {
  storage: Storage;
  search: Search;
  queue: JobQueue;
}
