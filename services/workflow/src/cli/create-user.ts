import type { ServiceConfig } from '@svc/kernel';
import type { Storage } from '@svc/storage';
import { PasswordHasher, passwordProblem } from '../identity/passwords.ts';
import { emailProblem, IdentityStore, textProblem } from '../identity/store.ts';

/**
 * `create-user --email <e> --password <p> [--display-name <n>] --data-dir <dir>`
 * (DATABASE_URL for PostgreSQL): a user with a personal workspace; prints
 * the user id. Returns the process exit code.
 */
export async function createUserCommand(cfg: ServiceConfig, open: (cfg: ServiceConfig) => Promise<Storage>, out = process.stdout, err = process.stderr): Promise<number> {
  const f = cfg.flags;
  const email = f.email;
  const password = f.password;
  const name = typeof f.displayName === 'string' ? f.displayName : undefined;
  const problem = emailProblem(email) ?? passwordProblem(password) ?? (name !== undefined ? textProblem(name, 'display-name', 200) : null);
  if (problem) {
    err.write(`create-user: ${problem}\nusage: create-user --email <email> --password <password> [--display-name <name>] [--data-dir <dir>]\n`);
    return 2;
  }
  const storage = await open(cfg);
  try {
    const store = new IdentityStore(() => storage.db);
    const hash = await new PasswordHasher(1, 1).hash(password as string);
    const created = await store.createUser({ email: email as string, passwordHash: hash, displayName: name });
    if (!created) {
      err.write(`create-user: an account with the email ${email} already exists\n`);
      return 1;
    }
    out.write(`${created.user.id}\n`);
    return 0;
  } finally {
    await storage.close();
  }
}
