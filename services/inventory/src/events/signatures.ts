import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

// Key objects per secret: a webhook's secret signs every one of its deliveries.
const keys = new Map<string, KeyObject>();
function key(kind: string, secret: string, bytes: () => Buffer): KeyObject {
  const id = `${kind}\0${secret}`;
  let k = keys.get(id);
  if (!k) {
    k = createSecretKey(bytes());
    if (keys.size >= 256) keys.delete(keys.keys().next().value!);
    keys.set(id, k);
  }
  return k;
}

/** NetBox's X-Hook-Signature: lowercase hex HMAC-SHA512 of the exact body bytes, keyed by the secret's UTF-8. */
export function hookSignature(secret: string, body: Buffer): string {
  return createHmac('sha512', key('utf8', secret, () => Buffer.from(secret, 'utf8'))).update(body).digest('hex');
}

/**
 * Standard Webhooks v1 signature over `${id}.${timestamp}.${body}`. The key is
 * the webhook's secret: a `whsec_<base64>` secret contributes its decoded
 * bytes (as the spec's libraries do), any other secret its UTF-8 bytes, so the
 * same secret field serves both schemes.
 */
export function standardWebhookSignature(secret: string, id: string, timestamp: number, body: Buffer): string {
  const mac = createHmac('sha256', key('sw', secret, () => standardWebhookKey(secret)));
  mac.update(`${id}.${timestamp}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

export function standardWebhookKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
}
