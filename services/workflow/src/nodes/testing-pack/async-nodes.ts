import { GraphBuilder, type NodeDefinition } from '../api.ts';
import { ImageBatch } from '../image-types.ts';
import { constantImage, fromTensor, imageTensor, pyError, pyFloat, sub } from './tensor.ts';
import { delay, sleepWithProgress } from './timing.ts';

const CATEGORY = 'experimental/async';

/** A counting semaphore for TestAsyncConcurrentLimit. */
class Semaphore {
  private waiters: Array<() => void> = [];
  constructor(private free: number) {}
  async acquire(signal?: AbortSignal): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== go);
        reject(signal!.reason);
      };
      const go = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiters.push(go);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}

const activeResources = new Map<string, boolean>();
const concurrency = new Semaphore(2);

/** async_test_nodes.py: async validation, errors, time-outs, lazy checks, expansion into async nodes, resources. */
/** Blocks a thread for a while (Atomics.wait on a cell nobody writes). */
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

export const asyncTestNodes: NodeDefinition[] = [
  {
    name: 'TestAsyncValidation',
    displayName: 'Test Async Validation',
    description: 'Test node with async VALIDATE_INPUTS.',
    category: CATEGORY,
    inputs: { required: { value: ['FLOAT', { default: 5.0 }], threshold: ['FLOAT', { default: 10.0 }] } },
    outputs: ['IMAGE'],
    validateInputs: {
      inputs: ['value', 'threshold'],
      fn: async ({ value, threshold }) => {
        await delay(1);
        return value > threshold ? `Value ${pyFloat(value)} exceeds threshold ${pyFloat(threshold)}` : true;
      },
    },
    execute: ({ value }) => [constantImage(1, 512, 512, value / 10.0)],
  },
  {
    name: 'TestAsyncError',
    displayName: 'Test Async Error',
    description: 'Test node that errors during async execution.',
    category: CATEGORY,
    inputs: { required: { value: ['*', {}], error_after: ['FLOAT', { default: 0.1, min: 0.0, max: 10.0 }] } },
    outputs: ['*'],
    async execute({ error_after }, ctx) {
      await delay(error_after * 1000, ctx.signal);
      throw pyError('RuntimeError', 'Intentional async execution error for testing');
    },
  },
  {
    name: 'TestAsyncValidationError',
    displayName: 'Test Async Validation Error',
    description: 'Test node with async validation that always fails.',
    category: CATEGORY,
    inputs: { required: { value: ['FLOAT', { default: 5.0 }], max_value: ['FLOAT', { default: 10.0 }] } },
    outputs: ['IMAGE'],
    validateInputs: {
      inputs: ['value', 'max_value'],
      fn: async ({ value, max_value }) => {
        await delay(1);
        return value > max_value ? `Async validation failed: ${pyFloat(value)} > ${pyFloat(max_value)}` : true;
      },
    },
    execute: ({ value, max_value }) => [constantImage(1, 512, 512, value / max_value)],
  },
  {
    name: 'TestAsyncTimeout',
    displayName: 'Test Async Timeout',
    description: 'Test node that simulates timeout scenarios.',
    category: CATEGORY,
    inputs: {
      required: {
        value: ['*', {}],
        timeout: ['FLOAT', { default: 1.0, min: 0.1, max: 10.0 }],
        operation_time: ['FLOAT', { default: 2.0, min: 0.1, max: 10.0 }],
      },
    },
    outputs: ['*'],
    async execute({ value, timeout, operation_time }, ctx) {
      await delay(Math.min(timeout, operation_time) * 1000, ctx.signal);
      if (operation_time > timeout) throw pyError('RuntimeError', `Operation timed out after ${pyFloat(timeout)} seconds`);
      return [value];
    },
  },
  {
    name: 'TestSyncError',
    displayName: 'Test Sync Error',
    description: 'Test node that errors synchronously (for mixed sync/async testing).',
    category: CATEGORY,
    inputs: { required: { value: ['*', {}] } },
    outputs: ['*'],
    execute: () => {
      throw pyError('RuntimeError', 'Intentional sync execution error for testing');
    },
  },
  {
    name: 'TestAsyncLazyCheck',
    displayName: 'Test Async Lazy Check',
    description: 'Test node with async check_lazy_status.',
    category: CATEGORY,
    inputs: { required: { input1: ['*', { lazy: true }], input2: ['*', { lazy: true }], condition: ['BOOLEAN', { default: true }] } },
    outputs: ['IMAGE'],
    checkLazyStatus: async ({ condition, input1, input2 }, ctx) => {
      await delay(1, ctx.signal);
      const needed: string[] = [];
      if (condition && (input1 === null || input1 === undefined)) needed.push('input1');
      if (!condition && (input2 === null || input2 === undefined)) needed.push('input2');
      return needed;
    },
    execute: () => [constantImage(1, 512, 512, 1)],
  },
  {
    name: 'TestDynamicAsyncGeneration',
    displayName: 'Test Dynamic Async Generation',
    description: 'Test node that dynamically generates async nodes.',
    category: CATEGORY,
    inputs: {
      required: {
        image1: ['IMAGE'],
        image2: ['IMAGE'],
        num_async_nodes: ['INT', { default: 3, min: 1, max: 10 }],
        sleep_duration: ['FLOAT', { default: 0.2, min: 0.1, max: 1.0 }],
      },
    },
    outputs: ['IMAGE'],
    execute: ({ image1, image2, num_async_nodes, sleep_duration }) => {
      const g = new GraphBuilder();
      const sleeps = Array.from({ length: num_async_nodes }, (_, i) => g.node('TestSleep', undefined, { value: i % 2 === 0 ? image1 : image2, seconds: sleep_duration }));
      let final = sleeps[0]!;
      if (sleeps.length > 1) {
        const avg: Record<string, unknown> = {};
        sleeps.forEach((s, i) => (avg[`input${i + 1}`] = s.out(0)));
        final = g.node('TestVariadicAverage', undefined, avg);
      }
      return { result: [final.out(0)], expand: g.finalize() };
    },
  },
  {
    name: 'TestAsyncResourceUser',
    displayName: 'Test Async Resource User',
    description: 'Test node that uses resources during async execution.',
    category: CATEGORY,
    inputs: { required: { value: ['*', {}], resource_id: ['STRING', { default: 'resource_0' }], duration: ['FLOAT', { default: 0.1, min: 0.0, max: 1.0 }] } },
    outputs: ['*'],
    async execute({ value, resource_id, duration }, ctx) {
      if (activeResources.get(resource_id)) throw pyError('RuntimeError', `Resource ${resource_id} is already in use!`);
      activeResources.set(resource_id, true);
      try {
        await delay(duration * 1000, ctx.signal);
        return [value];
      } finally {
        activeResources.set(resource_id, false);
      }
    },
  },
  {
    name: 'TestAsyncBatchProcessing',
    displayName: 'Test Async Batch Processing',
    description: 'Test async processing of batched inputs.',
    category: CATEGORY,
    inputs: {
      required: { images: ['IMAGE'], process_time_per_item: ['FLOAT', { default: 0.1, min: 0.01, max: 1.0 }] },
      hidden: { unique_id: 'UNIQUE_ID' },
    },
    outputs: ['IMAGE'],
    async execute({ images, process_time_per_item }, ctx) {
      const batch = images as ImageBatch;
      const frames = [];
      for (let i = 0; i < batch.frames.length; i++) {
        await delay(process_time_per_item * 1000, ctx.signal);
        const inverted = fromTensor(sub(1, imageTensor(new ImageBatch([batch.frames[i]!])))) as ImageBatch;
        frames.push(...inverted.frames);
        ctx.progress(i + 1, batch.frames.length);
      }
      return [new ImageBatch(frames)];
    },
  },
  {
    name: 'TestAsyncConcurrentLimit',
    displayName: 'Test Async Concurrent Limit',
    description: 'Test concurrent execution limits for async nodes.',
    category: CATEGORY,
    inputs: { required: { value: ['*', {}], duration: ['FLOAT', { default: 0.5, min: 0.1, max: 2.0 }], node_id: ['INT', { default: 0 }] } },
    outputs: ['*'],
    async execute({ value, duration }, ctx) {
      await concurrency.acquire(ctx.signal);
      try {
        await delay(duration * 1000, ctx.signal);
        return [value];
      } finally {
        concurrency.release();
      }
    },
  },
];

