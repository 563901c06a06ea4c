import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { safeChild, safeRelative } from '../files/paths.ts';

/** The request named a user that does not exist (the reference's KeyError). */
export class UnknownUserError extends Error {
  constructor(readonly user: string) {
    super(`Unknown user: ${user}`);
    this.name = 'UnknownUserError';
  }
}

export class UserInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserInputError';
  }
}

const DEFAULT_USER = 'default';

/** Writes a file through a temporary sibling and a rename, so a reader never sees half of it. */
export function writeAtomic(file: string, data: string | Buffer): void {
  const tmp = `${file}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`;
  fs.writeFileSync(tmp, data);
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Users of the local runtime, as the reference's UserManager: one user
 * "default" unless --multi-user, where `user/users.json` maps ids to names
 * and the Comfy-User header picks the id. Each user's files live in
 * `user/<id>/`.
 */
export class UserManager {
  readonly users: Record<string, string>;

  constructor(
    readonly userDir: string,
    readonly multiUser: boolean,
  ) {
    fs.mkdirSync(userDir, { recursive: true });
    this.users = multiUser ? this.readUsersFile() : { [DEFAULT_USER]: DEFAULT_USER };
  }

  private get usersFile(): string {
    return path.join(this.userDir, 'users.json');
  }

  private readUsersFile(): Record<string, string> {
    try {
      const v = JSON.parse(fs.readFileSync(this.usersFile, 'utf8'));
      if (v && typeof v === 'object' && !Array.isArray(v)) {
        return Object.fromEntries(Object.entries(v).filter(([, name]) => typeof name === 'string')) as Record<string, string>;
      }
    } catch {
      /* no file yet, or unreadable: no users */
    }
    return {};
  }

  /** The user a request acts as: the Comfy-User header with --multi-user, "default" otherwise. */
  userId(header: string | string[] | undefined): string {
    let user = DEFAULT_USER;
    if (this.multiUser && typeof header === 'string') user = header;
    // Another process on this data dir may have added the user since this one read users.json.
    if (!Object.hasOwn(this.users, user) && this.multiUser) this.reload();
    if (!Object.hasOwn(this.users, user)) throw new UnknownUserError(user);
    return user;
  }

  private reload(): void {
    for (const [id, name] of Object.entries(this.readUsersFile())) if (!Object.hasOwn(this.users, id)) this.users[id] = name;
  }

  /** `user/<id>`: the folder every path of this user is kept under. */
  userRoot(userId: string): string {
    return safeChild(this.userDir, userId);
  }

  /** A file or folder of a user; refuses anything that would leave `user/<id>`. */
  userPath(userId: string, rel: string): string {
    return safeRelative(this.userRoot(userId), rel);
  }

  /** POST /users: the id is the name made path-safe plus a UUID; the same name twice is refused. */
  addUser(username: unknown): string {
    if (typeof username !== 'string') throw new UserInputError('username not provided');
    if (this.multiUser) this.reload();
    if (Object.values(this.users).includes(username)) throw new UserInputError('Duplicate username.');
    const name = username.trim();
    if (!name) throw new UserInputError('username not provided');
    if (name.length > 256 || /[\u0000-\u001f\u007f]/.test(name) || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(name)) throw new UserInputError('Invalid username');
    const id = `${name.replace(/[^a-zA-Z0-9\-_]+/g, '-')}_${randomUUID()}`;
    this.users[id] = name;
    writeAtomic(this.usersFile, JSON.stringify(this.users));
    return id;
  }
}
