import fs from 'node:fs';
import path from 'node:path';
import { writeAtomic } from './users.ts';

export const SETTINGS_FILE = 'comfy.settings.json';

/**
 * A user's settings in `user/<id>/comfy.settings.json`, as the reference
 * keeps them. Writes of one file are serialised in this process (read,
 * merge and write of two concurrent POSTs never lose each other's keys) and
 * land through a rename, so a crash never leaves half a file.
 */
export class SettingsStore {
  private readonly chains = new Map<string, Promise<unknown>>();

  read(userRoot: string): Record<string, unknown> {
    let text: string;
    try {
      text = fs.readFileSync(path.join(userRoot, SETTINGS_FILE), 'utf8');
    } catch {
      return {};
    }
    try {
      const v = JSON.parse(text);
      // A corrupted or non-object file reads as empty, as the reference does.
      return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
    } catch {
      return {};
    }
  }

  /** Applies `change` to the current settings and writes the result; calls for one file run one at a time. */
  update(userRoot: string, change: (current: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
    const file = path.join(userRoot, SETTINGS_FILE);
    const prev = this.chains.get(file) ?? Promise.resolve();
    const next = prev.then(() => {
      const settings = change(this.read(userRoot));
      fs.mkdirSync(userRoot, { recursive: true });
      writeAtomic(file, JSON.stringify(settings, null, 4));
    });
    const tail = next.catch(() => undefined);
    this.chains.set(file, tail);
    void tail.then(() => {
      if (this.chains.get(file) === tail) this.chains.delete(file);
    });
    return next;
  }
}
