import type { Storage } from '@svc/storage';
import { extractFacts } from '../chat/extract-facts.ts';
import { DUPLICATE_COSINE, formatConversation, honchoCollectionId, recentMessages, type RecentMessage } from './facts.ts';
import { dot, localEmbedding } from '../search/embedding.ts';
import type { Search } from '../search/index.ts';
import { analyze } from '../search/text.ts';
import { dialecticPrompt } from '../chat/prompts.ts';
import type { ChatMessage } from '../chat/llm.ts';

/** Facts retrieved from the "honcho" collection per question. */
const FACTS_RETRIEVED = 5;
/** Recent session messages used as context. */
const RECENT_MESSAGES = 10;
/** Facts in an extractive answer. */
const ANSWER_FACTS = 3;
/**
 * A fact is relevant to a question when the cosine similarity of their local
 * embeddings, after removing the subject words every fact shares ("the
 * user", "my", …), reaches this. Facts sharing no content stem with the question
 * score 0; sharing one ("live" / "lives in Lyon") scores about 0.3 to 0.8, a
 * stray common word in a long fact less.
 */
export const RELEVANCE_THRESHOLD = 0.25;

export interface DialecticContext {
  facts: string[];
  recent: RecentMessage[];
}

/** Retrieval for one question: the best facts about the user and the session's recent messages. */
export async function gatherContext(storage: Storage, search: Search, session: { id: string; user_id: string }, query: string): Promise<DialecticContext> {
  const collectionId = await honchoCollectionId(storage, session.user_id);
  const rows = await search.query(collectionId, query, FACTS_RETRIEVED);
  const recent = await recentMessages(storage.db, session.id, RECENT_MESSAGES);
  return { facts: rows.map((r) => String(r.content)), recent };
}

/** The prompt of the reference's dialectic agent, with facts and the recent conversation as context. */
export function dialecticMessages(query: string, ctx: DialecticContext): ChatMessage[] {
  const parts: string[] = [];
  if (ctx.facts.length) parts.push('facts about the user:\n' + ctx.facts.map((f) => `- ${f}`).join('\n'));
  if (ctx.recent.length) parts.push('recent conversation:\n' + formatConversation(ctx.recent));
  return [{ role: 'user', content: dialecticPrompt(query, parts.length ? parts.join('\n\n') : 'None') }];
}

function focus(text: string): string {
  return text.replace(/\bthe user(?:'s)?\b/gi, ' ').replace(/\b(?:users?|i|me|my|mine|myself|you|your|yours|their|they|them)\b/gi, ' ');
}

/**
 * How relevant a fact is to a question, in [-1, 1] (see RELEVANCE_THRESHOLD):
 * 0 without a content stem in common, since hashed features of unrelated
 * short texts can collide up to about 0.2.
 */
export function relevance(query: string, fact: string): number {
  const q = focus(query);
  const f = focus(fact);
  const factStems = new Set(analyze(f).stems);
  if (!analyze(q).stems.some((s) => factStems.has(s))) return 0;
  return dot(localEmbedding(q), localEmbedding(f));
}

/**
 * The answer without a model: the most relevant known facts (retrieved, plus
 * those stated in the session's recent user messages), or "None" when
 * nothing reaches the relevance threshold — the reference prompt's contract.
 */
export function extractiveAnswer(query: string, ctx: DialecticContext): string {
  const candidates = [...ctx.facts, ...ctx.recent.filter((m) => m.is_user).flatMap((m) => extractFacts(m.content))];
  const chosen = bestDistinctFacts(candidates, (fact) => relevance(query, fact));
  return chosen.length === 0 ? 'None' : chosen.join(' ');
}

/**
 * The facts that reach the relevance threshold, best first (ties in the
 * order given), skipping any that says nearly what a chosen one says, at most
 * ANSWER_FACTS of them, each ending as a sentence.
 */
export function bestDistinctFacts(candidates: string[], score: (fact: string) => number): string[] {
  const scored = candidates
    .map((fact, i) => ({ fact, i, score: score(fact) }))
    .filter((c) => c.score >= RELEVANCE_THRESHOLD)
    .sort((a, b) => b.score - a.score || a.i - b.i);
  const chosen: Array<{ fact: string; v: Float32Array }> = [];
  for (const c of scored) {
    const v = localEmbedding(c.fact);
    if (chosen.some((x) => dot(x.v, v) >= DUPLICATE_COSINE)) continue;
    chosen.push({ fact: c.fact, v });
    if (chosen.length >= ANSWER_FACTS) break;
  }
  return chosen.map((c) => (/[.!?]$/.test(c.fact) ? c.fact : c.fact + '.'));
}
