/**
 * API nodes beyond the reference's weight-free core: text and image
 * generation through an OpenAI-compatible endpoint (`POST {base}/chat/completions`,
 * `POST {base}/images/generations`). They make the service useful on a
 * machine with no GPU and no weights.
 *
 * The endpoint is operator configuration: requests go only to the configured
 * base URL (or one of the extra URLs the operator allows a node to pick),
 * never follow redirects, time out, and read at most a bounded answer. The
 * key comes from configuration, `extra_data.openai_api_key`, or the node's
 * `api_key` input, which is marked `secret`: the runtime moves its value out
 * of the stored prompt (see runtime/secrets.ts), so it never reaches history,
 * jobs, the queue, PNG text chunks or error reports. Upstream error texts are
 * scrubbed of the key before they become node errors.
 */
import sharp from '../files/sharp.ts';
import { decodeImage, encodePng } from './image-io.ts';
import { Frame, ImageBatch, MAX_BATCH, MAX_IMAGE_SIDE } from './image-types.ts';
import { materialisingInputs } from './pending-images.ts';
import type { InputSpec, NodeContext, NodeDefinition } from './api.ts';
import { REDACTED, secretInputOf } from './secret-inputs.ts';

export interface OpenAIConfig {
  /** The default endpoint, e.g. `https://api.openai.com/v1` (no trailing slash); none = the nodes refuse to run until one is set. */
  baseUrl?: string;
  /** Further endpoints a node's `base_url` input may select (the default one is always allowed). */
  allowedBaseUrls: string[];
  /** Sent only to the default endpoint. */
  apiKey?: string;
  chatModel: string;
  imageModel: string;
  /** Per request, connection to last byte. */
  timeoutMs: number;
  /** Largest answer body read; a bigger one is an error. */
  maxResponseBytes: number;
  /** Retries of 429 / 5xx / connection failures (never of 4xx). */
  maxRetries: number;
  /**
   * `api_node` in object_info (default true, as the reference's API nodes).
   * Recent reference frontends replace the Run button with a comfy.org sign-in
   * when a graph holds API nodes; false lets such a frontend run them.
   */
  apiNodeFlag: boolean;
}

/** The `extra_data` key that carries a per-prompt key (kept out of stored history like the reference's sensitive keys). */
export const EXTRA_DATA_KEY = 'openai_api_key';

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Checks and normalises a base URL: http(s), no credentials, query or fragment, no trailing slash. */
export function normalizeBaseUrl(raw: string, what = 'base URL'): string {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new Error(`${what} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${what} must be http or https`);
  if (u.username || u.password) throw new Error(`${what} must not carry credentials (use the API key setting)`);
  if (u.search || u.hash) throw new Error(`${what} must not have a query or fragment`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

function positive(raw: string | undefined, name: string, fallback: number, opts: { integer?: boolean; zero?: boolean } = {}): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (!opts.zero && n === 0) || (opts.integer && !Number.isInteger(n))) throw new Error(`${name} must be a ${opts.integer ? 'whole ' : ''}positive number, got ${raw}`);
  return n;
}

