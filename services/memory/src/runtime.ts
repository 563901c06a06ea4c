import v8 from 'node:v8';

/**
 * V8 settings of the service's process (main.ts, and the /query benchmark's
 * server process, which stands for it).
 *
 * Young-generation GCs (scavenges) run in parallel by default: the main
 * thread splits the work with helper threads and waits until all of them are
 * done. On a machine whose cores are busy with other work, a helper that is
 * not scheduled stretches a 1–2 ms scavenge to tens of milliseconds, and every
 * request in flight waits for it: on the shared 2-core machine at load 5–8,
 * the /query benchmark's server spent 303 ms in 30 scavenges (longest 57 ms)
 * with parallel scavenging and 127 ms (longest 37 ms) without. Scavenging on
 * the main thread alone costs about the same CPU and waits for no one.
 * `MEMORY_PARALLEL_SCAVENGE=1` keeps V8's default.
 */
export function tuneRuntime(env: NodeJS.ProcessEnv = process.env): void {
  if (env.MEMORY_PARALLEL_SCAVENGE === '1') return;
  v8.setFlagsFromString('--no-parallel-scavenge');
}
