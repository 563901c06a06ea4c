import fs from 'node:fs';
import path from 'node:path';
import { insideReal, safeRelative, UnsafePathError } from '../files/paths.ts';

/** The reference's weight file extensions (folder_paths.supported_pt_extensions). */
const PT_EXTENSIONS = ['.ckpt', '.pt', '.pt2', '.bin', '.pth', '.safetensors', '.pkl', '.sft'];

/**
 * The reference's model folders and the `models/` subfolders each reads
 * (folder_paths.folder_names_and_paths), in its order. `null` extensions
 * accept every file.
 */
const KNOWN: Array<[name: string, dirs: string[], exts: string[] | null]> = [
  ['checkpoints', ['checkpoints'], PT_EXTENSIONS],
  ['configs', ['configs'], ['.yaml']],
  ['loras', ['loras'], PT_EXTENSIONS],
  ['vae', ['vae'], PT_EXTENSIONS],
  ['text_encoders', ['text_encoders', 'clip'], PT_EXTENSIONS],
  ['diffusion_models', ['unet', 'diffusion_models'], PT_EXTENSIONS],
  ['clip_vision', ['clip_vision'], PT_EXTENSIONS],
  ['style_models', ['style_models'], PT_EXTENSIONS],
  ['embeddings', ['embeddings'], PT_EXTENSIONS],
  ['diffusers', ['diffusers'], ['folder']],
  ['vae_approx', ['vae_approx'], PT_EXTENSIONS],
  ['controlnet', ['controlnet', 't2i_adapter'], PT_EXTENSIONS],
  ['gligen', ['gligen'], PT_EXTENSIONS],
  ['upscale_models', ['upscale_models'], PT_EXTENSIONS],
  ['custom_nodes', [], null],
  ['hypernetworks', ['hypernetworks'], PT_EXTENSIONS],
  ['photomaker', ['photomaker'], PT_EXTENSIONS],
  ['classifiers', ['classifiers'], ['']],
  ['model_patches', ['model_patches'], PT_EXTENSIONS],
  ['audio_encoders', ['audio_encoders'], PT_EXTENSIONS],
];

const LEGACY: Record<string, string> = { unet: 'diffusion_models', clip: 'text_encoders' };

/** /experiment/models leaves these out, as the reference. */
const NOT_MODELS = new Set(['configs', 'custom_nodes']);

const IMAGE_EXT = new Set(['.png', '.jpg', '.jpeg', '.webp', '.gif', '.bmp', '.tif', '.tiff', '.avif']);

const MAX_FILES = 100_000;
const MAX_DEPTH = 32;

export interface ModelFile {
  name: string;
  pathIndex: number;
  modified: number;
  created: number;
  size: number;
}

interface Folder {
  paths: string[];
  exts: string[] | null;
}

/**
 * What `<data-dir>/models` holds, folder by folder: the reference's known
 * folders (with their extra paths such as clip → text_encoders) and any
 * other folder found there (every file counts, as folders registered by
 * custom nodes do).
 */
export class ModelFolders {
  constructor(
    readonly modelsDir: string,
    readonly customNodesDir: string,
  ) {}

