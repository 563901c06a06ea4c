import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { insideReal } from '../files/paths.ts';

/**
 * What node packs under `custom_nodes/` give the web frontend, found the way
 * the reference finds it: `web/` (or `js/`) scripts loaded as extensions,
 * `locales/<lang>/*.json` translations, example workflows and subgraph
 * blueprints.
 */

/** Folders a pack keeps example workflows in (the reference's list, in its order). */
export const EXAMPLE_FOLDERS = ['example_workflows', 'example', 'examples', 'workflow', 'workflows'];
const LOCALE_EXTRA = ['nodeDefs', 'commands', 'settings'];
const MAX_FILES = 10_000;
const MAX_JSON_BYTES = 16 * 1024 * 1024;

function dirs(parent: string): string[] {
  try {
    return fs
      .readdirSync(parent, { withFileTypes: true })
      .filter((e) => (e.isDirectory() || (e.isSymbolicLink() && fs.statSync(path.join(parent, e.name), { throwIfNoEntry: false })?.isDirectory())) && !e.name.startsWith('.'))
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

function files(dir: string, ext: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith(ext))
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

/** Every `.js` below `dir`, relative, links followed only while they stay inside `root`. */
function scripts(root: string, dir: string): string[] {
  const out: string[] = [];
  const go = (d: string, rel: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (out.length >= MAX_FILES) return;
      const full = path.join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isSymbolicLink() && !insideReal(root, full)) continue;
      const st = e.isSymbolicLink() ? fs.statSync(full, { throwIfNoEntry: false }) : e;
      if (st?.isDirectory()) {
        if (depth < 16) go(full, r, depth + 1);
      } else if (st?.isFile() && e.name.endsWith('.js')) out.push(r);
    }
  };
  go(dir, '', 0);
  return out;
}

/** A JSON file below `root` (never one a link leads out of `root` to). */
function readJson(root: string, file: string): unknown {
  if (!insideReal(root, file)) return undefined;
  try {
    const st = fs.statSync(file);
    if (!st.isFile() || st.size > MAX_JSON_BYTES) return undefined;
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** utils.json_util.merge_json_recursive: objects merge key by key, lists concatenate, anything else is replaced. */
function merge(base: Record<string, unknown>, update: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(update)) {
    const cur = Object.hasOwn(out, k) ? out[k] : undefined;
    let next: unknown = v;
    if (isObject(cur) && isObject(v)) next = merge(cur, v);
    else if (Array.isArray(cur) && Array.isArray(v)) next = [...cur, ...v];
    Object.defineProperty(out, k, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

export class FrontendAssets {
  constructor(
    readonly customNodesDir: string,
    readonly frontEndRoot?: string,
  ) {}

  /** The folder of a pack whose scripts the frontend loads: `web/`, else `js/`. */
  webDir(pack: string): string | undefined {
    if (!dirs(this.customNodesDir).includes(pack)) return undefined;
    for (const d of ['web', 'js']) {
      const p = path.join(this.customNodesDir, pack, d);
      if (fs.statSync(p, { throwIfNoEntry: false })?.isDirectory()) return p;
    }
    return undefined;
  }

  /** GET /extensions: the frontend build's own extensions, then every pack's scripts under /extensions/<pack>/. */
  extensions(): string[] {
    const out: string[] = [];
    if (this.frontEndRoot) {
      const ext = path.join(this.frontEndRoot, 'extensions');
      for (const s of scripts(this.frontEndRoot, ext)) out.push(`/extensions/${s}`);
    }
    for (const pack of dirs(this.customNodesDir)) {
      const web = this.webDir(pack);
      if (!web) continue;
      for (const s of scripts(path.join(this.customNodesDir, pack), web)) out.push(`/extensions/${encodeURIComponent(pack)}/${s}`);
    }
    return out;
  }

  /** GET /i18n: `{lang: {...main.json, nodeDefs, commands, settings}}` merged over every pack. */
  i18n(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const pack of dirs(this.customNodesDir)) {
      const locales = path.join(this.customNodesDir, pack, 'locales');
      for (const lang of dirs(locales)) {
        let t: Record<string, unknown> = {};
        const main = readJson(this.customNodesDir, path.join(locales, lang, 'main.json'));
        if (isObject(main)) t = { ...main };
        for (const key of LOCALE_EXTRA) {
          const v = readJson(this.customNodesDir, path.join(locales, lang, `${key}.json`));
          if (isObject(v) && Object.keys(v).length > 0) Object.defineProperty(t, key, { value: v, enumerable: true, writable: true, configurable: true });
        }
        const cur = Object.hasOwn(out, lang) && isObject(out[lang]) ? (out[lang] as Record<string, unknown>) : {};
        Object.defineProperty(out, lang, { value: Object.keys(t).length > 0 ? merge(cur, t) : cur, enumerable: true, writable: true, configurable: true });
      }
    }
    return out;
  }

  /** GET /workflow_templates: `{pack: [template names]}` for packs with example workflows. */
  workflowTemplates(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const pack of dirs(this.customNodesDir)) {
      for (const folder of EXAMPLE_FOLDERS) {
        for (const f of files(path.join(this.customNodesDir, pack, folder), '.json')) {
          (out[pack] ??= []).push(f.slice(0, -'.json'.length));
        }
      }
    }
    return out;
  }

  /** The folder a template file of a pack is served from (the first example folder holding it). */
  templateFile(pack: string, rel: string): { root: string; rel: string } | undefined {
    if (!dirs(this.customNodesDir).includes(pack)) return undefined;
    for (const folder of EXAMPLE_FOLDERS) {
      const root = path.join(this.customNodesDir, pack, folder);
      try {
        if (fs.statSync(path.join(root, rel), { throwIfNoEntry: false })?.isFile()) return { root, rel };
      } catch {
        return undefined; // a name the file system refuses (NUL, too long) names no template
      }
    }
    return undefined;
  }

  private subgraphEntries(): Map<string, { source: string; name: string; info: { node_pack: string }; file: string }> {
    const out = new Map<string, { source: string; name: string; info: { node_pack: string }; file: string }>();
    for (const pack of dirs(this.customNodesDir)) {
      const dir = path.join(this.customNodesDir, pack, 'subgraphs');
      for (const f of files(dir, '.json')) {
        const file = path.join(dir, f);
        if (!insideReal(this.customNodesDir, file)) continue;
        // Stable across restarts: the hash of the source and the file's path, as the reference.
        const id = createHash('sha256').update(`custom_node${file.split(path.sep).join('/')}`).digest('hex');
        out.set(id, { source: 'custom_node', name: f.slice(0, -'.json'.length), info: { node_pack: `custom_nodes.${pack}` }, file });
      }
    }
    return out;
  }

  /** GET /global_subgraphs: `{id: {source, name, info}}` without the data. */
  subgraphs(): Record<string, { source: string; name: string; info: { node_pack: string } }> {
    const out: Record<string, { source: string; name: string; info: { node_pack: string } }> = {};
    for (const [id, e] of this.subgraphEntries()) out[id] = { source: e.source, name: e.name, info: e.info };
    return out;
  }

  /** GET /global_subgraphs/{id}: the entry with its file's text as `data`. */
  subgraph(id: string): { source: string; name: string; info: { node_pack: string }; data: string } | undefined {
    const e = this.subgraphEntries().get(id);
    if (!e) return undefined;
    try {
      const st = fs.statSync(e.file);
      if (st.size > MAX_JSON_BYTES) return undefined;
      return { source: e.source, name: e.name, info: e.info, data: fs.readFileSync(e.file, 'utf8') };
    } catch {
      return undefined;
    }
  }
}
