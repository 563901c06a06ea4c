/**
 * Resident memory while inserting 1,000,000 messages through the domain layer
 * (batched transactions, not HTTP) into the embedded SQLite storage. Goal:
 * RSS stays under 300 MB — no unbounded caches on the write path.
 *
 *   npx tsx bench/memory/rss.ts [--messages 1000000] [--batch 1000] [--database-url postgres://…]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createQueue } from '@svc/queue';
import { openMemoryStorage } from '../../services/memory/src/app.ts';
import { memoryConfig } from '../../services/memory/src/config.ts';
import { createApp } from '../../services/memory/src/domain/apps.ts';
import { createUser } from '../../services/memory/src/domain/users.ts';
import { createSession } from '../../services/memory/src/domain/sessions.ts';
import { createMessagesBatch, listMessages } from '../../services/memory/src/domain/messages.ts';
import { pagingFrom } from '../../services/memory/src/domain/paging.ts';
import { createSearch } from '../../services/memory/src/search/index.ts';
import type { Ctx } from '../../services/memory/src/domain/context.ts';

const { values: args } = parseArgs({
  options: { messages: { type: 'string', default: '1000000' }, batch: { type: 'string', default: '1000' }, 'database-url': { type: 'string' } },
  strict: false,
});
const total = Number(args.messages);
const batch = Number(args.batch);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memory-rss-'));
const cfg = memoryConfig({
  port: 0, host: '127.0.0.1', dataDir: dir, databaseUrl: args['database-url'] as string | undefined,
  pgSchema: `rss_${process.pid}`, logLevel: 'warn', runWorkers: false, flags: {},
});
const mb = (n: number) => (n / 1024 / 1024).toFixed(1);

const storage = await openMemoryStorage(cfg);
const queue = await createQueue(storage, { tasks: {} });
const ctx: Ctx = { storage, queue, search: createSearch({ storage, config: cfg }) };
const app = await createApp(ctx, { name: 'rss' });
const user = await createUser(ctx, app.id, { name: 'rss' });
const sessions = await Promise.all(Array.from({ length: 10 }, (_, i) => createSession(ctx, app.id, user.id, { location_id: `l${i}` })));

const start = performance.now();
const startRss = process.memoryUsage().rss;
let peak = startRss;
for (let done = 0; done < total; done += batch) {
  const s = sessions[(done / batch) % sessions.length]!;
  const n = Math.min(batch, total - done);
  const inputs = Array.from({ length: n }, (_, i) => ({
    content: `message ${done + i}: the quick brown fox jumps over the lazy dog, again and again`,
    is_user: false,
    metadata: { i: done + i, tag: i % 2 ? 'odd' : 'even' },
  }));
  await createMessagesBatch(ctx, app.id, user.id, s.id, inputs);
  const rss = process.memoryUsage().rss;
  if (rss > peak) peak = rss;
  if ((done + n) % 100_000 === 0) console.log(`${done + n} messages  rss ${mb(rss)} MB  heap ${mb(process.memoryUsage().heapUsed)} MB`);
}
const secs = (performance.now() - start) / 1000;
// A read at the end: the last page of one session, through the same domain layer.
const last = await listMessages(ctx, app.id, user.id, sessions[0]!.id, pagingFrom({ page: 2000, size: 50 }));
const endRss = process.memoryUsage().rss;
console.log(`\ninserted ${total} messages in ${secs.toFixed(1)} s (${(total / secs).toFixed(0)} msg/s) on ${storage.dialect.kind}`);
console.log(`RSS: start ${mb(startRss)} MB, peak ${mb(Math.max(peak, endRss))} MB, end ${mb(endRss)} MB (goal < 300 MB); last page has ${last.items.length} items of ${last.total}`);
await storage.close();
fs.rmSync(dir, { recursive: true, force: true });
