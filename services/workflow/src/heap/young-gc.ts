import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * A collection of the young generation, now.
 *
 * Large native buffers that JavaScript objects own (the HTTP parser's chunks
 * of a request body, the raw pixels sharp hands back) are freed only when a
 * collection finds their objects dead. Until one runs, each new buffer of the
 * same kind is taken from fresh pages: on this kind of machine about 12 ms of
 * CPU in page faults per 3 MB (750 faults), where reusing freed memory costs
 * nothing. The young generation is cheap to collect (only its live objects
 * are visited: well under a millisecond), and that is where such objects are
 * when their work is done. The callers run it right after such a piece of work
 * (an upload's body read and copied, a prompt whose nodes made large buffers).
 *
 * The collector is reached through V8's `gc` extension, made available for one
 * new context only (the flag is set and cleared around it, so no other code
 * sees a `gc` global). Where that fails, this does nothing.
 */
let collect: ((options: { type: 'minor'; execution: 'sync' }) => void) | null | undefined;

/**
 * Whether the collection sweeps the dead buffers itself (V8's
 * --no-concurrent-array-buffer-sweeping for its duration). V8 frees dead
 * ArrayBuffers' memory on a background thread after a young collection, and
 * counts it as allocated until then; at the collection's end it compares the
 * old generation plus the external memory allocated since the last full
 * collection with its limit (a heap of ~10 MB has ~10–16 MB of room). So a
 * prompt that made more than that in planes (a 1024² mask is 4 MiB) started
 * incremental marking there, with memory that was in fact free: a full
 * collection after about every prompt (~10 ms of CPU, mostly on V8's
 * marking threads). Swept in the pause (free() of a few buffers), the memory
 * is uncounted before the limit is looked at. Not where the process was
 * started with the flag set either way (it would be overridden).
 */
const toggleSweeping = ![...process.execArgv, process.env.NODE_OPTIONS ?? ''].some((a) => a.includes('array-buffer-sweeping'));

export function collectYoungGeneration(): void {
  if (collect === undefined) {
    collect = null;
    try {
      v8.setFlagsFromString('--expose-gc');
      try {
        const gc = vm.runInNewContext('typeof gc === "function" ? gc : undefined') as typeof collect;
        if (typeof gc === 'function') collect = gc;
      } finally {
        v8.setFlagsFromString('--no-expose-gc');
      }
    } catch {
      collect = null;
    }
  }
  if (!collect) return;
  if (toggleSweeping) v8.setFlagsFromString('--no-concurrent-array-buffer-sweeping');
  try {
    collect({ type: 'minor', execution: 'sync' });
  } finally {
    if (toggleSweeping) v8.setFlagsFromString('--concurrent-array-buffer-sweeping');
  }
}

/** External (native) memory this thread's heap accounts for, in bytes. */
export function externalMemory(): number {
  return (v8.getHeapStatistics() as v8.HeapInfo & { external_memory?: number }).external_memory ?? 0;
}
