import type { ServiceConfig } from '@svc/kernel';
import type { Storage } from '@svc/storage';
import { moderateHubWorkflow, pendingHubWorkflows } from '../domain/cloud/hub-moderation.ts';
import { HUB_STATUSES, type HubStatus } from '../domain/cloud/hub.ts';

const USAGE = 'usage: hub-moderate --list | --share-id <id> --status approved|rejected|deprecated|pending [--data-dir <dir>]\n';

/**
 * `hub-moderate`: the operator's side of --hub-moderation. `--list` prints
 * the pending publications (share id, workspace, name); `--share-id` with
 * `--status` decides one. Returns the process exit code.
 */
/** Where the command writes its lines (process.stdout and process.stderr, or a test's collector). */
export interface TextSink {
  write(text: string): unknown;
}

export async function hubModerateCommand(cfg: ServiceConfig, open: (cfg: ServiceConfig) => Promise<Storage>, out: TextSink = process.stdout, err: TextSink = process.stderr): Promise<number> {
  const f = cfg.flags;
  const list = f.list === true;
  const shareId = typeof f.shareId === 'string' ? f.shareId : undefined;
  const status = typeof f.status === 'string' ? (f.status as HubStatus) : undefined;
  if (!list && (!shareId || !status || !HUB_STATUSES.includes(status))) {
    err.write(`hub-moderate: ${!list && !shareId ? 'give --list or --share-id' : `--status must be one of ${HUB_STATUSES.join(', ')}`}\n${USAGE}`);
    return 2;
  }
  const storage = await open(cfg);
  try {
    if (list) {
      for (const r of await pendingHubWorkflows(() => storage.db)) out.write(`${r.share_id}\t${r.workspace_id}\t${new Date(Number(r.updated_at)).toISOString()}\t${r.name}\n`);
      return 0;
    }
    if (!(await moderateHubWorkflow(() => storage.db, shareId!, status!))) {
      err.write(`hub-moderate: no hub workflow with share id ${shareId}\n`);
      return 1;
    }
    out.write(`${shareId} ${status}\n`);
    return 0;
  } finally {
    await storage.close();
  }
}
