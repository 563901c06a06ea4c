import type { FastifyInstance } from 'fastify';
import type { Storage } from '@svc/storage';
import type { WorkflowConfig } from '../config.ts';
import type { AssetService } from '../domain/assets/service.ts';
import type { NodeRegistry } from '../engine/registry.ts';
import type { PromptRunner, RunnerOptions } from '../runtime/prompt-runner.ts';
import type { WsHub } from '../ws/hub.ts';
import { cloudJobRoutes, type ViewRoute } from './cloud-jobs.ts';
import { cloudOpsSchemas } from './cloud-ops-schemas.ts';
import type { RouteCtx } from './context.ts';
import { experimentNodeRoutes } from './experiment-nodes.ts';

export interface CloudOpsDeps {
  ctx: RouteCtx;
  runner: PromptRunner;
  registry: NodeRegistry;
  hub: WsHub;
  assets?: AssetService;
  view: ViewRoute;
}

/**
 * The hosted runtime's operations beyond identity: cloud jobs, tasks, node
 * packs, cloud assets and billing. Made before the prompt runner (whose
 * end-of-job hook charges the ledger), its routes added once the runner,
 * registry and assets exist.
 */
export class CloudOps {
  constructor(
    readonly storage: Storage,
    readonly config: WorkflowConfig,
  ) {}

  /** The runner's end-of-prompt hook. */
  readonly onFinished: NonNullable<RunnerOptions['onFinished']> = () => {};

  routes(app: FastifyInstance, d: CloudOpsDeps): void {
    for (const s of cloudOpsSchemas) app.addSchema(s);
    const db = () => this.storage.db;
    cloudJobRoutes(app, db, d.runner, d.view);
    experimentNodeRoutes(app, db, d.registry);
  }
}
