import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * Frees the chunks a large request body arrived in, once they have been
 * copied out.
 *
 * Node's HTTP parser hands a body over in chunks of up to 64 KiB, each copied
 * into a buffer of its own (malloc'd outside the JavaScript heap); a 3 MB
 * upload leaves about 46 of them behind, referenced only by dead young
 * objects, so only the next garbage collection frees them. Until one runs,
 * every upload takes its chunks from fresh pages: on this kind of machine 750
 * page faults and 12-14 ms of CPU per 3 MB upload (measured on a bare
 * `http` server: 17-20 ms of main-thread CPU per upload while the heap grows,
 * 5-7 ms once it reuses freed chunks, and the pattern returns whenever
 * collections fall behind). A collection of the young generation alone after
 * such a body (well under a millisecond: it visits only live young objects)
 * frees them at once, and the next upload reuses the same, already mapped
 * memory.
 *
 * The collector is reached through V8's `gc` extension, made available for one
 * new context only (the flag is set and cleared around it, so no other code
 * sees a `gc` global). Where that fails, this does nothing.
 */
let collect: ((options: { type: 'minor'; execution: 'sync' }) => void) | null | undefined;

/** Bodies from this size up are worth a collection (a few chunks of fresh pages cost less than one). */
export const RELEASE_CHUNKS_FROM = 1 << 20;

export function releaseBodyChunks(bytes: number): void {
  if (bytes < RELEASE_CHUNKS_FROM) return;
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
  collect?.({ type: 'minor', execution: 'sync' });
}
