import { UnknownUserError, UserInputError, UserManager } from './users.ts';

const WORKSPACE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Settings and user data of the hosted runtime: one folder per workspace
 * (`user/<workspace id>/`). The authentication hook overwrites the
 * Comfy-User header with the caller's workspace id, so the shared routes,
 * which pick the user from that header, act on the caller's workspace and
 * nothing a client sends can name another one.
 */
export class WorkspaceUserManager extends UserManager {
  constructor(userDir: string) {
    super(userDir, false);
  }

  override userId(header: string | string[] | undefined): string {
    if (typeof header === 'string' && WORKSPACE_ID.test(header)) return header;
    throw new UnknownUserError(typeof header === 'string' ? header.slice(0, 100) : 'anonymous');
  }

  override addUser(): string {
    throw new UserInputError('Users are created by sign-up in the hosted runtime');
  }
}
