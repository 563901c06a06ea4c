/**
 * Messages between the service's main thread and an execution thread. One
 * execution thread runs one prompt at a time with its own node registry and
 * output cache; the main thread keeps HTTP, WebSockets and the database.
 */
import type { WorkflowConfig } from '../config.ts';
import type { ExecutorLimits, NodeMeta, RunResult } from '../engine/executor.ts';
import type { NodeProgress } from '../engine/progress.ts';
import type { NodeEnv } from '../nodes/api.ts';
import type { LoadedModel } from '../models/sd1.ts';

/** `workerData` of an execution thread. */
export interface ThreadInit {
  config: WorkflowConfig;
  limits: ExecutorLimits;
  /** Int32Array[0]: the sequence number of the run the main thread interrupted (read inside synchronous nodes). */
  interruptFlag: SharedArrayBuffer;
  /**
   * Int32Array[0]: for a run handed over `held`, its sequence number once the prompt is stored (it may
   * start), or the negated number when it could not be stored (it must not run).
   */
  holdFlag: SharedArrayBuffer;
  /** Int32Array[0]: the native calls in progress, -1 once the thread may be terminated (models/native-calls.ts). */
  nativeCalls: SharedArrayBuffer;
  /** Int32Array: the pids of child processes the thread's nodes are running (processes/child-processes.ts). */
  childPids: SharedArrayBuffer;
}

/** The env functions a run may call back on the main thread (assets, workspace secrets, output visibility). */
export type EnvCall = 'canRead' | 'fileWritten' | 'secret';

export type ToThread =
  | {
      t: 'run';
      seq: number;
      promptId: string;
      prompt: Record<string, unknown>;
      outputs: string[];
      extraData: Record<string, unknown>;
      dirs: NodeEnv['dirs'];
      /** Which env functions the main thread serves for this run. */
      calls: EnvCall[];
      /** Whether the prompt has a client: without one, progress is not sent at all. */
      client: boolean;
      /** Handed over while its row is still being stored: the run waits on `holdFlag` before any node runs. */
      held?: boolean;
    }
  | { t: 'interrupt'; seq: number }
  | { t: 'free'; unloadModels: boolean; freeMemory: boolean }
  | { t: 'reply'; id: number; ok: true; value: unknown }
  | { t: 'reply'; id: number; ok: false; error: string };

/** The end of a run: its messages, outputs and executed nodes came with the events (`send`, `recorded`), so only the verdict crosses. */
export interface RunEnd {
  status: RunResult['status'];
  interrupted: boolean;
}

/** One sink call of a run, in order. */
export type RunEvent =
  | ['send', string, Record<string, unknown>, boolean, boolean]
  | ['progress', { value: number; max: number; prompt_id: string; node: string }]
  | ['state', NodeProgress[]]
  | ['preview', Uint8Array, 'png' | 'jpeg', Record<string, unknown>]
  | ['recorded', string, boolean, { meta: NodeMeta; output: Record<string, unknown[]> } | undefined];

export type FromThread =
  | { t: 'ready' }
  /** A run's events in order; the last batch carries the run's end. */
  | { t: 'events'; seq: number; events: RunEvent[]; end?: RunEnd }
  | { t: 'call'; seq: number; id: number; fn: EnvCall; args: unknown[] }
  | { t: 'ack'; seq: number }
  | { t: 'crashed'; seq: number; error: string }
  | { t: 'log'; level: 'warn' | 'error'; msg: string; data: Record<string, unknown> }
  /** The models this thread holds now, after each load or unload. */
  | { t: 'models'; models: LoadedModel[] };
