import { granted, type Action, type Grants } from './permissions.ts';

/** Who is calling, resolved from an API token. */
export interface Principal {
  userId: number;
  username: string;
  isSuperuser: boolean;
  /** The user may change objects (superusers always may). */
  canWrite: boolean;
  tokenId: number;
  /** The token itself allows writes. */
  writeEnabled: boolean;
  /** The user's object permissions (auth/permissions.ts); null or absent: none assigned, the earlier rules apply. */
  grants?: Grants;
}

export function mayWrite(p: Principal): boolean {
  return p.writeEnabled && (p.isSuperuser || p.canWrite);
}

/** Whether the principal's user holds `action` on `objectType` (the token's write ability is checked apart). */
export function may(p: Principal, objectType: string, action: Action): boolean {
  return granted(p.isSuperuser, p.canWrite, p.grants, objectType, action);
}
