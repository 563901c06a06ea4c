import Ajv from 'ajv';
import { detailError } from '@svc/kernel';
import type { Ctx } from '../context.ts';
import { LlmError, type ChatMessage, type LlmClient } from '../../chat/llm.ts';
import { dialecticPrompt } from '../../chat/prompts.ts';
import { bestDistinctFacts, relevance } from '../dialectic.ts';
import { extractFacts } from '../../chat/extract-facts.ts';
import { recallConclusions } from './conclusions.ts';
import { sessionAllowlist } from './memory.ts';
import { ensurePeers } from './peers.ts';
import { aboutPeer } from './reasoning.ts';
import { requireSession } from './sessions.ts';
import { checkScopeOption, refuseScopePeers, resolveScopeOption } from './scopes.ts';
import { ts, validation } from './util.ts';
import { requireWorkspace } from './workspaces.ts';

export interface DialecticOptions {
  query: string;
  session_id?: string | null;
  target?: string | null;
  filters?: Record<string, unknown> | null;
  stream?: boolean;
  reasoning_level?: 'minimal' | 'low' | 'medium' | 'high' | 'max';
  response_format?: Record<string, unknown> | null;
  include_evidence?: boolean | null;
  scope?: unknown;
}

/** Conclusions recalled per reasoning level (the reference's agent searches deeper as the level rises). */
const RECALL: Record<string, number> = { minimal: 5, low: 10, medium: 20, high: 40, max: 80 };
const RECENT_MESSAGES = 10;

const ajv = new (Ajv as any).default({ allErrors: true, strict: false });

/** The caller's JSON Schema, compiled; 422 unless it is an object schema Ajv accepts. */
export function compileResponseFormat(schema: Record<string, unknown> | null | undefined): ((v: unknown) => boolean) & { errors?: any[] } | undefined {
  if (schema == null) return undefined;
  if (schema.type !== 'object') throw validation("Invalid response_format: root type must be 'object'");
  try {
    return ajv.compile(schema);
  } catch (err) {
    throw validation(`Invalid response_format: ${(err as Error).message}`);
  }
}

/** What the dialectic read while answering (the SDK's `Evidence`): no agent tools run here, so `tool_calls` is empty. */
export interface Evidence {
  conclusions: Array<{ id: string; level: string; content: string; created_at: string; session_id: string | null; source_ids: string[] }>;
  messages: Array<{ id: string; session_id: string; peer_id: string; created_at: string }>;
  tool_calls: Array<{ tool_name: string; tool_input: Record<string, unknown> }>;
  reasoning_trace_id: string | null;
}

export interface Prepared {
  observer: string;
  /** The peer asked about; '' for a workspace-wide question. */
  observed: string;
  facts: string[];
  recent: Array<{ peer: string; content: string }>;
  evidence: Evidence;
  messages: ChatMessage[];
  check?: ((v: unknown) => boolean) & { errors?: any[] };
  schema?: Record<string, unknown>;
}

/** Validation, then retrieval: the pair's conclusions relevant to the query and the recent messages in scope. */
export async function prepareChat(ctx: Ctx, workspace: string, peer: string, o: DialecticOptions): Promise<Prepared> {
  const scope = scopeOption(o);
  refuseScopePeers([peer, o.target], 'No representation is formed of a scope, so a scope cannot be a chat observer or target.');
  exclusiveScope(scope, o);
  const allow = sessionAllowlist(o.filters, o.session_id);
  const check = compileResponseFormat(o.response_format);
  await ctx.storage.db.transaction().execute((trx) => ensurePeers(trx, ctx, workspace, [{ id: peer }]));
  if (o.session_id) await requireSession(ctx.storage.db, workspace, o.session_id);
  let observer = peer;
  const observed = o.target ?? peer;
  let sessions = allow ?? (o.session_id ? [o.session_id] : undefined);
  let messageSessions = sessions;
  if (scope !== undefined) {
    // One scope: its own conclusions, its sessions' messages; a list: the union of their sessions for both.
    const r = await resolveScopeOption(ctx, workspace, scope);
    observer = r.observer ?? peer;
    sessions = r.observer ? undefined : r.sessions;
    messageSessions = r.sessions;
  }
  const found = await recallConclusions(ctx, workspace, { observer, observed, sessions }, o.query, RECALL[o.reasoning_level ?? 'low'] ?? 10);
  const recent = await recentMessages(ctx, workspace, messageSessions, observed);
  return assemble(o, observer, observed, found, recent, check, `conclusions about ${observed}`);
}

/** The `scope` option, checked (pydantic's 422s for a bad name or list). */
function scopeOption(o: DialecticOptions): string | string[] | undefined {
  return checkScopeOption(o.scope, ['body', 'scope']);
}

/** The reference's exclusions: a scope already decides what is seen, so `filters` or `session_id` beside it is a 422. */
export function exclusiveScope(scope: unknown, o: { filters?: unknown; session_id?: string | null }): void {
  if (scope === undefined) return;
  if (o.filters != null) throw validation('`scope` and `filters` are mutually exclusive');
  if (o.session_id) throw validation('`scope` and `session_id` are mutually exclusive');
}

/**
 * `POST /v3/workspaces/{w}/chat` (SDK 2.5's `honcho.chat`): the same
 * dialectic over the whole workspace — conclusions of every observer/observed
 * pair relevant to the query, and the newest messages of the workspace (or
 * of `session_id`).
 */
