import path from 'node:path';
import type { ServiceConfig } from '@svc/kernel';
import { parseCachePolicy, type CachePolicy } from './engine/cache.ts';

export interface WorkflowConfig extends ServiceConfig {
  runtime: 'local' | 'cloud';
  dirs: { input: string; output: string; temp: string; user: string; models: string; customNodes: string };
  /** `--api-key` / WORKFLOW_API_KEY: required as a Bearer token or ?token= on every route and the WebSocket. */
  apiKey?: string;
  /** `--enable-cors-header [origin]`: answers CORS and turns the Origin guard off. */
  corsOrigin?: string;
  multiUser: boolean;
  maxHistory: number;
  cache: CachePolicy;
  enableTestNodes: boolean;
  maxUploadSize: number;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function positiveInt(v: string | undefined, name: string, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${v}`);
  return n;
}

/** Workflow flags on top of the kernel's: the reference's names where it has them. */
export function workflowConfig(base: ServiceConfig, env = process.env): WorkflowConfig {
  const f = base.flags;
  const runtime = str(f.runtime) ?? env.WORKFLOW_RUNTIME ?? 'local';
  if (runtime !== 'local' && runtime !== 'cloud') throw new Error(`--runtime must be local or cloud, got ${runtime}`);
  const d = base.dataDir;
  const cacheFlag = f.cacheNone === true ? 'none' : str(f.cacheLru) !== undefined ? `lru:${f.cacheLru}` : (str(f.cache) ?? env.WORKFLOW_CACHE);
  const cors = f.enableCorsHeader;
  return {
    ...base,
    runtime,
    dirs: {
      input: path.resolve(str(f.inputDirectory) ?? path.join(d, 'input')),
      output: path.resolve(str(f.outputDirectory) ?? path.join(d, 'output')),
      temp: path.resolve(str(f.tempDirectory) ?? path.join(d, 'temp')),
      user: path.resolve(str(f.userDirectory) ?? path.join(d, 'user')),
      models: path.join(d, 'models'),
      customNodes: path.join(d, 'custom_nodes'),
    },
    apiKey: str(f.apiKey) ?? env.WORKFLOW_API_KEY ?? undefined,
    corsOrigin: cors === true ? '*' : str(cors),
    multiUser: f.multiUser === true,
    maxHistory: positiveInt(str(f.maxHistory) ?? env.WORKFLOW_MAX_HISTORY, 'max-history', 10_000),
    cache: { ...parseCachePolicy(cacheFlag), noSubgraphCaching: f.disableSubgraphCaching === true },
    enableTestNodes: f.enableTestNodes === true || env.WORKFLOW_TEST_NODES === '1',
    maxUploadSize: positiveInt(str(f.maxUploadSize) ?? env.WORKFLOW_MAX_UPLOAD_MB, 'max-upload-size', 100) * 1024 * 1024,
  };
}
