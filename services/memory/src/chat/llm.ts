import type { MemoryConfig } from '../config.ts';
import { openAiEndpoint } from '../search/embedding.ts';

export interface LlmSettings {
  /** Base URL of an OpenAI-compatible API (`…/v1` or a bare host); unset means no LLM. */
  url?: string;
  model?: string;
  key?: string;
  timeoutMs?: number;
  maxTokens?: number;
}

/** The LLM settings from the service config, falling back to MEMORY_LLM_URL / _MODEL / _KEY. */
export function llmSettings(config: Partial<MemoryConfig> | undefined, env: NodeJS.ProcessEnv = process.env): LlmSettings {
  const c = (config?.llm ?? {}) as LlmSettings;
  if (c.url) return c;
  return { url: env.MEMORY_LLM_URL || undefined, model: env.MEMORY_LLM_MODEL || undefined, key: env.MEMORY_LLM_KEY || undefined };
}

export class LlmError extends Error {}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Longest answer we accept from the model (bounds memory on a misbehaving server). */
const MAX_ANSWER_CHARS = 64 * 1024;

/** A client of `/v1/chat/completions` (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, …). */
export class LlmClient {
  #s: LlmSettings & { url: string };
  #endpoint: string;

  constructor(settings: LlmSettings & { url: string }) {
    this.#s = settings;
    this.#endpoint = openAiEndpoint(settings.url, 'chat/completions');
  }

  get model(): string {
    return this.#s.model ?? 'gpt-4o-mini';
  }

  async #post(messages: ChatMessage[], stream: boolean, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#s.key) headers.authorization = `Bearer ${this.#s.key}`;
    const timeout = AbortSignal.timeout(this.#s.timeoutMs ?? 60_000);
    let res: Response;
    try {
      res = await fetch(this.#endpoint, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.model, messages, stream, temperature: 0, max_tokens: this.#s.maxTokens ?? 512 }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new LlmError(`LLM request failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw new LlmError(`LLM request failed: HTTP ${res.status}`);
    }
    return res;
  }

  /** The model's whole answer. */
  async complete(messages: ChatMessage[]): Promise<string> {
    const res = await this.#post(messages, false);
    let json: any;
    try {
      json = await res.json();
    } catch {
      throw new LlmError('LLM response is not JSON');
    }
    const content = json?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw new LlmError('LLM response has no message content');
    return content.slice(0, MAX_ANSWER_CHARS);
  }

  /** The answer as it is generated (OpenAI's `stream: true` server-sent events). */
  async *stream(messages: ChatMessage[], signal?: AbortSignal): AsyncGenerator<string> {
    const res = await this.#post(messages, true, signal);
    if (!res.body) throw new LlmError('LLM response has no body');
    const decoder = new TextDecoder();
    let buffer = '';
    let total = 0;
    try {
      for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(part, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).replace(/\r$/, '');
          buffer = buffer.slice(nl + 1);
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') return;
          let json: any;
          try {
            json = JSON.parse(data);
          } catch {
            throw new LlmError('LLM stream has a malformed event');
          }
          const piece = json?.choices?.[0]?.delta?.content;
          if (typeof piece === 'string' && piece) {
            total += piece.length;
            if (total > MAX_ANSWER_CHARS) return;
            yield piece;
          }
        }
        if (buffer.length > MAX_ANSWER_CHARS) throw new LlmError('LLM stream line too long');
      }
    } catch (err) {
      if (err instanceof LlmError) throw err;
      throw new LlmError(`LLM stream failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

export function createLlm(settings: LlmSettings): LlmClient | undefined {
  return settings.url ? new LlmClient({ ...settings, url: settings.url }) : undefined;
}
