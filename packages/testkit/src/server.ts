import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from '@svc/kernel';
import { dropPgSchema } from '@svc/storage';
import { TEST_DATABASE_URL } from './postgres.ts';

export type StorageKind = 'sqlite' | 'postgres';

export interface TestServer {
  url: string;
  app: FastifyInstance;
  cfg: ServiceConfig;
  close(): Promise<void>;
}

/** A config for one test server: a fresh temp dir, and on PostgreSQL a fresh schema. */
export function testConfig(name: string, storage: StorageKind, overrides: Partial<ServiceConfig> = {}): ServiceConfig {
  const id = randomBytes(5).toString('hex');
  return {
    port: 0,
    host: '127.0.0.1',
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), `${name}-test-`)),
    databaseUrl: storage === 'postgres' ? TEST_DATABASE_URL : undefined,
    pgSchema: `t_${name}_${id}`,
    logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
    runWorkers: true,
    flags: {},
    ...overrides,
  };
}

/** Removes what a test config created (temp dir, PostgreSQL schemas). */
export async function cleanupConfig(cfg: ServiceConfig): Promise<void> {
  fs.rmSync(cfg.dataDir, { recursive: true, force: true });
  if (cfg.databaseUrl) {
    await dropPgSchema(cfg.databaseUrl, [cfg.pgSchema, `${cfg.pgSchema}_worker`]);
  }
}

/** Builds the app with a test config and listens on a free loopback port. */
export async function startTestServer(
  name: string,
  storage: StorageKind,
  build: (cfg: ServiceConfig) => Promise<FastifyInstance>,
  overrides: Partial<ServiceConfig> = {},
): Promise<TestServer> {
  const cfg = testConfig(name, storage, overrides);
  const app = await build(cfg);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: address,
    app,
    cfg,
    async close() {
      await app.close();
      await cleanupConfig(cfg);
    },
  };
}
