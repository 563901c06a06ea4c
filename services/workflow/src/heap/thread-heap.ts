import v8 from 'node:v8';

/**
 * The old generation's first limit for the isolates created from now on (the
 * execution threads): 64 MiB instead of V8's ~11–27 MiB.
 *
 * An execution thread keeps a small live heap (~11 MiB) while its prompts make
 * large short-lived buffers, so V8 grows its young generation to the full
 * 16 MiB a semi-space. V8 starts incremental marking as soon as the room left
 * below the old generation's limit is no more than the young generation's
 * capacity, and after a full collection of such a heap its next limit is only
 * ~16 MiB above the live size: marking began again right after each full
 * collection, and a run of the image bench made ~40 of them in the thread
 * (a few ms of pause each, plus V8's marking threads), landing on whatever
 * prompt ran at the time (a 5 ms latent prompt took 7 ms more CPU).
 * With this floor: 5–8 full collections a run and ~7 % less CPU in all
 * (measured 2026-11-29, bench/workflow/image-pipeline.ts --service-only,
 * --trace-gc). The cost is up to 64 MiB of dead JavaScript objects a thread
 * before they are collected (pixel buffers are native memory, not counted
 * here, and young collections still free them).
 *
 * V8 reads the flag when an isolate is made, so this is set before the
 * threads are started; the main isolate keeps its own sizes. Not where the
 * process was started with a heap size of its own.
 */
const INITIAL_OLD_SPACE_MB = 64;

let applied = false;

export function raiseThreadHeapFloor(): void {
  if (applied) return;
  applied = true;
  const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((a) => /initial[-_](old[-_]space|heap)[-_]size/.test(a));
  if (given) return;
  try {
    v8.setFlagsFromString(`--initial-old-space-size=${INITIAL_OLD_SPACE_MB}`);
  } catch {
    // A runtime without the flag: the defaults stay.
  }
}
