import path from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { HubStore } from '../domain/cloud/hub.ts';
import { loadSecretKeys, SecretBox } from '../domain/cloud/secret-box.ts';
import { SecretStore } from '../domain/cloud/secrets.ts';
import { WorkflowStore } from '../domain/cloud/workflows.ts';
import type { Identity } from '../identity/index.ts';
import { storable } from '../identity/store.ts';
import { WorkspaceUserManager } from '../domain/workspace-users.ts';
import { hubRoutes } from './hub.ts';
import { secretRoutes } from './secrets.ts';
import { workflowRoutes } from './workflows.ts';

export interface CloudContentOptions {
  dataDir: string;
  /** `user/`: the workspaces' user data folders (workflow files to publish). */
  userDir?: string;
  flags: Record<string, unknown>;
}

export interface CloudContent {
  secrets: SecretStore;
  workflows: WorkflowStore;
  hub: HubStore;
  /** What a running node of workspace `owner` gets for the secret `name` (marks it used). */
  readSecret(owner: string, name: string): Promise<string | undefined>;
}

/**
 * What an execution process without the HTTP routes (a worker) gives the
 * prompt runner as `readSecret`: the same keys (`--secrets-key`, else the
 * data dir's generated one) and the same last_used_at bookkeeping.
 */
export function secretReader(db: () => Kysely<any>, opts: Pick<CloudContentOptions, 'dataDir' | 'flags'>): (owner: string, name: string) => Promise<string | undefined> {
  const secrets = new SecretStore(db, new SecretBox(loadSecretKeys(opts.flags, opts.dataDir)));
  return async (owner, name) => (storable(name, 100) ? secrets.reveal(owner, name) : undefined);
}

/** The hosted runtime's workspace content: secrets, saved workflows, the hub. */
export function installContent(app: FastifyInstance, db: () => Kysely<any>, opts: CloudContentOptions, identity: Identity): CloudContent {
  const secrets = new SecretStore(db, new SecretBox(loadSecretKeys(opts.flags, opts.dataDir)));
  const workflows = new WorkflowStore(db);
  const hub = new HubStore(db);
  const users = new WorkspaceUserManager(opts.userDir ?? path.join(opts.dataDir, 'user'));
  secretRoutes(app, secrets);
  const deps = { workflows, hub, users, baseUrl: (req: FastifyRequest) => identity.baseUrl(req) };
  workflowRoutes(app, deps);
  const moderation = opts.flags.hubModeration === true || opts.flags.hubModeration === 'true' || process.env.WORKFLOW_HUB_MODERATION === '1';
  hubRoutes(app, { ...deps, db, identity, assetDir: path.join(opts.dataDir, 'hub-assets'), moderation });
  return {
    secrets,
    workflows,
    hub,
    readSecret: async (owner, name) => (storable(name, 100) ? secrets.reveal(owner, name) : undefined),
  };
}
