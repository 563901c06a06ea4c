import fs from 'node:fs';
import path from 'node:path';
import type { AssetService } from './service.ts';
import * as repo from './repo.ts';
import { fileHolds } from './content.ts';

export type SeedRoot = 'models' | 'input' | 'output';
export const SEED_ROOTS: readonly SeedRoot[] = ['models', 'input', 'output'];

export interface SeedStatus {
  state: 'IDLE' | 'RUNNING' | 'CANCELLING';
  progress: { scanned: number; total: number; created: number; skipped: number } | null;
  errors: string[];
}

const MAX_ERRORS = 100;

/**
 * Registers the files already in the folders (models, input, output) that
 * have no asset yet, in the background, one at a time, cancellable between
 * files. Hidden files and anything reached through a symlink that leaves
 * its folder are skipped. One scan per process at a time.
 */
export class AssetSeeder {
  private status: SeedStatus = { state: 'IDLE', progress: null, errors: [] };
  private cancelled = false;
  private running: Promise<void> | null = null;

  constructor(private readonly assets: AssetService) {}

  getStatus(): SeedStatus {
    return { ...this.status, progress: this.status.progress && { ...this.status.progress }, errors: [...this.status.errors] };
  }

  isRunning(): boolean {
    return this.running !== null;
  }

  /** False when a scan is already running. */
  start(roots: readonly SeedRoot[]): boolean {
    if (this.running) return false;
    this.cancelled = false;
    this.status = { state: 'RUNNING', progress: { scanned: 0, total: 0, created: 0, skipped: 0 }, errors: [] };
    this.running = this.run(roots).finally(() => {
      this.status.state = 'IDLE';
      this.running = null;
    });
    return true;
  }

  async wait(): Promise<void> {
    await this.running;
  }

  cancel(): boolean {
    if (!this.running) return false;
    this.cancelled = true;
    this.status.state = 'CANCELLING';
    return true;
  }

  private error(msg: string): void {
    if (this.status.errors.length < MAX_ERRORS) this.status.errors.push(msg);
  }

  private async run(roots: readonly SeedRoot[]): Promise<void> {
    const files: Array<{ root: SeedRoot; rel: string }> = [];
    for (const root of roots) {
      for (const rel of await listFiles(this.assets.dirs[root], () => this.cancelled)) files.push({ root, rel });
    }
    const progress = this.status.progress!;
    progress.total = files.length;
    for (const f of files) {
      if (this.cancelled) return;
      progress.scanned++;
      try {
        const logical = `${f.root}/${f.rel}`;
        const known = await repo.getByFilePath(this.assets.db, this.assets.d, logical);
        if (known && !known.missing && (await fileHolds(this.assets.dirs, logical, known.size))) {
          progress.skipped++;
          continue;
        }
        const slash = f.rel.lastIndexOf('/');
        const subfolder = slash < 0 ? '' : f.rel.slice(0, slash);
        const filename = f.rel.slice(slash + 1);
        // Models are tagged with their folder (checkpoints, loras, …) as the reference does.
        const tags = f.root === 'models' && subfolder ? [subfolder.split('/')[0]!] : [];
        const r = await this.assets.registerFile({ type: f.root, subfolder, filename, owner: '', tags });
        if (r?.created) progress.created++;
        else progress.skipped++;
      } catch (err) {
        this.error(`${f.root}/${f.rel}: ${(err as Error).message}`);
      }
    }
  }
}

/** Relative paths of the regular files below `base`, without following symlinks or entering hidden folders. */
async function listFiles(base: string, stop: () => boolean): Promise<string[]> {
  const out: string[] = [];
  const stack: string[] = [''];
  while (stack.length > 0 && !stop()) {
    const rel = stack.pop()!;
    const entries = await fs.promises.readdir(path.join(base, rel), { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) stack.push(child);
      else if (e.isFile()) out.push(child);
      if (out.length >= 1_000_000) return out;
    }
  }
  return out.sort();
}

/** Marks assets whose file is gone (or no longer holds their bytes) as missing; returns how many were marked. */
export async function pruneMissing(assets: AssetService): Promise<number> {
  const rows = await repo.allFilePaths(assets.db);
  const gone: string[] = [];
  for (const r of rows) {
    if (r.missing) continue;
    if (!(await fileHolds(assets.dirs, r.file_path, r.size))) gone.push(r.id);
  }
  await repo.setMissing(assets.db, gone, true, Date.now());
  return gone.length;
}
