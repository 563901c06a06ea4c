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
}

export function mayWrite(p: Principal): boolean {
  return p.writeEnabled && (p.isSuperuser || p.canWrite);
}
