import type { PromptRecord } from './prompts.ts';

/** The queue tuple: [number, prompt_id, prompt, extra_data, outputs_to_execute] (the sensitive element is never sent). */
export function queueTuple(r: PromptRecord): unknown[] {
  return [r.number, r.id, r.prompt, r.extraData, r.outputsToExecute];
}

function statusStr(r: PromptRecord): 'success' | 'error' {
  return r.status === 'completed' ? 'success' : 'error';
}

/** A /history entry. */
export function historyEntry(r: PromptRecord): Record<string, unknown> {
  return {
    prompt: queueTuple(r),
    outputs: r.outputs ?? {},
    status: { status_str: statusStr(r), completed: r.status === 'completed', messages: r.statusMessages ?? [] },
    meta: r.meta ?? {},
  };
}

const PREVIEWABLE = new Set(['images', 'video', 'audio', 'animated', 'gifs', '3d', 'model_3d']);

function mediaTypeOf(key: string): string {
  return key === 'gifs' ? 'video' : key;
}

/** outputs_count and preview_output: every output item counts; the first previewable one (type "output" first) is the preview. */
export function outputsSummary(outputs: Record<string, Record<string, unknown>> | null): { count: number; preview: Record<string, unknown> | undefined } {
  let count = 0;
  let preview: Record<string, unknown> | undefined;
  let fallback: Record<string, unknown> | undefined;
  for (const [nodeId, nodeOut] of Object.entries(outputs ?? {})) {
    if (!nodeOut || typeof nodeOut !== 'object') continue;
    for (const [key, items] of Object.entries(nodeOut)) {
      if (key === 'animated' || !Array.isArray(items)) continue;
      for (const item of items) {
        count++;
        if (preview || !item || typeof item !== 'object' || !PREVIEWABLE.has(key) || !('filename' in item)) continue;
        const enriched = { ...(item as object), nodeId, mediaType: mediaTypeOf(key) };
        if ((item as { type?: unknown }).type === 'output') preview = enriched;
        else fallback ??= enriched;
      }
    }
  }
  return { count, preview: preview ?? fallback };
}

function prune(o: Record<string, unknown>): Record<string, unknown> {
  for (const k of Object.keys(o)) if (o[k] === null || o[k] === undefined) delete o[k];
  return o;
}

function messageTimes(r: PromptRecord): { start?: number; end?: number; error?: Record<string, unknown> } {
  const out: { start?: number; end?: number; error?: Record<string, unknown> } = {};
  for (const [event, data] of r.statusMessages ?? []) {
    if (event === 'execution_start') out.start = data.timestamp as number;
    else if (event === 'execution_success' || event === 'execution_error' || event === 'execution_interrupted') {
      out.end = data.timestamp as number;
      if (event === 'execution_error') out.error = data;
    }
  }
  return out;
}

/** A /api/jobs entry (nulls pruned, as the reference). */
export function jobEntry(r: PromptRecord): Record<string, unknown> {
  const workflowId = r.workflowId ?? (r.extraData?.extra_pnginfo?.workflow?.id as string | undefined);
  if (r.status === 'pending' || r.status === 'in_progress') {
    return prune({ id: r.id, status: r.status, priority: r.number, create_time: r.createTime, outputs_count: 0, workflow_id: workflowId, workflow_version_id: r.workflowVersionId });
  }
  const t = messageTimes(r);
  const { count, preview } = outputsSummary(r.outputs as Record<string, Record<string, unknown>> | null);
  return prune({
    id: r.id,
    status: r.status,
    priority: r.number,
    create_time: r.createTime,
    execution_start_time: t.start ?? r.startTime,
    execution_end_time: t.end ?? r.endTime,
    execution_error: t.error,
    outputs_count: count,
    preview_output: preview,
    workflow_id: workflowId,
    workflow_version_id: r.workflowVersionId,
  });
}

/** GET /api/jobs/{id}: the entry plus outputs, execution_status and the workflow that ran. */
export function jobDetail(r: PromptRecord): Record<string, unknown> {
  const job = jobEntry(r);
  const finished = r.status !== 'pending' && r.status !== 'in_progress';
  job.update_time = r.endTime ?? r.startTime ?? r.createTime;
  job.outputs = r.outputs ?? {};
  if (finished) job.execution_status = { status_str: statusStr(r), completed: r.status === 'completed', messages: r.statusMessages ?? [] };
  job.workflow = { prompt: r.prompt, extra_data: r.extraData };
  return job;
}