  /** name → folder, in the reference's order, then unknown folders of models/ sorted. */
  folders(): Map<string, Folder> {
    const out = new Map<string, Folder>();
    const used = new Set<string>();
    for (const [name, dirs, exts] of KNOWN) {
      const paths = name === 'custom_nodes' ? [this.customNodesDir] : dirs.map((d) => path.join(this.modelsDir, d));
      for (const d of dirs) used.add(d);
      out.set(name, { paths, exts });
    }
    let extra: string[] = [];
    try {
      extra = fs
        .readdirSync(this.modelsDir, { withFileTypes: true })
        .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !used.has(e.name) && !out.has(e.name))
        .map((e) => e.name)
        .sort();
    } catch {
      /* no models folder yet */
    }
    for (const name of extra) out.set(name, { paths: [path.join(this.modelsDir, name)], exts: null });
    return out;
  }

  get(name: string): Folder | undefined {
    return typeof name === 'string' ? this.folders().get(name) : undefined;
  }

  /** Files of a folder with their metadata, every path in order (the reference's get_model_file_list). */
  fileList(name: string, opts: { hidden?: boolean } = {}): ModelFile[] {
    const folder = this.get(LEGACY[name] ?? name);
    if (!folder) return [];
    const out: ModelFile[] = [];
    folder.paths.forEach((root, pathIndex) => {
      for (const rel of walk(root, opts.hidden === true)) {
        if (!matchesExt(rel, folder.exts)) continue;
        const st = fs.statSync(path.join(root, rel), { throwIfNoEntry: false });
        if (!st) continue;
        out.push({ name: rel, pathIndex, modified: st.mtimeMs / 1000, created: st.ctimeMs / 1000, size: st.size });
      }
    });
    return out;
  }

  /** Names of a folder's files, sorted and unique across its paths (the reference's get_filename_list). */
  filenames(name: string): string[] {
    const folder = this.get(LEGACY[name] ?? name);
    if (!folder) return [];
    const names = new Set<string>();
    for (const root of folder.paths) for (const rel of walk(root, true)) if (matchesExt(rel, folder.exts)) names.add(rel);
    return [...names].sort();
  }

  /** The file a folder name and relative file name stand for, inside that folder only (get_full_path). */
  fullPath(name: string, filename: string): string | undefined {
    const folder = this.get(LEGACY[name] ?? name);
    if (!folder) return undefined;
    for (const root of folder.paths) {
      try {
        const file = safeRelative(root, filename);
        if (fs.statSync(file, { throwIfNoEntry: false })?.isFile()) return file;
      } catch (err) {
        if (!(err instanceof UnsafePathError)) throw err;
        return undefined;
      }
    }
    return undefined;
  }

  /** /experiment/models: `{name, folders}` for every model folder. */
  experimentFolders(): Array<{ name: string; folders: string[] }> {
    return [...this.folders()].filter(([name]) => !NOT_MODELS.has(name)).map(([name, f]) => ({ name, folders: f.paths }));
  }

  /**
   * The preview of a model: `<stem>.<image ext>` or `<stem>.preview.<image
   * ext>` next to it, or the first `ssmd_cover_images` entry of its
   * safetensors metadata. Undefined when there is none (or the name leaves
   * the folder).
   */
  async preview(name: string, pathIndex: number, filename: string): Promise<string | Buffer | undefined> {
    const folder = this.get(name);
    const root = folder?.paths[pathIndex];
    if (!root) return undefined;
    let file: string;
    try {
      file = safeRelative(root, filename);
    } catch (err) {
      if (err instanceof UnsafePathError) return undefined;
      throw err;
    }
    const dir = path.dirname(file);
    const stem = file.slice(0, file.length - path.extname(file).length);
    let entries: string[];
    try {
      entries = fs.readdirSync(dir);
    } catch {
      return undefined;
    }
    const base = path.basename(stem);
    for (const wanted of [base, `${base}.preview`]) {
      for (const e of entries.sort()) {
        const ext = path.extname(e).toLowerCase();
        if (IMAGE_EXT.has(ext) && e.slice(0, e.length - ext.length) === wanted) {
          const p = path.join(dir, e);
          if (insideReal(root, p) && fs.statSync(p).isFile()) return p;
        }
      }
    }
    const st = entries.find((e) => e === `${base}.safetensors`);
    if (st) {
      const meta = await readSafetensorsMetadata(path.join(dir, st), 8 * 1024 * 1024);
      const covers = meta?.ssmd_cover_images;
      if (typeof covers === 'string') {
        try {
          const list = JSON.parse(covers);
          if (Array.isArray(list) && typeof list[0] === 'string') return Buffer.from(list[0], 'base64');
        } catch {
          /* not a list of images */
        }
      }
    }
    return undefined;
  }
}

function matchesExt(rel: string, exts: string[] | null): boolean {
  if (exts === null) return true;
  return exts.includes(path.extname(rel).toLowerCase());
}

/** Relative paths of the files below `root` (links followed only while they stay inside it; `.git` and, unless asked, hidden names skipped). */
function walk(root: string, hidden: boolean): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const go = (dir: string, rel: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (out.length >= MAX_FILES) return;
      if (e.name === '.git' || (!hidden && e.name.startsWith('.'))) continue;
      const full = path.join(dir, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      let isDir = e.isDirectory();
      let isFile = e.isFile();
      if (e.isSymbolicLink()) {
        if (!insideReal(root, full)) continue;
        const st = fs.statSync(full, { throwIfNoEntry: false });
        isDir = st?.isDirectory() ?? false;
        isFile = st?.isFile() ?? false;
      }
      if (isFile) out.push(r);
      else if (isDir && depth < MAX_DEPTH) {
        const real = fs.realpathSync(full);
        if (seen.has(real)) continue;
        seen.add(real);
        go(full, r, depth + 1);
      }
    }
  };
  go(root, '', 0);
  return out;
}

/**
 * The `__metadata__` of a safetensors file: an 8-byte little-endian header
 * length, then that many bytes of JSON. Undefined when the file is not one,
 * its header is larger than `maxSize`, or it has no metadata.
 */
export async function readSafetensorsMetadata(file: string, maxSize = 1024 * 1024): Promise<Record<string, unknown> | undefined> {
  let fh: fs.promises.FileHandle | undefined;
  try {
    fh = await fs.promises.open(file, 'r');
    const head = Buffer.alloc(8);
    if ((await fh.read(head, 0, 8, 0)).bytesRead < 8) return undefined;
    const len = head.readBigUInt64LE(0);
    if (len === 0n || len > BigInt(maxSize)) return undefined;
    const buf = Buffer.alloc(Number(len));
    if ((await fh.read(buf, 0, buf.length, 8)).bytesRead < buf.length) return undefined;
    const text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
    const dt = JSON.parse(text);
    const meta = dt && typeof dt === 'object' && !Array.isArray(dt) ? dt.__metadata__ : undefined;
    return meta && typeof meta === 'object' && !Array.isArray(meta) ? meta : undefined;
  } catch {
    return undefined;
  } finally {
    await fh?.close();
  }
}
