import type { TaskHandler } from '@svc/queue';
import { DERIVE_TASK, derivationDisabled } from '../domain/derivation-jobs.ts';
import { formatConversation, honchoCollectionId, loadMessage, novelFacts, recentMessages, storeFacts } from '../domain/facts.ts';
import { readBool, readJson } from '../domain/values.ts';
import { extractFacts } from '../chat/extract-facts.ts';
import { createLlm, llmSettings, type LlmClient } from '../chat/llm.ts';
import { checkDuplicateFactsPrompt, deriveFactsPrompt, parseNumberedList } from '../chat/prompts.ts';
import { createSearch, type MemoryDeps } from '../search/index.ts';
import { REINDEX_TASK, reindexTask } from './reindex.ts';

/** Messages of context the LLM sees, as the reference (last 10). */
const CONTEXT_MESSAGES = 10;

/** Serialises derivations per user inside this process, so two messages cannot both add the same fact. */
class KeyedMutex {
  #tails = new Map<string, Promise<void>>();
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.#tails.set(key, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}

async function llmCandidates(llm: LlmClient, deps: MemoryDeps, sessionId: string, seq: number): Promise<string[]> {
  const conversation = formatConversation(await recentMessages(deps.storage.db, sessionId, CONTEXT_MESSAGES, seq));
  return parseNumberedList(await llm.complete([{ role: 'user', content: deriveFactsPrompt(conversation) }]));
}

/** The memory service's background tasks: fact derivation, and re-embedding after a provider change. */
export function deriverTasks(deps: MemoryDeps): Record<string, TaskHandler> {
  const mutex = new KeyedMutex();
  return {
    [REINDEX_TASK]: reindexTask(deps),
    [DERIVE_TASK]: async (payload: { message_id?: unknown; session_id?: unknown }) => {
      if (typeof payload?.message_id !== 'string' || typeof payload?.session_id !== 'string') return;
      const { storage } = deps;
      const msg = await loadMessage(storage, payload.message_id, payload.session_id);
      // Gone, not the user's, or the session opted out since the job was queued.
      if (!msg || !readBool(msg.is_user) || derivationDisabled(readJson(msg.session_metadata))) return;
      const search = createSearch(deps);
      const llm = createLlm(llmSettings(deps.config));
      const candidates = llm ? await llmCandidates(llm, deps, payload.session_id, Number(msg.seq)) : extractFacts(msg.content);
      if (candidates.length === 0) return;
      await mutex.run(msg.user_id, async () => {
        const collectionId = await honchoCollectionId(storage, msg.user_id);
        let { novel, similarExisting } = await novelFacts(search, collectionId, candidates);
        if (llm && novel.length && similarExisting.length) {
          // The reference's second pass: the model drops facts the known ones already cover.
          const answer = await llm.complete([{ role: 'user', content: checkDuplicateFactsPrompt(similarExisting, novel) }]);
          novel = parseNumberedList(answer);
        }
        await storeFacts(storage, search, collectionId, novel, { source: 'deriver', message_id: payload.message_id, session_id: payload.session_id });
      });
    },
  };
}