export async function prepareWorkspaceChat(ctx: Ctx, workspace: string, o: DialecticOptions): Promise<Prepared> {
  const scope = scopeOption(o);
  exclusiveScope(scope, o);
  const check = compileResponseFormat(o.response_format);
  await requireWorkspace(ctx.storage.db, workspace);
  if (o.session_id) await requireSession(ctx.storage.db, workspace, o.session_id);
  let sessions = o.session_id ? [o.session_id] : undefined;
  let messageSessions = sessions;
  let observer: string | undefined;
  if (scope !== undefined) {
    const r = await resolveScopeOption(ctx, workspace, scope);
    observer = r.observer;
    sessions = r.observer ? undefined : r.sessions;
    messageSessions = r.sessions;
  }
  const found = await recallConclusions(ctx, workspace, { observer, observed: undefined, sessions }, o.query, RECALL[o.reasoning_level ?? 'low'] ?? 10);
  const recent = await recentMessages(ctx, workspace, messageSessions ?? null, undefined);
  return assemble(o, '', '', found, recent, check, 'conclusions about the peers of this workspace');
}

/** The newest messages of the sessions given (all sessions when null), else those `peer` sent. */
async function recentMessages(ctx: Ctx, workspace: string, sessions: string[] | null | undefined, peer: string | undefined): Promise<any[]> {
  let q = ctx.storage.db.selectFrom('v3_messages').select(['id', 'session', 'peer', 'content', 'created_at']).where('workspace', '=', workspace) as any;
  if (sessions) q = sessions.length ? q.where('session', 'in', sessions) : q.where('id', '=', '');
  else if (peer !== undefined) q = q.where('peer', '=', peer);
  return ((await q.orderBy('seq', 'desc').limit(RECENT_MESSAGES).execute()) as any[]).reverse();
}

function assemble(o: DialecticOptions, observer: string, observed: string, found: any[], recent: any[], check: Prepared['check'], heading: string): Prepared {
  const facts = found.map((r: any) => String(r.content));
  const parts: string[] = [];
  if (facts.length) parts.push(`${heading}:\n` + facts.map((f) => `- ${f}`).join('\n'));
  if (recent.length) parts.push('recent messages:\n' + recent.map((m) => `${m.peer}: ${m.content}`).join('\n'));
  let prompt = dialecticPrompt(o.query, parts.length ? parts.join('\n\n') : 'None');
  if (o.response_format) prompt += `\n\nAnswer only with a JSON object that validates against this JSON Schema:\n${JSON.stringify(o.response_format)}`;
  const evidence: Evidence = {
    conclusions: found.map((r: any) => ({ id: r.id, level: r.level, content: r.content, created_at: r.created_at, session_id: r.session_id ?? null, source_ids: [] })),
    messages: recent.map((m) => ({ id: m.id, session_id: m.session, peer_id: m.peer, created_at: ts(m.created_at) })),
    tool_calls: [],
    reasoning_trace_id: null,
  };
  return { observer, observed, facts, recent: recent.map((m) => ({ peer: m.peer, content: m.content })), evidence, messages: [{ role: 'user', content: prompt }], check, schema: o.response_format ?? undefined };
}

/** The answer without a model: the most relevant conclusions (and facts stated in recent messages), best first. */
export function extractive(p: Prepared, query: string): string[] {
  const stated = p.recent.filter((m) => !p.observed || m.peer === p.observed).flatMap((m) => extractFacts(m.content).map((f) => aboutPeer(f, m.peer)));
  // The peer's name is the subject every fact shares: it stands where "the user" stood in the seed's facts.
  const focusName = (t: string) => (p.observed ? t.split(p.observed).join('the user') : t);
  return bestDistinctFacts([...p.facts, ...stated], (fact) => Math.max(relevance(query, fact), relevance(focusName(query), focusName(fact))));
}

/** A value of `schema` built from the extractive answer (strings get the answer, lists the facts). */
function fill(schema: any, answer: string, facts: string[]): unknown {
  if (!schema || typeof schema !== 'object') return answer;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, s] of Object.entries(schema.properties ?? {})) out[k] = fill(s, answer, facts);
      return out;
    }
    case 'array':
      return facts.map((f) => fill(schema.items ?? { type: 'string' }, f, [f]));
    case 'boolean':
      return facts.length > 0;
    case 'integer':
    case 'number':
      return facts.length;
    case 'null':
      return null;
    default:
      return answer;
  }
}

const LLM_FAILED = 'LLM request failed';

/** The answer text: the model's (checked against response_format) or the extractive one. */
export async function answer(p: Prepared, query: string, llm: LlmClient | undefined): Promise<string> {
  if (!llm) {
    const facts = extractive(p, query);
    const text = facts.length ? facts.join(' ') : p.observed ? `I don't have enough information about ${p.observed} to answer that.` : "I don't have enough information to answer that.";
    if (!p.check) return text;
    const value = fill(p.schema, text, facts);
    if (!p.check(value)) throw validation(`response_format cannot be satisfied without a configured LLM: ${ajv.errorsText(p.check.errors)}`);
    return JSON.stringify(value);
  }
  let text: string;
  try {
    text = await llm.complete(p.messages);
  } catch (err) {
    if (err instanceof LlmError) throw detailError(502, LLM_FAILED);
    throw err;
  }
  if (!p.check) return text;
  const json = /\{[\s\S]*\}/.exec(text)?.[0];
  let value: unknown;
  try {
    value = json ? JSON.parse(json) : undefined;
  } catch {
    value = undefined;
  }
  if (value === undefined || !p.check(value)) throw detailError(502, 'The model did not produce a response matching response_format');
  return JSON.stringify(value);
}
