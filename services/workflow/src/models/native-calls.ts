/**
 * Calls into ONNX Runtime's native code, counted so that the thread running them is never terminated inside one.
 *
 * onnxruntime-node runs a session (and creates one) synchronously on the calling thread. A worker thread
 * terminated meanwhile finds its JavaScript environment gone when the call returns, and the binding's C++
 * exception on the way back aborts the whole process. So an execution thread counts its native calls in a cell
 * shared with the main thread: the main thread terminates it only once the count is 0, after marking the cell
 * closed (-1) so that no call can start in between (`terminateOutsideNative` in the thread pool).
 *
 * Outside an execution thread (tests, scripts, the main thread) nothing is counted.
 */
// On the thread's global object: a node pack importing this module from the sources while the thread runs from the
// bundle (two copies of the module) counts in the same cell.
const CELL = Symbol.for('workflow.nativeCalls');
const holder = globalThis as { [CELL]?: Int32Array };

/** Called once by an execution thread with the cell the main thread watches. */
export function shareNativeCallCount(buffer: SharedArrayBuffer): void {
  holder[CELL] = new Int32Array(buffer);
}

/** Thrown instead of starting a native call in a thread that is being terminated. */
export class ThreadClosingError extends Error {
  constructor() {
    super('the execution thread is stopping');
    this.name = 'ThreadClosingError';
  }
}

/** Runs `call` (which enters native code) counted; refused once the thread is marked for termination. */
export async function nativeCall<T>(call: () => Promise<T> | T): Promise<T> {
  const c = holder[CELL];
  if (!c) return await call();
  for (;;) {
    const n = Atomics.load(c, 0);
    if (n < 0) throw new ThreadClosingError();
    if (Atomics.compareExchange(c, 0, n, n + 1) === n) break;
  }
  try {
    return await call();
  } finally {
    Atomics.sub(c, 0, 1);
    Atomics.notify(c, 0);
  }
}

interface NativeSession {
  run(...a: never[]): Promise<unknown>;
  release(): Promise<void>;
}

/** An ONNX Runtime session with its runs and its release counted as native calls. */
export function counted<S extends NativeSession>(s: S): S {
  const run = s.run.bind(s) as (...a: unknown[]) => Promise<unknown>;
  const release = s.release.bind(s);
  return Object.assign(s, {
    run: (...a: unknown[]) => nativeCall(() => run(...a)),
    release: () => nativeCall(release),
  });
}

// In Node 20 (V8 11), not yet in TypeScript's ES2022 library.
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number, t: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

/**
 * Closes `cell` once no native call is in progress and answers; until then waits (a model step can take a while).
 * After it answers no native call starts: the thread may be terminated. `gone` says the thread has ended by itself.
 */
export async function closeNativeCalls(cellOf: Int32Array, gone: () => boolean = () => false, pollMs = 1_000): Promise<void> {
  for (;;) {
    // A thread that ended by itself (a node that exited it) may have left a count behind: nothing runs there any more.
    if (gone()) return;
    const n = Atomics.load(cellOf, 0);
    if (n < 0) return;
    if (n === 0) {
      if (Atomics.compareExchange(cellOf, 0, 0, -1) === 0) return;
      continue;
    }
    const w = waitAsync(cellOf, 0, n, pollMs);
    if (w.async) await w.value;
  }
}
