import fs from 'node:fs';
import pino from 'pino';
import { onShutdown, type ServiceConfig } from '@svc/kernel';
import type { Storage } from '@svc/storage';
import { publishFfmpegPath, workflowConfig } from './config.ts';
import { Billing, billingConfig } from './domain/cloud/billing.ts';
import { secretReader } from './routes/cloud-content.ts';
import { buildExecution, type Execution } from './runtime/execution.ts';

/**
 * An execution worker of the hosted runtime without the HTTP API:
 * `npm run workflow:worker -- --data-dir <dir>` with DATABASE_URL. It takes
 * prompts from the queue it shares with every API process and worker on the
 * same PostgreSQL database, runs them, charges their execution time, and
 * sends their WebSocket messages through the relay to whichever API process
 * holds the client's socket.
 */
export async function startWorker(base: ServiceConfig, open: (cfg: ServiceConfig, opts?: { relaxedCommits?: boolean }) => Promise<Storage>): Promise<{ ex: Execution; close(): Promise<void> }> {
  const config = workflowConfig({ ...base, flags: { ...base.flags, runtime: 'cloud' } });
  publishFfmpegPath(config);
  if (!config.databaseUrl) throw new Error('a workflow worker shares the queue of the API processes: set DATABASE_URL (PostgreSQL)');
  for (const d of Object.values(config.dirs)) fs.mkdirSync(d, { recursive: true });
  const log = pino({ level: config.logLevel, base: { service: 'workflow-worker' } });
  // A worker's commits (claims, ends, charges, queue completions) do not wait for the disk: a
  // database crash can only drop a suffix of them, which leaves claimed prompts whose queue jobs
  // are retried and settled as a lost worker's. Prompts themselves are stored by the API processes,
  // durably, before their POST is answered.
  const storage = await open(config, { relaxedCommits: process.env.WORKFLOW_WORKER_SYNC_COMMIT !== '1' });
  try {
    if (storage.dialect.kind !== 'postgres') throw new Error('a workflow worker needs PostgreSQL (DATABASE_URL)');
    const billing = new Billing(() => storage.db, billingConfig(config.flags));
    const charging = new Set<Promise<unknown>>();
    const ex = await buildExecution(config, storage, log, {
      // A worker holds no client sockets: it hears cancels, not every prompt's frames.
      sockets: false,
      readSecret: secretReader(() => storage.db, { dataDir: config.dataDir, flags: config.flags }),
      onFinished: (job) => {
        // Every job that started is charged by its execution time, as in an API process.
        const p = billing.chargeJob(job.owner, job.promptId, job.endTime - job.startTime).catch((err) => log.warn({ err, prompt_id: job.promptId }, 'the job could not be charged'));
        charging.add(p);
        void p.finally(() => charging.delete(p));
      },
    });
    if (!ex.shared) throw new Error('the shared queue is turned off (--shared-queue false): a worker has nothing to take');
    await ex.runner.start();
    log.info({ worker: ex.runner.workerId }, 'workflow worker started');
    return {
      ex,
      async close() {
        await ex.close();
        await Promise.allSettled([...charging]);
        await storage.close();
      },
    };
  } catch (err) {
    await storage.close();
    throw err;
  }
}

/** The process entry (main.ts `worker`): runs until SIGINT/SIGTERM. */
export async function runWorker(base: ServiceConfig, open: (cfg: ServiceConfig, opts?: { relaxedCommits?: boolean }) => Promise<Storage>): Promise<void> {
  const w = await startWorker(base, open);
  // The queue's timers are unref'd; a worker has no server keeping the process alive.
  const keepAlive = setInterval(() => {}, 1 << 30);
  process.stdout.write(`workflow worker started [${w.ex.runner.workerId}]\n`);
  onShutdown(async () => {
    clearInterval(keepAlive);
    await w.close();
  });
}
