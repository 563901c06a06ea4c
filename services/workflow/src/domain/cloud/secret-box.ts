/**
 * Encryption at rest of workspace secrets: AES-256-GCM (node:crypto) with a
 * random 96-bit nonce per seal, the row's identity as additional data (a
 * ciphertext copied into another row or workspace does not open), and the
 * id of the sealing key stored beside it, so keys can rotate: the first
 * configured key seals, every configured key opens.
 *
 * Keys come from `--secrets-key` or `WORKFLOW_SECRETS_KEY`: a comma-separated
 * list of 32-byte keys (64 hex digits or base64), each optionally prefixed
 * `id:`; without an id, the id is derived from the key. Without any, one key
 * is generated on first start and kept in `<data-dir>/secrets.key` (mode
 * 0600). Processes on several machines must share a configured key.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export interface SecretKey {
  id: string;
  key: Buffer;
}

const KEY_FILE = 'secrets.key';
const FORMAT = 'v1';

function parseKey(text: string, where: string): SecretKey {
  const t = text.trim();
  const colon = t.indexOf(':');
  const explicitId = colon > 0 ? t.slice(0, colon) : undefined;
  const material = colon > 0 ? t.slice(colon + 1) : t;
  let key: Buffer;
  if (/^[0-9a-fA-F]{64}$/.test(material)) key = Buffer.from(material, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(material)) key = Buffer.from(material.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  else throw new Error(`${where}: each key must be 32 bytes as 64 hex digits or base64 (optionally "id:key")`);
  if (key.length !== 32) throw new Error(`${where}: each key must be 32 bytes`);
  if (explicitId !== undefined && !/^[\w.-]{1,64}$/.test(explicitId)) throw new Error(`${where}: a key id is 1-64 letters, digits, ".", "_" or "-"`);
  return { id: explicitId ?? `k${createHash('sha256').update(key).digest('hex').slice(0, 15)}`, key };
}

/** The configured keys (first one seals), or the data dir's generated key. */
export function loadSecretKeys(flags: Record<string, unknown>, dataDir: string, env: NodeJS.ProcessEnv = process.env): SecretKey[] {
  const raw = typeof flags.secretsKey === 'string' ? flags.secretsKey : env.WORKFLOW_SECRETS_KEY;
  if (raw !== undefined && raw.trim() !== '') {
    const keys = raw.split(',').filter((s) => s.trim() !== '').map((s) => parseKey(s, '--secrets-key'));
    if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new Error('--secrets-key: two keys have the same id');
    return keys;
  }
  const file = path.join(dataDir, KEY_FILE);
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    // `wx`: two processes starting on one data dir agree on the first key written.
    const fd = fs.openSync(file, 'wx', 0o600);
    try {
      fs.writeSync(fd, `${randomBytes(32).toString('hex')}\n`);
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return [parseKey(fs.readFileSync(file, 'utf8'), file)];
}

export class SecretBox {
  private readonly byId: Map<string, Buffer>;
  constructor(private readonly keys: SecretKey[]) {
    if (keys.length === 0) throw new Error('no secrets key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  get activeKeyId(): string {
    return this.keys[0]!.id;
  }

  canOpen(keyId: string): boolean {
    return this.byId.has(keyId);
  }

  /** `v1.<nonce>.<tag>.<ciphertext>` (base64url) under the active key. */
  seal(plaintext: string, aad: string): { keyId: string; ciphertext: string } {
    const { id, key } = this.keys[0]!;
    const nonce = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, nonce);
    c.setAAD(Buffer.from(`${id}\u0000${aad}`, 'utf8'));
    const body = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return { keyId: id, ciphertext: [FORMAT, nonce.toString('base64url'), c.getAuthTag().toString('base64url'), body.toString('base64url')].join('.') };
  }

  /** The plaintext, or null when the key is unknown or the ciphertext was tampered with. */
  open(keyId: string, sealed: string, aad: string): string | null {
    const key = this.byId.get(keyId);
    const parts = sealed.split('.');
    if (!key || parts.length !== 4 || parts[0] !== FORMAT) return null;
    try {
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(parts[1]!, 'base64url'));
      d.setAAD(Buffer.from(`${keyId}\u0000${aad}`, 'utf8'));
      d.setAuthTag(Buffer.from(parts[2]!, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(parts[3]!, 'base64url')), d.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
