import { collectYoungGeneration } from '../heap/young-gc.ts';

/**
 * Frees the chunks a large request body arrived in, once they have been
 * copied out.
 *
 * Node's HTTP parser hands a body over in chunks of up to 64 KiB, each copied
 * into a buffer of its own (malloc'd outside the JavaScript heap); a 3 MB
 * upload leaves about 46 of them behind, referenced only by dead young
 * objects, so only the next garbage collection frees them. Until one runs,
 * every upload takes its chunks from fresh pages: measured on a bare `http`
 * server, 17-20 ms of main-thread CPU per 3 MB upload while the heap grows
 * (about 750 page faults each), 5-7 ms once it reuses freed chunks, and the
 * pattern returns whenever collections fall behind. A young-generation
 * collection right after such a body (heap/young-gc.ts) frees them at once,
 * and the next upload reuses the same, already mapped memory.
 */

/** Bodies from this size up are worth a collection (a few chunks of fresh pages cost less than one). */
export const RELEASE_CHUNKS_FROM = 1 << 20;

export function releaseBodyChunks(bytes: number): void {
  if (bytes >= RELEASE_CHUNKS_FROM) collectYoungGeneration();
}
