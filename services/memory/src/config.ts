import type { ServiceConfig } from '@svc/kernel';

/**
 * The memory service's configuration: the shared ServiceConfig plus the
 * service's own settings. Owner B adds embedding/LLM fields here (add only).
 */
export interface MemoryConfig extends ServiceConfig {
  /** Bearer keys accepted when API-key auth is on; undefined/empty means the Authorization header is ignored. */
  apiKeys?: string[];
  embedding: Record<string, unknown>;
  llm: Record<string, unknown>;
}

function list(v: unknown): string[] | undefined {
  if (typeof v !== 'string') return undefined;
  const keys = v.split(',').map((s) => s.trim()).filter(Boolean);
  return keys.length ? keys : undefined;
}

/** Reads the memory-specific settings from flags (`--api-keys a,b`) and env (`MEMORY_API_KEYS`). */
export function memoryConfig(cfg: ServiceConfig, env: NodeJS.ProcessEnv = process.env): MemoryConfig {
  const base = cfg as Partial<MemoryConfig> & ServiceConfig;
  return {
    ...cfg,
    apiKeys: base.apiKeys ?? list(cfg.flags.apiKeys) ?? list(env.MEMORY_API_KEYS),
    embedding: base.embedding ?? {},
    llm: base.llm ?? {},
  };
}
