import { MODELS } from '../../models/registry.ts';

/** Path prefixes of the inventory's pages: one per app of the registry (NetBox's URLs), global search and the change log (`/core`). */
export const INVENTORY_PREFIXES: readonly string[] = [...new Set([...MODELS.map((m) => `/${m.app}`), '/core']), '/search'];
