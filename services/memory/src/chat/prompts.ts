/**
 * Prompts of the reference (api/src/prompts/*.yaml in Honcho v0.0.5). The
 * dialectic prompt is quoted verbatim; the deriver's two are reconstructed
 * from the reference's description of them.
 */

export function dialecticPrompt(query: string, context: string): string {
  return `You are tasked with responding to the query based on the context provided.
---
query: ${query}
context: ${context}
---
Provide a brief, matter-of-fact, and appropriate response to the query based on the context provided. If the context provided doesn't aid in addressing the query, return None.`;
}

export function deriveFactsPrompt(conversation: string): string {
  return `You are tasked with deriving discrete facts about the user based on their latest message and the conversation so far.
---
conversation:
${conversation}
---
Only derive facts the user stated or clearly implied about themselves, each one short, self-contained and starting with "The user". Output the facts as a numbered list. If there are no facts to derive, output None.`;
}

export function checkDuplicateFactsPrompt(existing: string[], candidates: string[]): string {
  return `You are tasked with comparing new facts about the user to facts already known, and keeping only the new facts that are unique.
---
existing facts:
${existing.map((f, i) => `${i + 1}. ${f}`).join('\n')}
new facts:
${candidates.map((f, i) => `${i + 1}. ${f}`).join('\n')}
---
Keep only the new facts that are not already covered by an existing fact; output the remaining facts as a numbered list. If none remain, print None.`;
}

/** The items of a numbered list in a model's answer ("1. …", "2) …"); "None" gives []. */
export function parseNumberedList(text: string, max = 20): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*\d{1,3}[.)]\s+(.+?)\s*$/.exec(line);
    if (!m) continue;
    const item = m[1]!.slice(0, 500);
    if (/^none\.?$/i.test(item)) continue;
    out.push(item);
    if (out.length >= max) break;
  }
  return out;
}
