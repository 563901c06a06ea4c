import { buildApp } from '../../src/app.ts';

/**
 * Runs a worker process's queue on a test server's storage until it is empty:
 * the batches' ingest jobs write the messages' embeddings (test servers that
 * run no workers leave them queued). Workspaces whose reasoning and summaries
 * are off have no other jobs.
 */
export async function embedQueued(cfg: object, timeoutMs = 60_000): Promise<void> {
  const worker: any = await buildApp({ ...cfg, runWorkers: true } as any);
  try {
    const url = await worker.listen({ port: 0, host: '127.0.0.1' });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const health = (await (await fetch(`${url}/health`)).json()) as { queue_depth: number };
      if (health.queue_depth === 0) return;
      if (Date.now() > deadline) throw new Error(`${health.queue_depth} jobs still queued`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await worker.close();
  }
}

/** A workspace configuration with reasoning and summaries off: a message batch's only job is its ingest. */
export const NO_REASONING = { reasoning: { enabled: false }, summary: { enabled: false } };
