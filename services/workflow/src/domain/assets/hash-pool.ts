import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * BLAKE3 of files on a worker thread. hash-wasm hashes on the thread that
 * calls it: a 2 MB upload's hash took ~5 ms of the event loop, which halved
 * the service's concurrent upload throughput with assets on. One worker,
 * created on first use, unref'd while idle (it never keeps the process
 * alive); it reads and hashes one file at a time with synchronous reads,
 * which block only itself. Callers fall back to hashing in-thread when the
 * worker cannot run (see content.ts).
 */
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { createBLAKE3 } = require(workerData.hashWasm);
const buf = Buffer.allocUnsafe(1024 * 1024);
let chain = createBLAKE3();
parentPort.on('message', ({ id, file }) => {
  chain = chain.then((h) => {
    let fd;
    try {
      fd = fs.openSync(file, 'r');
      h.init();
      let size = 0;
      for (;;) {
        const n = fs.readSync(fd, buf, 0, buf.length, null);
        if (n === 0) break;
        h.update(buf.subarray(0, n));
        size += n;
      }
      parentPort.postMessage({ id, hash: 'blake3:' + h.digest('hex'), size });
    } catch (err) {
      parentPort.postMessage({ id, error: String(err && err.message), code: err && err.code });
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
    return h;
  });
});
`;

interface Pending {
  resolve: (r: { hash: string; size: number }) => void;
  reject: (err: Error) => void;
}

let worker: Worker | undefined;
let broken = false;
let nextId = 1;
const pending = new Map<number, Pending>();

function failAll(err: Error): void {
  for (const p of pending.values()) p.reject(err);
  pending.clear();
}

function spawn(): Worker | undefined {
  if (worker || broken) return worker;
  try {
    const hashWasm = createRequire(import.meta.url).resolve('hash-wasm');
    const w = new Worker(SOURCE, { eval: true, workerData: { hashWasm }, stdout: false, stderr: false });
    w.unref();
    w.on('message', (m: { id: number; hash?: string; size?: number; error?: string; code?: string }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (pending.size === 0) w.unref();
      if (m.error !== undefined) p.reject(Object.assign(new Error(m.error), m.code ? { code: m.code } : {}));
      else p.resolve({ hash: m.hash!, size: m.size! });
    });
    // An uncaught error in the worker (it cannot load hash-wasm, say): in-thread hashing from then on.
    w.on('error', (err) => {
      failAll(err);
      if (worker === w) worker = undefined;
      broken = true;
    });
    w.on('exit', () => {
      failAll(new Error('the hashing worker exited'));
      if (worker === w) worker = undefined;
    });
    worker = w;
    return w;
  } catch {
    broken = true;
    return undefined;
  }
}

/** BLAKE3 and size of a file, hashed off the event loop; undefined when no worker can run (hash in-thread then). */
export function hashFileOffThread(file: string): Promise<{ hash: string; size: number }> | undefined {
  const w = spawn();
  if (!w) return undefined;
  const id = nextId;
  nextId = nextId >= 0x7fffffff ? 1 : nextId + 1;
  if (pending.size === 0) w.ref();
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    w.postMessage({ id, file });
  });
}