function bool(raw: string | boolean | undefined, name: string, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback;
  if (raw === true || raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new Error(`${name} must be true or false, got ${raw}`);
}

/** `--openai-*` flags first, then `WORKFLOW_OPENAI_*` variables. */
export function openaiConfig(flags: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv = process.env): OpenAIConfig {
  const base = str(flags.openaiBaseUrl) ?? str(env.WORKFLOW_OPENAI_BASE_URL);
  const allowed = (str(flags.openaiAllowedBaseUrls) ?? str(env.WORKFLOW_OPENAI_ALLOWED_BASE_URLS) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => normalizeBaseUrl(s, '--openai-allowed-base-urls entry'));
  return {
    baseUrl: base === undefined ? undefined : normalizeBaseUrl(base, '--openai-base-url'),
    allowedBaseUrls: allowed,
    apiKey: str(flags.openaiApiKey) ?? str(env.WORKFLOW_OPENAI_API_KEY),
    chatModel: str(flags.openaiChatModel) ?? str(env.WORKFLOW_OPENAI_CHAT_MODEL) ?? 'gpt-4o-mini',
    imageModel: str(flags.openaiImageModel) ?? str(env.WORKFLOW_OPENAI_IMAGE_MODEL) ?? 'dall-e-3',
    timeoutMs: Math.round(Math.min(positive(str(flags.openaiTimeout) ?? str(env.WORKFLOW_OPENAI_TIMEOUT), '--openai-timeout', 300), 86_400) * 1000),
    maxResponseBytes: Math.floor(Math.min(positive(str(flags.openaiMaxResponseMb) ?? str(env.WORKFLOW_OPENAI_MAX_RESPONSE_MB), '--openai-max-response-mb', 64), 1024) * 1024 * 1024),
    maxRetries: positive(str(flags.openaiMaxRetries) ?? str(env.WORKFLOW_OPENAI_MAX_RETRIES), '--openai-max-retries', 2, { integer: true, zero: true }),
    apiNodeFlag: bool(flags.openaiApiNodeFlag ?? env.WORKFLOW_OPENAI_API_NODE_FLAG, '--openai-api-node-flag', true),
  };
}

/** A failure of the endpoint, as the node's execution error (`exception_type` OpenAIEndpointError). */
export class EndpointError extends Error {
  readonly pyType = 'OpenAIEndpointError';
  constructor(
    message: string,
    readonly status?: number,
    readonly retryable = false,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'OpenAIEndpointError';
  }
}

/** Removes every occurrence of the secrets from a text that may reach a client or a log. */
function scrub(text: string, secrets: Array<string | undefined>): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join(REDACTED);
  return out;
}

interface Endpoint {
  base: string;
  key?: string;
}

/** The endpoint and key a node call uses: node inputs first, then the prompt's extra data, then configuration. */
async function resolveEndpoint(cfg: OpenAIConfig, inputs: Record<string, unknown>, ctx: NodeContext): Promise<Endpoint> {
  let base = cfg.baseUrl;
  const asked = str(inputs.base_url);
  if (asked !== undefined) {
    let norm: string;
    try {
      norm = normalizeBaseUrl(asked, 'base_url');
    } catch (err) {
      throw new EndpointError((err as Error).message);
    }
    if (norm !== cfg.baseUrl && !cfg.allowedBaseUrls.includes(norm)) {
      throw new EndpointError('base_url is not one of the endpoints this server allows (--openai-base-url, --openai-allowed-base-urls)');
    }
    base = norm;
  }
  if (base === undefined) throw new EndpointError('No OpenAI-compatible endpoint is configured: start the server with --openai-base-url (or WORKFLOW_OPENAI_BASE_URL)');
  const nodeKey = secretInputOf(ctx, 'api_key', inputs.api_key) ?? (await storedSecret(ctx, str(inputs.api_key_secret)));
  const extraKey = str(ctx.env.extraData[EXTRA_DATA_KEY]);
  // The configured key belongs to the configured endpoint: it is never sent to another one.
  const key = nodeKey ?? extraKey ?? (base === cfg.baseUrl ? cfg.apiKey : undefined);
  return { base, key };
}

/** The workspace secret a node names, read at execution time (the hosted runtime marks it used). */
async function storedSecret(ctx: NodeContext, name: string | undefined): Promise<string | undefined> {
  if (name === undefined) return undefined;
  if (!ctx.env.secret) throw new EndpointError('api_key_secret names a stored secret, but stored secrets exist only on the hosted runtime (--runtime cloud)');
  let value: string | undefined;
  try {
    value = await ctx.env.secret(name);
  } catch (err) {
    throw new EndpointError((err as Error).message);
  }
  if (value === undefined) throw new EndpointError(`No secret named "${name.slice(0, 100)}" is stored in this workspace (/api/secrets)`);
  return value;
}

function describeStatus(status: number): string {
  if (status === 401) return 'refused the API key (401 Unauthorized)';
  if (status === 403) return 'refused the request (403 Forbidden)';
  if (status === 404) return 'has no such route or model (404 Not Found)';
  if (status === 429) return 'is rate limiting or out of quota (429 Too Many Requests)';
  if (status >= 500) return `failed (${status})`;
  return `refused the request (${status})`;
}

