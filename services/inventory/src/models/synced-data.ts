import { parse as parseYaml } from 'yaml';
import type { ReadCtx, Row } from './types.ts';

/**
 * NetBox's SyncedDataMixin on config contexts and templates: `data_source` + `data_path` name a data file; saving
 * takes the file's content (a context's `data` from its JSON/YAML, a template's `template_code` from its text) and
 * stamps `data_synced`; without a source the link is cleared. `auto_sync_enabled` objects are refreshed after each sync
 * of their source (see routes/core-data-sources.ts).
 */

/** The file's bytes as the synced object's content: a template's text, or a context's data (a JSON/YAML mapping). */
export function contentOf(kind: 'context' | 'template', data: Buffer): { value: unknown } | { error: string } {
  const text = data.toString('utf8');
  if (kind === 'template') return { value: text };
  let parsed: unknown;
  try {
    parsed = parseYaml(text, { maxAliasCount: 100 });
  } catch (err) {
    return { error: `The data file is not valid JSON or YAML: ${String((err as Error).message).split('\n')[0]!.slice(0, 200)}` };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { error: 'JSON data must be in object form. Example: {"foo": 123}' };
  return { value: parsed };
}

/**
 * Resolves the data file of a write (`values` gets data_file_id, data_synced and the content column) or reports
 * why it cannot be: `data_path` names no file of the source.
 */
export async function resolveSyncedData(ctx: ReadCtx, kind: 'context' | 'template', values: Row, existing: Row | null, errors: Record<string, string[]>): Promise<void> {
  if (!('data_source_id' in values) && !('data_path' in values)) return;
  const at = (c: string) => (c in values ? values[c] : existing?.[c]);
  const source = at('data_source_id');
  if (source === null || source === undefined) {
    Object.assign(values, { data_source_id: null, data_file_id: null, data_path: '', auto_sync_enabled: false, data_synced: null });
    return;
  }
  const p = String(at('data_path') ?? '');
  const file = p ? await ctx.db.selectFrom('core_datafile').select(['id', 'data']).where('source_id', '=', source).where('path', '=', p).executeTakeFirst() : undefined;
  if (!file) {
    (errors.data_path ??= []).push(p ? `No data file at this path in the data source: ${p.slice(0, 300)}` : 'A data path is required with a data source.');
    return;
  }
  const content = contentOf(kind, Buffer.from(file.data));
  if ('error' in content) return void (errors.data_path ??= []).push(content.error);
  Object.assign(values, { data_file_id: Number(file.id), data_synced: new Date().toISOString(), [kind === 'context' ? 'data' : 'template_code']: content.value });
}
