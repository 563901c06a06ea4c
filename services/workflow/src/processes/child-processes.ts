/**
 * Child processes started by nodes (ffmpeg), listed where the main thread can see them. An execution thread that is
 * terminated (an interrupt it did not answer in time, a time limit) cannot kill its children any more, and a running
 * ffmpeg would go on for up to its own time limit: the main thread kills what the list holds when it stops the thread.
 * Native work on libuv's thread pool (files/webp-native.ts' encodes) cannot be killed, and the thread's termination
 * waits for it: the list's last entry is a flag the main thread raises first, which that work checks as it goes.
 *
 * A terminated thread's children are no longer reaped by it, so their pids stay taken (zombies) until the process
 * ends: a pid in the list is never another process's.
 */
const SLOTS = 64;
const KEY = Symbol.for('workflow.childPids');
const holder = globalThis as { [KEY]?: Int32Array };

/** A list for one thread (the main thread keeps it, the thread gets its buffer): SLOTS pids, then the stop flag. */
export function newChildList(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4 * (SLOTS + 1)));
}

/** Called once by an execution thread with its list. */
export function shareChildList(buffer: SharedArrayBuffer): void {
  holder[KEY] = new Int32Array(buffer);
}

/** Lists `pid` while it runs; answers what removes it (call it when the child has exited). */
export function trackChild(pid: number | undefined): () => void {
  const list = holder[KEY];
  if (!list || !pid) return () => {};
  for (let i = 0; i < SLOTS; i++) {
    if (Atomics.compareExchange(list, i, 0, pid) === 0) return () => void Atomics.compareExchange(list, i, pid, 0);
  }
  // More children at once than slots: this one is not listed (its node still kills it on interrupt).
  return () => {};
}

/** Lists the process group led by child `pid` (files/tool-runner.ts' shell and the tool it runs): stopping the thread kills the whole group. */
export function trackGroup(pid: number | undefined): () => void {
  return pid ? trackChild(-pid) : () => {};
}

/**
 * This thread's stop flag (non-zero once the main thread is stopping it), for native work that can end early; undefined
 * outside an execution thread.
 */
export function stopFlag(): Int32Array | undefined {
  return holder[KEY]?.subarray(SLOTS, SLOTS + 1);
}

/** Raises the stop flag and kills (SIGKILL) every listed child (or process group) of a thread that is being stopped. */
export function killChildren(list: Int32Array): void {
  Atomics.store(list, SLOTS, 1);
  for (let i = 0; i < SLOTS; i++) {
    // A negative entry is a group: kill(−pgid) reaches its leader and everything it started.
    const pid = Atomics.exchange(list, i, 0);
    if (pid === 0) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}
