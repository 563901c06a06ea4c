import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';
import type { NodeDefinition } from './api.ts';
import { materialisingInputs } from './pending-images.ts';

export interface PackReport {
  pack: string;
  nodes: string[];
  error?: string;
}

const ENTRY = ['index.ts', 'index.mts', 'index.js', 'index.mjs'];

function entryOf(dir: string, name: string): string | undefined {
  const p = path.join(dir, name);
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return undefined;
  if (st.isDirectory()) {
    for (const e of ENTRY) if (fs.existsSync(path.join(p, e))) return path.join(p, e);
    return undefined;
  }
  return /\.(m?js|m?ts)$/.test(name) ? p : undefined;
}

/**
 * Loads node packs from `<data-dir>/custom_nodes/*` (a folder with an index
 * module, or a single module). A pack exports `nodes: NodeDefinition[]` (or a
 * default export of them). A pack that fails to load is reported, never fatal.
 */
/**
 * Imports a pack module. Under plain node (the service runs from its bundle)
 * a pack that is TypeScript, or that imports TypeScript (the node API's
 * `api.ts`, as the README's example does), is compiled with esbuild into
 * `.build/` beside it first; the API's classes are shared across copies
 * (api.ts), so what the compiled pack builds is what the engine expects.
 */
async function importPack(entry: string): Promise<Record<string, unknown>> {
  try {
    return await import(pathToFileURL(entry).href);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
    const { build } = await import('esbuild');
    const out = path.join(path.dirname(entry), '.build', `${path.basename(entry).replace(/\.(m?ts|m?js)$/, '')}.mjs`);
    const built = await build({ entryPoints: [entry], bundle: true, packages: 'external', platform: 'node', format: 'esm', outfile: out, logLevel: 'silent', write: false });
    // Every execution thread loads the packs too: each writes a file of its own and renames it into place, so none imports a half-written one.
    fs.mkdirSync(path.dirname(out), { recursive: true });
    const tmp = `${out}.${process.pid}.${threadId}.tmp`;
    fs.writeFileSync(tmp, built.outputFiles[0]!.contents);
    fs.renameSync(tmp, out);
    return import(pathToFileURL(out).href);
  }
}

export async function loadPacks(dir: string, add: (def: NodeDefinition, pack: string) => void): Promise<PackReport[]> {
  if (!fs.existsSync(dir)) return [];
  const reports: PackReport[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (name.startsWith('.') || name.endsWith('.disabled') || name === '__pycache__') continue;
    const entry = entryOf(dir, name);
    if (!entry) continue;
    const pack = name.replace(/\.(m?js|m?ts)$/, '');
    const report: PackReport = { pack, nodes: [] };
    try {
      const mod = await importPack(entry);
      const defs: unknown = mod.nodes ?? mod.default;
      if (!Array.isArray(defs)) throw new Error('the pack exports no `nodes` array');
      for (const def of defs as NodeDefinition[]) {
        // A pack's nodes read IMAGE pixels as they are documented: always made.
        add(materialisingInputs({ ...def, pythonModule: def.pythonModule ?? `custom_nodes.${pack}` }), pack);
        report.nodes.push(def.name);
      }
    } catch (err) {
      report.error = err instanceof Error ? err.message : String(err);
    }
    reports.push(report);
  }
  return reports;
}
