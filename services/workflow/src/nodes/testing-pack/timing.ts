import { InterruptError, type NodeContext } from '../api.ts';

/** Waits `ms`, or rejects with the interrupt as soon as the prompt is interrupted. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new InterruptError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason ?? new InterruptError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const STEP_MS = 20;

/** Sleeps `seconds`, reporting the elapsed time as progress and stopping at once on interrupt. */
export async function sleepWithProgress(seconds: number, ctx: NodeContext, report: (elapsedSeconds: number) => void): Promise<void> {
  const start = performance.now();
  const end = start + Math.max(0, seconds) * 1000;
  for (;;) {
    ctx.checkInterrupt();
    const now = performance.now();
    // Elapsed time capped at the duration itself (end − start is not always exactly it in floating point: a fraction could exceed 1).
    report(Math.min(now - start, Math.max(0, seconds) * 1000) / 1000);
    if (now >= end) return;
    await delay(Math.min(end - now, STEP_MS), ctx.signal);
  }
}
