import type { Kysely } from 'kysely';

/**
 * If-None-Match (RFC 9110 §13.1.2): "*" or a comma-separated list of entity
 * tags, compared weakly (W/ ignored on both sides). An etagc may itself hold
 * a comma, so the list is scanned tag by tag; a malformed list matches
 * nothing (the full response is always a safe answer).
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const h = header.trim();
  if (h === '*') return true;
  const opaque = (t: string) => t.replace(/^W\//, '');
  const mine = opaque(etag);
  let i = 0;
  const n = h.length;
  const ows = () => {
    while (i < n && (h[i] === ' ' || h[i] === '\t')) i++;
  };
  let hit = false;
  for (;;) {
    ows();
    if (i < n && h[i] === ',') {
      i++;
      continue;
    }
    if (i >= n) return hit;
    let start = i;
    if (h.startsWith('W/', i)) i += 2;
    if (h[i] !== '"') return false;
    const close = h.indexOf('"', i + 1);
    if (close < 0) return false;
    const tag = h.slice(start, close + 1);
    for (let k = i + 1; k < close; k++) {
      const c = h.charCodeAt(k);
      if (c < 0x21 || c === 0x7f) return false;
    }
    if (opaque(tag) === mine) hit = true;
    i = close + 1;
    ows();
    if (i < n && h[i] !== ',') return false;
    start = i;
  }
}

/** Node packs the server has loaded from custom_nodes, by pack name, with their node classes, from each class's module. */
export function availablePacks(classes: Iterable<{ name: string; pythonModule?: string }>): Map<string, string[]> {
  const packs = new Map<string, string[]>();
  for (const { name, pythonModule } of classes) {
    const mod = pythonModule ?? '';
    const m = /^custom_nodes\.(.+)$/.exec(mod);
    if (!m) continue;
    const list = packs.get(m[1]!) ?? [];
    list.push(name);
    packs.set(m[1]!, list);
  }
  return packs;
}

/** A pack named by id, or by a repository URL whose last path segment (without .git) is its name. */
export function resolvePack(packs: Map<string, string[]>, id: string): string | undefined {
  if (packs.has(id)) return id;
  let url: URL;
  try {
    url = new URL(id);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  const last = url.pathname.replace(/\/+$/, '').split('/').pop()?.replace(/\.git$/, '') ?? '';
  return packs.has(last) ? last : undefined;
}

export interface InstalledPack {
  id: string;
  version: string;
  installedAt: number;
}

/** Installs (or re-installs at another version) a pack for a workspace. */
export async function installPack(db: Kysely<any>, owner: string, id: string, version: string, now: number): Promise<InstalledPack> {
  await db
    .insertInto('cloud_node_packs')
    .values({ owner, id, version, installed_at: now })
    .onConflict((oc) => oc.columns(['owner', 'id']).doUpdateSet({ version, installed_at: now }))
    .execute();
  return { id, version, installedAt: now };
}

export async function uninstallPack(db: Kysely<any>, owner: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('cloud_node_packs').where('owner', '=', owner).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function installedPacks(db: Kysely<any>, owner: string): Promise<InstalledPack[]> {
  const rows = await db.selectFrom('cloud_node_packs').selectAll().where('owner', '=', owner).orderBy('id').execute();
  return rows.map((r) => ({ id: r.id as string, version: r.version as string, installedAt: Number(r.installed_at) }));
}
