import type { ServiceConfig } from '@svc/kernel';

/** The inventory service's settings: the kernel's plus what its own flags/env select. */
export interface InventoryConfig extends ServiceConfig {
  /** Superuser API token ensured at start (`--admin-token` / INVENTORY_ADMIN_TOKEN). */
  adminToken?: string;
}

export function inventoryConfig(cfg: ServiceConfig, env: NodeJS.ProcessEnv = process.env): InventoryConfig {
  const flag = cfg.flags.adminToken;
  const adminToken = typeof flag === 'string' ? flag : env.INVENTORY_ADMIN_TOKEN || undefined;
  return { ...cfg, adminToken };
}
