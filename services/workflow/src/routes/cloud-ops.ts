import type { FastifyInstance } from 'fastify';
import type { Storage } from '@svc/storage';
import type { WorkflowConfig } from '../config.ts';
import type { AssetService } from '../domain/assets/service.ts';
import type { NodeRegistry } from '../engine/registry.ts';
import type { PromptRunner, RunnerOptions } from '../runtime/prompt-runner.ts';
import type { WsHub } from '../ws/hub.ts';
import path from 'node:path';
import { Billing, BillingError, billingConfig } from '../domain/cloud/billing.ts';
import { outboundConfig, type OutboundConfig } from '../domain/cloud/outbound.ts';
import { TaskRunner } from '../domain/cloud/tasks.ts';
import { cloudAssetRoutes } from './cloud-assets.ts';
import { cloudJobRoutes, type ViewRoute } from './cloud-jobs.ts';
import { cloudOpsSchemas } from './cloud-ops-schemas.ts';
import type { RouteCtx } from './context.ts';
import { billingRoutes } from './billing.ts';
import { experimentNodeRoutes } from './experiment-nodes.ts';
import { taskRoutes } from './tasks.ts';

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
 *
 * Configuration (flags, or the environment where named):
 * - `--free-tier-credits N` (WORKFLOW_FREE_TIER_CREDITS, default 1000): credits every workspace gets once.
 * - `--credits-per-second R` (WORKFLOW_CREDITS_PER_SECOND, default 1): what a second of execution costs;
 *   each job is charged ceil(seconds × R); 0 makes execution free (benchmarks).
 * - `--max-concurrent-jobs N` (WORKFLOW_MAX_CONCURRENT_JOBS, default 1): reported by /api/features.
 * - `--credit-price-cents N` (default 1): the price of one top-up credit.
 * - `--billing-period-ms N` (default 30 days): the length of a subscription period (trials, tests).
 * - `--outbound-allow LIST` (WORKFLOW_OUTBOUND_ALLOW): ranges client-supplied URLs may reach although
 *   they are private, loopback or link-local (`loopback`, `private`, CIDRs, addresses); none by default.
 * - `--outbound-timeout-ms N` (default 10000): how long a remote server may take to answer.
 *
 * Payments go through a PaymentProvider. The built-in one (the only one so
 * far) records subscriptions and top-ups as paid without charging anyone:
 * the whole billing flow works end to end, and an operator who bills for
 * real plugs a processor in behind the same interface.
 */
export class CloudOps {
  /** Where client-supplied URLs may lead (`--outbound-allow`). */
  readonly outbound: OutboundConfig;
  readonly billing: Billing;
  private log: { warn(o: object, m: string): void } = console;

  constructor(
    readonly storage: Storage,
    readonly config: WorkflowConfig,
  ) {
    this.outbound = outboundConfig(config.flags.outboundAllow, process.env, config.flags.outboundTimeoutMs);
    this.billing = new Billing(() => storage.db, billingConfig(config.flags));
  }

  /** The cloud fields of /api/features (and of the WebSocket's feature_flags). */
  features(): Record<string, unknown> {
    return {
      free_tier_credits: this.billing.cfg.freeTierCredits,
      max_concurrent_jobs: this.billing.cfg.maxConcurrentJobs,
      posthog_api_host: null,
      workflow_templates_version: null,
      workflow_templates_source: null,
    };
  }

  /** The runner's end-of-prompt hook. */
  readonly onFinished: NonNullable<RunnerOptions['onFinished']> = (job) => {
    // Every job that started is charged by its execution time (a cancelled one for the time it ran).
    const p = this.billing.chargeJob(job.owner, job.promptId, job.endTime - job.startTime).then(
      () => undefined,
      (err) => this.log.warn({ err, prompt_id: job.promptId }, 'the job could not be charged'),
    );
    this.charging.add(p);
    void p.finally(() => this.charging.delete(p));
  };

  /** Charges not yet written: shutdown waits for them before the database closes. */
  private readonly charging = new Set<Promise<void>>();

  /** Shares the deps with tests (they register shared model files as assets, as an operator's seeding would). */
  deps?: CloudOpsDeps;

  routes(app: FastifyInstance, d: CloudOpsDeps): void {
    this.deps = d;
    app.decorate('cloudOps', this as CloudOps);
    for (const s of cloudOpsSchemas) app.addSchema(s);
    this.log = app.log;
    // No credits, no new prompts: POST /prompt answers 402 with the prompt error shape.
    app.addHook('preHandler', async (req, reply) => {
      if (req.method !== 'POST' || !req.principal) return;
      const url = req.routeOptions.url;
      if (url !== '/api/prompt' && url !== '/prompt') return;
      try {
        await this.billing.checkCanRun(req.principal.workspaceId);
      } catch (err) {
        if (!(err instanceof BillingError)) throw err;
        const body = { error: { type: err.code, message: err.message, details: `Credits remaining: ${err.details.credits_remaining}. Top up (POST /api/billing/topup) or subscribe to a plan (POST /api/billing/subscribe).`, extra_info: err.details }, node_errors: {} };
        return reply.code(402).type('application/json').send(JSON.stringify(body));
      }
    });
    billingRoutes(app, this.billing);
    const db = () => this.storage.db;
    cloudJobRoutes(app, db, d.runner, d.view);
    experimentNodeRoutes(app, db, d.registry);
    const tasks = new TaskRunner(db, (type, data, owner) => d.hub.send(type, data, null, owner));
    app.addHook('preClose', async () => {
      await tasks.drain();
      await Promise.allSettled([...this.charging]);
    });
    taskRoutes(app, db);
    cloudAssetRoutes(app, { db, assets: d.assets, tasks, hub: d.hub, outbound: this.outbound, inputDir: (req) => d.ctx.folders(req).dirs.input, inputChanged: (req) => d.registry.invalidate(d.ctx.folders(req)), exportsDir: path.join(this.config.dataDir, 'exports') });
  }
}

/**
 * On the local runtime the cloud-only paths are absent (404), but a few sit
 * where a shared route's parameter would match (POST /api/assets/import
 * against /api/assets/{id}), which would answer 405: these answer 404 as
 * every other cloud-only path does, and stay out of the OpenAPI document.
 */
export function cloudOnlyPathsOnLocal(app: FastifyInstance): void {
  for (const p of ['/assets/import', '/assets/download', '/assets/export', '/assets/from-workflow'].flatMap((b) => [`/api${b}`, b])) {
    app.route({ method: 'POST', url: p, schema: { hide: true }, handler: (_req, reply) => reply.code(404).type('text/plain; charset=utf-8').send('404: Not Found') });
  }
}