/** api_test_nodes.py: progress reported through the node API from async and plain functions. */
export const apiTestNodes: NodeDefinition[] = [
  {
    name: 'TestAsyncProgressUpdate',
    displayName: 'Async Progress Update Test Node',
    category: CATEGORY,
    inputs: { required: { value: ['*', {}], sleep_seconds: ['FLOAT', { default: 1.0 }] } },
    outputs: ['*'],
    async execute({ value, sleep_seconds }, ctx) {
      await sleepWithProgress(sleep_seconds, ctx, (elapsed) => ctx.progress(sleep_seconds > 0 ? Math.min(1, elapsed / sleep_seconds) : 1, 1.0));
      return [value];
    },
  },
  {
    name: 'TestSyncProgressUpdate',
    displayName: 'Sync Progress Update Test Node',
    category: CATEGORY,
    inputs: { required: { value: ['*', {}], sleep_seconds: ['FLOAT', { default: 1.0 }] } },
    outputs: ['*'],
    // Synchronous, as the reference's: it blocks the execution thread it runs on (10 ms waits between
    // progress reports) and returns its value, not a promise; an interrupt is seen through checkInterrupt.
    execute({ value, sleep_seconds }, ctx) {
      const start = performance.now();
      const end = start + Math.max(0, sleep_seconds) * 1000;
      for (let now = start; now < end; ) {
        ctx.checkInterrupt();
        now = performance.now();
        ctx.progress(Math.min(1, (now - start) / (sleep_seconds * 1000)), 1.0);
        Atomics.wait(SLEEPER, 0, 0, 10);
      }
      return [value];
    },
  },
];
