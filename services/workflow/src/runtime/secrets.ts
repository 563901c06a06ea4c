/**
 * Secret node inputs (`InputOptions.secret`, e.g. an API node's `api_key`).
 *
 * A prompt is stored, shown in the queue, history and jobs, embedded in
 * saved PNGs and used as the engine's hidden PROMPT; a key typed into a node
 * must reach none of them. So when a prompt is queued, the value of every
 * secret input is moved out of the prompt into the prompt's sensitive data
 * (stored apart and dropped when the prompt finishes, like the reference's
 * sensitive extra_data keys) and replaced by `[redacted]`; every other copy
 * of a secret in the prompt or extra_data (the frontend's workflow JSON
 * carries widget values in extra_pnginfo) is replaced too. The node reads the
 * real value back with `secretInputOf`.
 */
import type { NodeRegistry } from '../engine/registry.ts';
import { isLink } from '../nodes/api.ts';
import { REDACTED } from '../nodes/secret-inputs.ts';

export { NODE_SECRETS_KEY, REDACTED } from '../nodes/secret-inputs.ts';

export interface SecretExtraction {
  /** The prompt with secret values replaced (a copy of the nodes that had one). */
  prompt: Record<string, unknown>;
  secrets: Record<string, Record<string, string>>;
  /** Secret inputs given as a link: refused, since the value would sit in another node's stored inputs. */
  linked: Array<{ nodeId: string; input: string; classType: string }>;
}

export function extractSecretInputs(registry: NodeRegistry, prompt: unknown): SecretExtraction {
  const out: SecretExtraction = { prompt: prompt as Record<string, unknown>, secrets: {}, linked: [] };
  if (!prompt || typeof prompt !== 'object' || Array.isArray(prompt)) return out;
  let copied = false;
  for (const [id, node] of Object.entries(prompt as Record<string, any>)) {
    const cls = node && typeof node === 'object' && typeof node.class_type === 'string' ? registry.get(node.class_type) : undefined;
    if (!cls || !node.inputs || typeof node.inputs !== 'object') continue;
    let inputs: Record<string, unknown> | undefined;
    for (const [name, v] of Object.entries(node.inputs as Record<string, unknown>)) {
      if (cls.inputInfo(name)?.options.secret !== true) continue;
      if (isLink(v)) {
        out.linked.push({ nodeId: id, input: name, classType: node.class_type });
        continue;
      }
      if (typeof v !== 'string' || v === '' || v === REDACTED) continue;
      // Node ids are the client's: '__proto__' must be a key here, never the prototype (whose change would pollute every object).
      if (!Object.hasOwn(out.secrets, id)) setOwn(out.secrets, id, {});
      setOwn(out.secrets[id]!, name, v);
      if (!copied) {
        out.prompt = { ...(prompt as Record<string, unknown>) };
        copied = true;
      }
      inputs ??= { ...node.inputs } as Record<string, unknown>;
      setOwn(inputs, name, REDACTED);
    }
    if (inputs) setOwn(out.prompt, id, { ...node, inputs });
  }
  return out;
}

/** obj[key] = value as an own data property, whatever the key ('__proto__' included). */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * Replaces every string holding one of `secrets` inside `roots` (in place;
 * iterative, so any depth is fine). Secrets shorter than 8 characters are
 * replaced only where they are a whole string, so short values do not mangle
 * unrelated text.
 */
export function scrubSecrets(roots: unknown[], secrets: string[]): void {
  const list = [...new Set(secrets.filter((s) => typeof s === 'string' && s !== '' && s !== REDACTED))];
  if (list.length === 0) return;
  const clean = (s: string): string => {
    let r = s;
    for (const x of list) {
      if (r === x) return REDACTED;
      if (x.length >= 8 && r.includes(x)) r = r.split(x).join(REDACTED);
    }
    return r;
  };
  const stack: unknown[] = [...roots];
  while (stack.length) {
    const o = stack.pop();
    if (!o || typeof o !== 'object') continue;
    if (Array.isArray(o)) {
      for (let i = 0; i < o.length; i++) {
        const v = o[i];
        if (typeof v === 'string') o[i] = clean(v);
        else if (v && typeof v === 'object') stack.push(v);
      }
    } else {
      for (const k of Object.keys(o)) {
        const v = (o as Record<string, unknown>)[k];
        if (typeof v === 'string') (o as Record<string, unknown>)[k] = clean(v);
        else if (v && typeof v === 'object') stack.push(v);
      }
    }
  }
}
