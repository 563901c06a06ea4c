import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from './config.ts';
import { applyHttpTimeouts, httpTimeoutsFrom } from './http-timeouts.ts';

/**
 * Starts a built app on the configured port, prints its URL, and closes it
 * cleanly on SIGINT/SIGTERM (onClose hooks stop workers and storage). A
 * second signal exits at once.
 */
export async function runService(name: string, cfg: ServiceConfig, build: (cfg: ServiceConfig) => Promise<FastifyInstance>): Promise<FastifyInstance> {
  const app = await build(cfg);
  applyHttpTimeouts(app.server, cfg.httpTimeouts ?? httpTimeoutsFrom(cfg.flags));
  const address = await app.listen({ port: cfg.port, host: cfg.host });
  const storage = cfg.databaseUrl ? 'postgresql' : `sqlite (${cfg.dataDir})`;
  // Under npm start (scripts/start-all.mjs, an IPC channel) the supervisor prints one banner for all services.
  if (process.send && process.env.SVC_SUPERVISED === '1') process.send({ type: 'listening', name, url: address, storage });
  else process.stdout.write(`${name} listening on ${address}  [storage: ${storage}; docs: ${address}/docs]\n`);
  onShutdown(async () => {
    await app.close();
  });
  return app;
}

let handlers: Array<() => Promise<void>> = [];
let installed = false;

/** Registers cleanup to run once on SIGINT/SIGTERM before the process exits. */
export function onShutdown(fn: () => Promise<void>): void {
  handlers.push(fn);
  if (installed) return;
  installed = true;
  let closing = 0;
  const stop = (signal: string) => {
    // npm forwards a terminal's Ctrl-C that the process group got as well: a
    // repeat within a second is that echo, a later one forces the exit.
    if (closing) {
      if (Date.now() - closing > 1000) process.exit(1);
      return;
    }
    closing = Date.now();
    process.stderr.write(`received ${signal}, shutting down\n`);
    const all = handlers;
    handlers = [];
    const timer = setTimeout(() => process.exit(1), 15_000);
    timer.unref();
    Promise.allSettled(all.map((h) => h())).then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
