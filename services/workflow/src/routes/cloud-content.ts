import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { loadSecretKeys, SecretBox } from '../domain/cloud/secret-box.ts';
import { SecretStore } from '../domain/cloud/secrets.ts';
import { storable } from '../identity/store.ts';
import { secretRoutes } from './secrets.ts';

export interface CloudContentOptions {
  dataDir: string;
  /** `user/`: the workspaces' user data folders (workflow files to publish). */
  userDir?: string;
  flags: Record<string, unknown>;
}

export interface CloudContent {
  secrets: SecretStore;
  /** What a running node of workspace `owner` gets for the secret `name` (marks it used). */
  readSecret(owner: string, name: string): Promise<string | undefined>;
}

/** The hosted runtime's workspace content: secrets, saved workflows, the hub. */
export function installContent(app: FastifyInstance, db: () => Kysely<any>, opts: CloudContentOptions): CloudContent {
  const secrets = new SecretStore(db, new SecretBox(loadSecretKeys(opts.flags, opts.dataDir)));
  secretRoutes(app, secrets);
  return {
    secrets,
    readSecret: async (owner, name) => (storable(name, 100) ? secrets.reveal(owner, name) : undefined),
  };
}