/** The `{error: {message}}` of an OpenAI error body, or the start of the text. */
function upstreamMessage(body: string): string {
  try {
    const j = JSON.parse(body);
    const m = j?.error?.message ?? j?.message ?? j?.detail ?? j?.error;
    if (typeof m === 'string' && m !== '') return m.slice(0, 500);
  } catch {
    /* not JSON: the text itself */
  }
  return body.replace(/\s+/g, ' ').trim().slice(0, 200);
}

function retryAfter(h: string | null): number | undefined {
  if (h === null) return undefined;
  const s = Number(h);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const t = Date.parse(h);
  return Number.isFinite(t) ? Math.max(0, t - Date.now()) : undefined;
}

/** Reads a body up to `max` bytes; a longer one is cancelled and refused. */
async function readCapped(res: Response, max: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => {});
    throw new EndpointError(`the endpoint's answer (${declared} bytes) is larger than the limit of ${max} bytes (--openai-max-response-mb)`);
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw new EndpointError(`the endpoint's answer is larger than the limit of ${max} bytes (--openai-max-response-mb)`);
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
  return Buffer.concat(chunks, total);
}

/** Waits `ms`, or less when the prompt is interrupted. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** One POST with a JSON body; answers the parsed JSON of a 2xx, or throws EndpointError. */
async function postJson(cfg: OpenAIConfig, ep: Endpoint, route: string, body: unknown, ctx: NodeContext): Promise<any> {
  const url = `${ep.base}${route}`;
  const payload = JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (ep.key !== undefined) headers.authorization = `Bearer ${ep.key}`;
  const secrets = [ep.key, cfg.apiKey];
  for (let attempt = 0; ; attempt++) {
    ctx.checkInterrupt();
    const timeout = AbortSignal.timeout(cfg.timeoutMs);
    const signal = AbortSignal.any([ctx.signal, timeout]);
    let failure: EndpointError;
    try {
      const res = await fetch(url, { method: 'POST', headers, body: payload, redirect: 'manual', signal });
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel().catch(() => {});
        throw new EndpointError(`the endpoint answered a redirect (${res.status}); requests go only to the configured endpoint, so it is not followed`, res.status);
      }
      const raw = await readCapped(res, cfg.maxResponseBytes);
      if (res.ok) {
        try {
          return JSON.parse(raw.toString('utf8'));
        } catch {
          throw new EndpointError(`the endpoint answered ${route} with malformed JSON`, res.status);
        }
      }
      const retryable = res.status === 429 || res.status >= 500;
      failure = new EndpointError(
        scrub(`OpenAI-compatible endpoint ${describeStatus(res.status)}: ${upstreamMessage(raw.toString('utf8'))}`, secrets),
        res.status,
        retryable,
        retryAfter(res.headers.get('retry-after')),
      );
    } catch (err) {
      ctx.checkInterrupt();
      if (err instanceof EndpointError) failure = err;
      else if (timeout.aborted) failure = new EndpointError(`the endpoint did not answer ${route} within ${cfg.timeoutMs / 1000} s (--openai-timeout)`, undefined, true);
      else {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        failure = new EndpointError(scrub(`could not reach the endpoint: ${cause?.code ?? cause?.message ?? (err as Error).message}`, secrets), undefined, true);
      }
    }
    if (!failure.retryable || attempt >= cfg.maxRetries) throw failure;
    await sleep(Math.min(failure.retryAfterMs ?? 500 * 2 ** attempt, 30_000), ctx.signal);
  }
}

/** The text of a chat completion's first choice (string content, or the text parts of an array). */
function chatText(j: any): string {
  const choice = Array.isArray(j?.choices) ? j.choices[0] : undefined;
  const msg = choice?.message;
  if (!msg || typeof msg !== 'object') throw new EndpointError('the endpoint answered without choices[0].message');
  const c = msg.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('');
  if (typeof msg.refusal === 'string') throw new EndpointError(`the model refused: ${msg.refusal.slice(0, 500)}`);
  if (c === null || c === undefined) return '';
  throw new EndpointError('the endpoint answered a message content that is not text');
}

