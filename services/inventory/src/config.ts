import type { ServiceConfig } from '@svc/kernel';
import { DEFAULT_LOGIN_THROTTLE, type LoginThrottleSettings } from './auth/throttle.ts';

/** The inventory service's settings: the kernel's plus what its own flags/env select. */
export interface InventoryConfig extends ServiceConfig {
  /** Superuser API token ensured at start (`--admin-token` / INVENTORY_ADMIN_TOKEN). */
  adminToken?: string;
  /** Limits on unauthenticated credential checks (token provisioning, UI login). */
  loginThrottle: LoginThrottleSettings;
  /** NetBox's ENFORCE_GLOBAL_UNIQUE (`--enforce-global-unique false` / INVENTORY_ENFORCE_GLOBAL_UNIQUE=false to allow duplicates). */
  enforceGlobalUnique: boolean;
  /** Most objects one bulk request may create, update or delete (`--max-bulk` / INVENTORY_MAX_BULK; 1000). */
  maxBulk: number;
  /**
   * NetBox's LOGIN_REQUIRED (default true; `--login-required false` / INVENTORY_LOGIN_REQUIRED=false): when false, callers
   * without credentials may read the API roots and `/api/status/` (NetBox's views that need no model permission), as
   * pynetbox before 7.3.4 expects (its version check sends no token).
   */
  loginRequired: boolean;
  /**
   * The directory local data sources may read (`--data-source-root` / INVENTORY_DATA_SOURCE_ROOT): a source's path must
   * lie inside it. Unset: syncing a local data source is refused.
   */
  dataSourceRoot?: string;
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
  const unique = pick('enforceGlobalUnique', 'INVENTORY_ENFORCE_GLOBAL_UNIQUE');
  const enforceGlobalUnique = unique === undefined || unique === '' ? true : !['false', '0', 'no', 'off'].includes(String(unique).toLowerCase());
  const maxBulk = Math.max(1, count(pick('maxBulk', 'INVENTORY_MAX_BULK'), 1000, 'INVENTORY_MAX_BULK'));
  const login = pick('loginRequired', 'INVENTORY_LOGIN_REQUIRED');
  const loginRequired = login === undefined || login === '' ? true : !['false', '0', 'no', 'off'].includes(String(login).toLowerCase());
  const dataSourceRoot = pick('dataSourceRoot', 'INVENTORY_DATA_SOURCE_ROOT') || undefined;
  return { ...cfg, adminToken, loginThrottle, enforceGlobalUnique, maxBulk, loginRequired, dataSourceRoot };
}
