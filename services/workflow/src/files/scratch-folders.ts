import fs from 'node:fs';
import path from 'node:path';

/**
 * Private folders for the files a tool reads and writes (frames for
 * img2webp, a picture for cwebp), named `<prefix><pid>-<random>` and removed
 * after the run. If the execution thread is terminated during a run (the
 * tool is killed then), or the process dies, the folder stays; the next
 * encoder's first run removes it (its process is gone, or it is a day old:
 * no run takes that long).
 */
const LEFT_AFTER_MS = 24 * 3600_000;

/** Removes `prefix` folders in `dir` that no run will remove: their process is gone, or they are a day old (a terminated execution thread's, in a live process). */
export async function sweepLeftFolders(dir: string, prefix: string, now = Date.now()): Promise<void> {
  const names = await fs.promises.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(\d+)-/.exec(name.slice(prefix.length));
    if (!m) continue;
    const folder = path.join(dir, name);
    let gone = false;
    try {
      process.kill(Number(m[1]), 0);
    } catch (err) {
      gone = (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
    const old = !gone && now - ((await fs.promises.stat(folder).catch(() => null))?.mtimeMs ?? now) > LEFT_AFTER_MS;
    if (gone || old) await fs.promises.rm(folder, { recursive: true, force: true }).catch(() => {});
  }
}

/** A new private folder under `dir` (left ones swept first, once a `sweep` holder); null when none can be made. */
export async function newScratchFolder(dir: string, prefix: string, sweep: { swept?: Promise<void> }): Promise<string | null> {
  try {
    sweep.swept ??= sweepLeftFolders(dir, prefix);
    await sweep.swept;
    return await fs.promises.mkdtemp(path.join(dir, `${prefix}${process.pid}-`));
  } catch {
    return null;
  }
}

/** Writes a binary PPM (P6, maxval 255) of RGB pixels to a new file (never over an existing one). */
export async function writePpm(file: string, rgb: Buffer, width: number, height: number): Promise<void> {
  const fh = await fs.promises.open(file, 'wx', 0o600);
  try {
    await fh.writev([Buffer.from(`P6\n${width} ${height}\n255\n`, 'latin1'), rgb]);
  } finally {
    await fh.close();
  }
}
