import { collectYoungGeneration } from './young-gc.ts';

/**
 * Lets the C allocator keep freed memory of large buffers mapped, so that the
 * next prompt's planes reuse it instead of faulting in fresh pages.
 *
 * glibc's malloc serves a request above its mmap threshold (128 KiB at
 * first) with a mapping of its own, unmapped when freed; it raises the
 * threshold to the size of each such mapping freed, up to 32 MiB, and trims
 * a heap's free top down once it exceeds twice the threshold. A prompt of
 * 1024² masks frees 12–35 MB of planes (4 MiB each) at its end: with the
 * threshold near 4 MiB (what its first planes raised it to), the trim gave
 * that memory back to the kernel after every prompt, and the next prompt
 * faulted it in again (~3,000–8,000 page faults, 4–10 ms of CPU each time).
 *
 * Freeing one mapping just under 32 MiB raises the threshold to it (and the
 * trim threshold to 64 MiB) for the whole process, as a long-running process
 * that had once freed such a buffer would have: up to 64 MiB of free memory
 * per heap stays mapped. The buffer is never touched (its pages are never
 * faulted in) and freed at once by a young collection. Elsewhere (another C
 * library) this only allocates and frees the buffer.
 */
const SIZE = 32 * 2 ** 20 - 64 * 1024;
let done = false;

export function retainFreedMemory(): void {
  if (done) return;
  done = true;
  allocate();
  // The buffer is dead: this collection frees it (synchronously, young-gc.ts).
  collectYoungGeneration();
}

function allocate(): void {
  void new ArrayBuffer(SIZE);
}
