import { parseAllDocuments } from 'yaml';

/** Most records one YAML import takes (as the API's bulk limit). */
const MAX_RECORDS = 1000;
/** Aliases are expanded once each, at most this many: an alias bomb ("billion laughs") is refused, not expanded. */
const MAX_ALIASES = 100;

/**
 * NetBox's YAML bulk import: one document holding a list of objects, or one object per document
 * (`---` between them). YAML 1.2 core schema (no custom tags, no code); errors name the line.
 */
export function parseYamlRecords(text: string): { records: Record<string, unknown>[] } | { error: string } {
  let docs;
  try {
    docs = parseAllDocuments(text, { schema: 'core', uniqueKeys: true, prettyErrors: true });
  } catch (err) {
    return { error: `Invalid YAML: ${err instanceof Error ? err.message : String(err)}` };
  }
  const list = Array.isArray(docs) ? docs : [docs];
  const records: Record<string, unknown>[] = [];
  for (const doc of list) {
    const problem = doc.errors[0];
    if (problem) return { error: `Invalid YAML: ${problem.message.split('\n')[0]}` };
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIASES });
    } catch (err) {
      return { error: `Invalid YAML: ${err instanceof Error ? err.message : String(err)}` };
    }
    if (value === null || value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      if (!item || typeof item !== 'object' || Array.isArray(item)) return { error: 'Each YAML record must be a mapping of field names to values.' };
      records.push(item as Record<string, unknown>);
      if (records.length > MAX_RECORDS) return { error: `Too many records: at most ${MAX_RECORDS} per import.` };
    }
  }
  return { records };
}
