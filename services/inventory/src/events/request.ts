import { HeaderSet, parseHeaderLines } from './headers.ts';
import { WEBHOOK_USER_AGENT } from './user-agent.ts';
import { defaultBody } from './python-json.ts';
import { renderErrorText, type IsolatedTemplates, type Rendered } from './templates.ts';
import type { WebhookRow } from './webhooks.ts';

/** A template failed to render; `killedWorker` when it stopped its render worker thread (heap or hard time limit). */
export class RenderFailed extends Error {
  constructor(
    message: string,
    readonly field: 'additional_headers' | 'body_template' | 'payload_url',
    readonly killedWorker: boolean,
  ) {
    super(message);
  }
}

export interface RenderedRequest {
  url: string;
  headers: HeaderSet;
  body: string;
  /** The body is the default one (the stored context text as it is). */
  defaultBody?: boolean;
  /** Set when a template failed; the fields before it are filled in. */
  error?: RenderFailed;
}

/**
 * The request a webhook sends for one event context (stored JSON text), as NetBox builds it:
 * Content-Type, then the rendered additional headers, the rendered body (or the default JSON body)
 * and the rendered URL. All templates render in one round trip to a render worker thread.
 */
export async function renderRequest(engine: IsolatedTemplates, w: WebhookRow, contextJson: string): Promise<RenderedRequest> {
  const out: RenderedRequest = { url: '', headers: new HeaderSet(), body: '' };
  out.headers.set('Content-Type', w.http_content_type);
  out.headers.set('User-Agent', WEBHOOK_USER_AGENT);
  const items: Array<{ source: string; kind: 'headers' | 'other' }> = [{ source: w.payload_url, kind: 'other' }];
  if (w.additional_headers) items.push({ source: w.additional_headers, kind: 'headers' });
  if (w.body_template) items.push({ source: w.body_template, kind: 'other' });
  const [urlR, ...rest] = await engine.render(items, contextJson);
  const headersR = w.additional_headers ? rest.shift() : undefined;
  const bodyR = w.body_template ? rest.shift() : undefined;
  try {
    // NetBox renders headers, then the body, then the URL: the first failure is the one reported
    if (headersR) {
      const rendered = text(headersR, 'additional_headers', `Error parsing HTTP headers for webhook ${w.name}`);
      for (const [k, v] of parseHeaderLines(rendered)) out.headers.set(k, v);
    }
    if (bodyR) out.body = text(bodyR, 'body_template', `Error rendering request body for webhook ${w.name}`);
    else {
      out.body = defaultBody(contextJson);
      out.defaultBody = true;
    }
    out.url = text(urlR!, 'payload_url', `Error rendering payload URL for webhook ${w.name}`);
  } catch (err) {
    if (!(err instanceof RenderFailed)) throw err;
    out.error = err;
  }
  return out;
}

function text(r: Rendered, field: RenderFailed['field'], what: string): string {
  if (r.ok) return r.out;
  throw new RenderFailed(`${what}: ${renderErrorText(r.error)}`, field, r.error.killedWorker === true);
}
