import path from 'node:path';
import type { Storage } from '@svc/storage';
import type { WorkflowConfig } from '../config.ts';
import { AssetService } from '../domain/assets/service.ts';
import { billingConfig } from '../domain/cloud/billing.ts';
import { mayViewOutput } from '../domain/output-owners.ts';
import { Executor } from '../engine/executor.ts';
import { configureModelMemory } from '../models/sd1.ts';
import { ExecutionPool, type Engine } from '../threads/execution-pool.ts';
import type { NodeRegistry } from '../engine/registry.ts';
import { workspacesRoot } from '../files/workspace-folders.ts';
import { workspaceScope } from './workspace-scope.ts';
import type { NodeScope } from '../nodes/api.ts';
import { openSharedContent, type SharedContent } from '../files/shared-content.ts';
import { WsHub } from '../ws/hub.ts';
import { createRelay, type Relay } from '../ws/relay-factory.ts';
import { buildRegistry } from '../threads/node-registry.ts';
import { PromptRunner, type RunnerOptions } from './prompt-runner.ts';
import { idempotentNodes, millisecondsFlag, prefetchHoldMs, SharedQueue } from './shared-queue.ts';
import { deviceName, probeDevice } from '../models/device.ts';
import { configureDevice } from '../models/session.ts';
import { configurePrecision, precisionName, textEncoderPrecision, TORCH_DTYPE, vaePrecision } from '../models/precision.ts';

export { buildRegistry };

type Log = { info(o: object, m: string): void; warn(o: object, m: string): void; error(o: object, m: string): void };

/** Whether this process shares its queue with others: the hosted runtime on PostgreSQL (`--shared-queue false` opts out). */
export function usesSharedQueue(config: WorkflowConfig, storage: Storage): boolean {
  return config.runtime === 'cloud' && storage.dialect.kind === 'postgres' && config.flags.sharedQueue !== false && config.flags.sharedQueue !== 'false';
}

export interface Execution {
  registry: NodeRegistry;
  executor: Engine;
  hub: WsHub;
  relay?: Relay;
  assets?: AssetService;
  content?: SharedContent;
  runner: PromptRunner;
  shared?: SharedQueue;
  /** The folders an owner's prompts see, when owners are separated. */
  scopeFor?: (owner: string) => NodeScope;
  baseDirs: NodeScope['dirs'];
  close(): Promise<void>;
}

/**
 * What runs prompts, for an API process (app.ts) and for a worker without
 * HTTP (worker.ts): the node registry, the engine, the WebSocket hub with
 * its cross-process relay, assets, and the prompt runner over the local or
 * the shared queue.
 */
