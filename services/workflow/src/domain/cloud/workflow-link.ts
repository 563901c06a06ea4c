import { safeColumnText } from '../prompts.ts';

/**
 * The saved workflow (and version) a queued prompt came from: `workflow_id`
 * and `workflow_version_id` at the top of the request (hosted clients) or in
 * extra_data, else the frontend's graph id in extra_pnginfo. Top-level ids
 * are copied into extra_data so history shows them.
 */
export function workflowLink(body: Record<string, unknown>, extraData: Record<string, unknown>): { workflowId: string | null; workflowVersionId: string | null } {
  for (const k of ['workflow_id', 'workflow_version_id'] as const) {
    const v = body[k];
    if (typeof v === 'string' && safeColumnText(v) !== null) extraData[k] = v;
  }
  const pnginfo = (extraData.extra_pnginfo as { workflow?: { id?: unknown } } | undefined)?.workflow?.id;
  return {
    workflowId: safeColumnText(extraData.workflow_id) ?? safeColumnText(pnginfo),
    workflowVersionId: safeColumnText(extraData.workflow_version_id),
  };
}
