import type { CryptoKey, JWK } from 'jose';

/** Loaded by the hosted runtime only. */
const jose = () => import('jose');
const importJWK = (jwk: JWK, alg: string) => jose().then((j) => j.importJWK(jwk, alg));
import type { Kysely } from 'kysely';
import { newId } from './secrets.ts';

export const JWT_ALG = 'RS256';

interface KeyRow {
  kid: string;
  publicJwk: JWK;
  privateJwk: JWK | null;
  createdAt: number;
  retireAt: number;
  expiresAt: number;
}

export interface SigningKeyOptions {
  /** How long a key signs new tokens before the next one takes over. */
  rotateMs: number;
  /** Lifetime of the longest token a key signs: a retired key stays published that much longer. */
  maxTokenMs: number;
  /** Seals private keys at rest; without it they are stored as plain JWKs. */
  box?: KeyBox;
}

/** AES-GCM sealing under a configured, rotatable key (the workspace secrets' SecretBox). */
export interface KeyBox {
  seal(plaintext: string, aad: string): { keyId: string; ciphertext: string };
  open(keyId: string, sealed: string, aad: string): string | null;
}

/** The stored private half: `{"key_id", "sealed"}` when sealed, else the JWK itself (keys stored before sealing). */
function unsealPrivate(box: KeyBox | undefined, kid: string, stored: string): JWK | null {
  const v = JSON.parse(stored) as JWK & { sealed?: string; key_id?: string };
  if (typeof v.sealed !== 'string') return v;
  const plain = box && typeof v.key_id === 'string' ? box.open(v.key_id, v.sealed, `signing-key:${kid}`) : null;
  return plain === null ? null : (JSON.parse(plain) as JWK);
}

function sealPrivate(box: KeyBox | undefined, kid: string, jwk: JWK): string {
  if (!box) return JSON.stringify(jwk);
  const s = box.seal(JSON.stringify(jwk), `signing-key:${kid}`);
  return JSON.stringify({ key_id: s.keyId, sealed: s.ciphertext });
}

/**
 * The RSA key pairs access tokens are signed with, in the database so every
 * API process signs and verifies with the same set. The newest key whose
 * signing period has not ended signs; a retired key stays in the JWKS until
 * the last token it signed has expired, then it is deleted. Rotation
 * happens lazily when a token is signed after the current key retired.
 */
export class SigningKeys {
  private keys = new Map<string, KeyRow & { verifyKey: Promise<CryptoKey> }>();
  private signer: { row: KeyRow; key: Promise<CryptoKey> } | undefined;
  private loadedAt = 0;
  private rotating: Promise<void> | undefined;
  private lastUnknownReload = 0;
  private unknownReload: Promise<void> | undefined;

  constructor(
    private readonly db: () => Kysely<any>,
    readonly opts: SigningKeyOptions,
  ) {}

  private async load(): Promise<void> {
    const now = Date.now();
    const rows = await this.db().selectFrom('id_signing_keys').selectAll().where('expires_at', '>', now).orderBy('created_at', 'desc').execute();
    const next = new Map<string, KeyRow & { verifyKey: Promise<CryptoKey> }>();
    for (const r of rows) {
      const old = this.keys.get(r.kid);
      // A private half this process cannot open (its sealing key was removed) still verifies; it never signs.
      const row: KeyRow = { kid: r.kid, publicJwk: JSON.parse(r.public_jwk), privateJwk: unsealPrivate(this.opts.box, r.kid, r.private_jwk), createdAt: Number(r.created_at), retireAt: Number(r.retire_at), expiresAt: Number(r.expires_at) };
      next.set(r.kid, { ...row, verifyKey: old?.verifyKey ?? (importJWK(row.publicJwk, JWT_ALG) as Promise<CryptoKey>) });
    }
    this.keys = next;
    const current = [...next.values()].find((k) => k.retireAt > now && k.privateJwk !== null);
    if (current && this.signer?.row.kid !== current.kid) this.signer = { row: current, key: importJWK(current.privateJwk!, JWT_ALG) as Promise<CryptoKey> };
    if (!current) this.signer = undefined;
    this.loadedAt = now;
  }

  private async rotate(): Promise<void> {
    await this.load();
    if (this.signer && this.signer.row.retireAt > Date.now()) return;
    const { generateKeyPair, exportJWK } = await jose();
    const { publicKey, privateKey } = await generateKeyPair(JWT_ALG, { extractable: true, modulusLength: 2048 });
    const kid = newId();
    const now = Date.now();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: JWT_ALG, use: 'sig' };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: JWT_ALG };
    const retireAt = now + this.opts.rotateMs;
    await this.db()
      .insertInto('id_signing_keys')
      .values({ kid, alg: JWT_ALG, public_jwk: JSON.stringify(publicJwk), private_jwk: sealPrivate(this.opts.box, kid, privateJwk), created_at: now, retire_at: retireAt, expires_at: retireAt + this.opts.maxTokenMs })
      .execute();
    await this.db().deleteFrom('id_signing_keys').where('expires_at', '<=', now).execute();
    await this.load();
  }

  /** The key that signs now (rotating first when its period is over). */
  async current(): Promise<{ kid: string; key: CryptoKey }> {
    const now = Date.now();
    if (!this.signer || this.signer.row.retireAt <= now || now - this.loadedAt > 60_000) {
      this.rotating ??= (this.signer && this.signer.row.retireAt > now ? this.load() : this.rotate()).finally(() => (this.rotating = undefined));
      await this.rotating;
    }
    if (!this.signer) throw new Error('no signing key');
    return { kid: this.signer.row.kid, key: await this.signer.key };
  }

  /** The public key of `kid`, reloading once a second at most when it is unknown (another process rotated). */
  async verifyKey(kid: string | undefined): Promise<CryptoKey | undefined> {
    if (typeof kid !== 'string') return undefined;
    let k = this.keys.get(kid);
    // Requests that arrive while the reload runs wait for it (else they would fail until it ends).
    if (!k && (this.unknownReload || Date.now() - this.lastUnknownReload > 1000)) {
      if (!this.unknownReload) {
        this.lastUnknownReload = Date.now();
        this.unknownReload = this.load().finally(() => (this.unknownReload = undefined));
      }
      await this.unknownReload;
      k = this.keys.get(kid);
    }
    if (!k || k.expiresAt <= Date.now()) return undefined;
    return k.verifyKey;
  }

  /** The JWKS: every key whose tokens may still be alive. */
  async jwks(): Promise<{ keys: JWK[] }> {
    if (Date.now() - this.loadedAt > 60_000 || this.keys.size === 0) await this.current();
    const now = Date.now();
    return { keys: [...this.keys.values()].filter((k) => k.expiresAt > now).map((k) => k.publicJwk) };
  }

  /** Forces the next signature onto a fresh key (operators; tests of rotation). */
  async rotateNow(): Promise<void> {
    const now = Date.now();
    await this.db().updateTable('id_signing_keys').set({ retire_at: now }).where('retire_at', '>', now).execute();
    this.signer = undefined;
    await this.rotate();
  }
}