export async function buildExecution(
  config: WorkflowConfig,
  storage: Storage,
  log: Log,
  extra: { readSecret?: RunnerOptions['readSecret']; onFinished?: RunnerOptions['onFinished']; /** false for a worker: no client sockets here. */ sockets?: boolean } = {},
): Promise<Execution> {
  const cloud = config.runtime === 'cloud';
  const registry = await buildRegistry(config, log);
  const ex = config.execution;
  // Node code runs in execution threads (one prompt each): the API and sockets keep answering while it computes.
  // With no execution threads the models load here: the budget is this thread's (each thread sets its own).
  if (ex.threads === 0) configureModelMemory(config.maxModelMemoryMb * 2 ** 20);
  // A GPU that is missing or fails stops the start here, with the reason, rather than failing every prompt later.
  await probeDevice(config.device, { cudaProviderDir: config.cudaProviderDir });
  configureDevice(config.device);
  configurePrecision(config.precision);
  // The reference logs the device and the diffusion model's dtype at start-up; so does this.
  log.info({ device: deviceName(config.device), unet_dtype: config.precision.dtype, upcast_attention: config.precision.upcastAttention }, `Device: ${deviceName(config.device)}; diffusion model (UNet) dtype: ${precisionName(config.precision)} (${config.precision.reason})${config.precision.upcastAttention ? ', attention upcast to float32' : ''}`);
  // The other parts, as the reference's "VAE load device: …, dtype: …" and "CLIP/text encoder model load device: …, dtype: …" say them.
  const vae = vaePrecision();
  const te = textEncoderPrecision();
  log.info({ vae_dtype: vae.dtype, cpu_vae: vae.cpu, text_encoder_dtype: te.storage }, `VAE dtype: ${vae.dtype === 'fp16' ? 'torch.float16' : 'torch.float32'} (${vae.reason})${vae.cpu ? ', on the CPU (--cpu-vae)' : ''}; text encoder weights: ${TORCH_DTYPE[te.storage]} (${te.reason}), computed in float32; ControlNets as the UNet, T2I adapters and upscale models float32`);
  const executor: Engine =
    ex.threads === 0
      ? new Executor(registry, config.cache, ex.limits)
      : new ExecutionPool({ config, registry, threads: ex.threads, limits: ex.limits, interruptGraceMs: ex.interruptGraceMs, timeLimitMs: ex.timeLimitMs, memoryLimitMb: ex.memoryLimitMb, eager: config.runWorkers !== false, log });
  const slots = Math.max(1, ex.threads);
  // Several processes on one PostgreSQL database: a prompt's frames reach its client's socket whichever process holds it.
  const relay = createRelay(storage, config.flags, log, process.env, extra.sockets ?? true);
  const hub = new WsHub({ isolateOwners: cloud, relay });
  // Scale-out across machines: files one process writes are put in a shared store the others read.
  const content = await openSharedContent(config, log);
  // Assets are on unless --disable-assets: every file a job saves becomes one, its id in the `executed` entry.
  const assets =
    config.flags.disableAssets === true || process.env.WORKFLOW_DISABLE_ASSETS === '1'
      ? undefined
      : new AssetService(storage, { input: config.dirs.input, output: config.dirs.output, temp: config.dirs.temp, models: config.dirs.models, blobs: path.join(config.dataDir, 'assets', 'blobs'), ...(cloud ? { workspaces: workspacesRoot(config.dataDir) } : {}) }, log, content);
  const baseDirs = { input: config.dirs.input, output: config.dirs.output, temp: config.dirs.temp, models: config.dirs.models };
  // Hosted runtime: each workspace has its own input folder; with users or workspaces, outputs are read only by their job's owner.
  const scopeFor: ((owner: string) => NodeScope) | undefined = cloud
    ? (owner) => workspaceScope(baseDirs, config.dataDir, owner, (ref) => mayViewOutput(storage.db, owner, ref))
    : config.multiUser
      ? (owner) => ({ dirs: baseDirs, canRead: (ref) => mayViewOutput(storage.db, owner, ref) })
      : undefined;
  const shared = usesSharedQueue(config, storage)
    ? new SharedQueue(storage, {
        maxConcurrent: billingConfig(config.flags).maxConcurrentJobs,
        concurrency: slots,
        idempotentNodes: idempotentNodes(config.flags.idempotentNodes),
        prefetchHoldMs: prefetchHoldMs(config.flags.prefetchHoldMs),
        log,
      })
    : undefined;
  if (shared) await shared.ensureSchema();
  const runner = new PromptRunner({
    storage,
    executor,
    slots,
    maxPerOwner: cloud ? billingConfig(config.flags).maxConcurrentJobs : undefined,
    hub,
    dirs: baseDirs,
    scopeFor,
    perOwnerStatus: cloud,
    maxHistory: config.maxHistory,
    log,
    onFinished: extra.onFinished,
    readSecret: extra.readSecret,
    shared,
    fetchInputs: content && ((prompt, dirs) => content.materialize(prompt, dirs)),
    broadcastCancel: relay && ((id) => relay.publish({ to: null, cancel: id })),
    // A worker's messages all cross the relay: a short prompt's go as one notification (one wake-up of the API process and one socket write).
    relayCoalesceMs: relay && extra.sockets === false ? relayCoalesceMs(config.flags) : 0,
    fileWritten:
      assets || content
      ? async (file, job) => {
          await content?.fileWritten(file, job.owner);
          if (!assets) return undefined;
          try {
            const r = await assets.registerFile({ ...file, owner: job.owner, jobId: job.promptId });
            return r ? { id: r.row.id } : undefined;
          } catch (err) {
            log.warn({ err, file }, 'output file could not be registered as an asset');
          }
        }
      : undefined,
  });
  if (relay) {
    await relay.start((frames) => {
      for (const f of frames) if (f.cancel !== undefined) runner.cancelHere(f.cancel);
      hub.receive(frames);
    });
  }
  return {
    registry,
    executor,
    hub,
    relay,
    assets,
    content,
    runner,
    shared,
    scopeFor,
    baseDirs,
    async close() {
      await runner.stop();
      await executor.close?.();
      await relay?.close();
      await content?.close();
      hub.closeAll();
    },
  };
}

/** `--relay-coalesce-ms N` / WORKFLOW_RELAY_COALESCE_MS (default 5): how long a worker holds a prompt's first messages for the ones that follow. */
export function relayCoalesceMs(flags: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): number {
  return millisecondsFlag('relay-coalesce-ms', flags.relayCoalesceMs ?? env.WORKFLOW_RELAY_COALESCE_MS) ?? 5;
}
