// Entry of the send thread. Node 20 does not pass the parent's module hooks (tsx) on to worker
// threads, so a TypeScript entry registers tsx itself before loading the real module.
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