const BASE64 = /^[A-Za-z0-9+/\r\n]*={0,2}\s*$/;

/** data[].b64_json decoded into one batch (images of another size than the first are scaled to it). */
async function imagesOf(j: any): Promise<ImageBatch> {
  const data = j?.data;
  if (!Array.isArray(data) || data.length === 0) throw new EndpointError('the endpoint answered no images');
  if (data.length > MAX_BATCH) throw new EndpointError(`the endpoint answered more than ${MAX_BATCH} images`);
  const frames: Frame[] = [];
  for (const item of data) {
    const b64 = item?.b64_json;
    if (typeof b64 !== 'string') {
      throw new EndpointError(typeof item?.url === 'string' ? 'the endpoint answered an image URL instead of b64_json (URLs are not fetched: requests go only to the configured endpoint)' : 'the endpoint answered an image without b64_json');
    }
    if (!BASE64.test(b64)) throw new EndpointError('the endpoint answered an image whose b64_json is not base64');
    let batch: ImageBatch;
    try {
      batch = (await decodeImage(Buffer.from(b64, 'base64'))).image;
    } catch (err) {
      throw new EndpointError(`the endpoint answered an image that cannot be decoded: ${(err as Error).message}`);
    }
    for (const f of batch.frames) {
      const first = frames[0];
      if (!first || (first.width === f.width && first.height === f.height)) frames.push(f);
      else {
        const data = await sharp(f.data, { raw: { width: f.width, height: f.height, channels: f.channels } }).resize(first.width, first.height, { fit: 'fill' }).raw().toBuffer();
        frames.push(new Frame(first.width, first.height, f.channels, data));
      }
    }
  }
  return new ImageBatch(frames);
}

/** `WxH` as the images API takes it, or `auto`. */
const SIZE = /^(auto|\d{1,5}x\d{1,5})$/;

const endpointInputs: Record<string, InputSpec> = {
  base_url: ['STRING', { default: '', tooltip: 'Another endpoint the server allows (--openai-allowed-base-urls); empty = the configured one.' }],
  api_key: ['STRING', { default: '', secret: true, tooltip: 'Key for the endpoint; empty = extra_data.openai_api_key or the configured key. Kept out of history, jobs and saved files.' }],
  api_key_secret: ['STRING', { default: '', tooltip: 'Name of a stored workspace secret (hosted runtime, /api/secrets) holding the key; used when api_key is empty.' }],
};

