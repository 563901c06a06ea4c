import type { ServiceConfig } from '@svc/kernel';
import { DEFAULT_LOGIN_THROTTLE, type LoginThrottleSettings } from './auth/throttle.ts';

/** The inventory service's settings: the kernel's plus what its own flags/env select. */
export interface InventoryConfig extends ServiceConfig {
  /** Superuser API token ensured at start (`--admin-token` / INVENTORY_ADMIN_TOKEN). */
  adminToken?: string;
  /** Limits on unauthenticated credential checks (token provisioning, UI login). */
  loginThrottle: LoginThrottleSettings;
}

function count(v: unknown, dflt: number, name: string): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 1e9) throw new Error(`invalid ${name}: ${String(v)} (expected a whole number ≥ 0)`);
  return n;
}

export function inventoryConfig(cfg: ServiceConfig, env: NodeJS.ProcessEnv = process.env): InventoryConfig {
  const flag = cfg.flags.adminToken;
  const adminToken = typeof flag === 'string' ? flag : env.INVENTORY_ADMIN_TOKEN || undefined;
  const pick = (f: string, e: string) => (typeof cfg.flags[f] === 'string' ? cfg.flags[f] : env[e]);
  const loginThrottle: LoginThrottleSettings = {
    perAddress: count(pick('loginRatePerAddress', 'INVENTORY_LOGIN_RATE_PER_ADDRESS'), DEFAULT_LOGIN_THROTTLE.perAddress, 'INVENTORY_LOGIN_RATE_PER_ADDRESS'),
    perUsername: count(pick('loginRatePerUsername', 'INVENTORY_LOGIN_RATE_PER_USERNAME'), DEFAULT_LOGIN_THROTTLE.perUsername, 'INVENTORY_LOGIN_RATE_PER_USERNAME'),
    windowMs: Math.max(1, count(pick('loginRateWindow', 'INVENTORY_LOGIN_RATE_WINDOW'), DEFAULT_LOGIN_THROTTLE.windowMs / 1000, 'INVENTORY_LOGIN_RATE_WINDOW (seconds)')) * 1000,
  };
  return { ...cfg, adminToken, loginThrottle };
}