export function apiNodes(cfg: OpenAIConfig): NodeDefinition[] {
  const defs: NodeDefinition[] = [
    {
      name: 'OpenAICompatibleChat',
      displayName: 'OpenAI-compatible Chat',
      description: 'Generates text with an OpenAI-compatible chat completions endpoint (POST {base}/chat/completions).',
      category: 'api node/text/OpenAI-compatible',
      pythonModule: 'comfy_api_nodes.nodes_openai_compatible',
      apiNode: cfg.apiNodeFlag,
      inputs: {
        required: {
          prompt: ['STRING', { default: '', multiline: true, tooltip: 'The user message.' }],
        },
        optional: {
          system_prompt: ['STRING', { default: '', multiline: true, tooltip: 'Sent as the system message when not empty.' }],
          model: ['STRING', { default: cfg.chatModel, tooltip: 'Model name at the endpoint.' }],
          temperature: ['FLOAT', { default: 1.0, min: 0, max: 2, step: 0.01 }],
          max_tokens: ['INT', { default: 0, min: 0, max: 1_000_000, tooltip: '0 = the endpoint decides.' }],
          seed: ['INT', { default: 0, min: 0, max: 2 ** 31 - 1, control_after_generate: true, tooltip: 'Sent as the request seed; changing it re-runs the node.' }],
          images: ['IMAGE', { tooltip: 'Optional images sent with the message (PNG data URLs), for vision models.' }],
          ...endpointInputs,
        },
      },
      outputs: ['STRING'],
      execute: async (inputs, ctx) => {
        const ep = await resolveEndpoint(cfg, inputs, ctx);
        const prompt = String(inputs.prompt ?? '');
        if (prompt.trim() === '' && !inputs.images) throw new EndpointError('prompt is empty');
        const content: unknown[] = [{ type: 'text', text: prompt }];
        if (inputs.images instanceof ImageBatch) {
          for (const f of inputs.images.frames) {
            ctx.checkInterrupt();
            content.push({ type: 'image_url', image_url: { url: `data:image/png;base64,${(await encodePng(f)).toString('base64')}` } });
          }
        }
        const messages: unknown[] = [];
        if (str(inputs.system_prompt)) messages.push({ role: 'system', content: inputs.system_prompt });
        messages.push({ role: 'user', content: content.length === 1 ? prompt : content });
        const body: Record<string, unknown> = { model: str(inputs.model) ?? cfg.chatModel, messages, temperature: inputs.temperature ?? 1.0 };
        if (typeof inputs.max_tokens === 'number' && inputs.max_tokens > 0) body.max_tokens = inputs.max_tokens;
        if (typeof inputs.seed === 'number') body.seed = inputs.seed;
        const answer = await postJson(cfg, ep, '/chat/completions', body, ctx);
        return [chatText(answer)];
      },
    },
    {
      name: 'OpenAICompatibleImage',
      displayName: 'OpenAI-compatible Image',
      description: 'Generates images with an OpenAI-compatible images endpoint (POST {base}/images/generations, b64_json answers).',
      category: 'api node/image/OpenAI-compatible',
      pythonModule: 'comfy_api_nodes.nodes_openai_compatible',
      apiNode: cfg.apiNodeFlag,
      inputs: {
        required: {
          prompt: ['STRING', { default: '', multiline: true, tooltip: 'What to draw.' }],
        },
        optional: {
          model: ['STRING', { default: cfg.imageModel, tooltip: 'Model name at the endpoint.' }],
          size: ['STRING', { default: '1024x1024', tooltip: 'WIDTHxHEIGHT as the endpoint accepts it, or auto.' }],
          n: ['INT', { default: 1, min: 1, max: 8, tooltip: 'How many images to generate.' }],
          quality: ['STRING', { default: '', tooltip: 'Passed through when not empty (standard, hd, low, medium, high …).' }],
          seed: ['INT', { default: 0, min: 0, max: 2 ** 31 - 1, control_after_generate: true, tooltip: 'Not sent (the images API has none); changing it re-runs the node.' }],
          ...endpointInputs,
        },
      },
      outputs: ['IMAGE'],
      validateInputs: {
        inputs: ['size'],
        fn: ({ size }) => {
          if (size === null || size === undefined) return true;
          if (typeof size !== 'string' || !SIZE.test(size)) return `size must be WIDTHxHEIGHT or auto, got ${JSON.stringify(size)?.slice(0, 40)}`;
          const m = /^(\d+)x(\d+)$/.exec(size);
          if (m && (Number(m[1]) < 1 || Number(m[2]) < 1 || Number(m[1]) > MAX_IMAGE_SIDE || Number(m[2]) > MAX_IMAGE_SIDE)) return `size sides must be 1..${MAX_IMAGE_SIDE}`;
          return true;
        },
      },
      execute: async (inputs, ctx) => {
        const ep = await resolveEndpoint(cfg, inputs, ctx);
        const prompt = String(inputs.prompt ?? '');
        if (prompt.trim() === '') throw new EndpointError('prompt is empty');
        const model = str(inputs.model) ?? cfg.imageModel;
        const body: Record<string, unknown> = { model, prompt, n: inputs.n ?? 1, size: str(inputs.size) ?? '1024x1024' };
        // gpt-image models always answer base64 and refuse the parameter; every other model is asked for it.
        if (!/^gpt-image/.test(model)) body.response_format = 'b64_json';
        if (str(inputs.quality)) body.quality = inputs.quality;
        const answer = await postJson(cfg, ep, '/images/generations', body, ctx);
        ctx.checkInterrupt();
        return [await imagesOf(answer)];
      },
    },
  ];
  return defs.map(materialisingInputs);
}
