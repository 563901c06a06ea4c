import { loadConfig, runService } from '@svc/kernel';
import { buildApp, openWorkflowStorage } from './app.ts';
import { compileBaselineFirst } from './runtime/eager-baseline.ts';

const cfg = loadConfig('workflow', { port: 8188 });
if (process.argv[2] === 'create-user') {
  const { createUserCommand } = await import('./cli/create-user.ts');
  process.exitCode = await createUserCommand(cfg, openWorkflowStorage);
} else if (process.argv[2] === 'hub-moderate') {
  const { hubModerateCommand } = await import('./cli/hub-moderate.ts');
  process.exitCode = await hubModerateCommand(cfg, openWorkflowStorage);
} else if (process.argv[2] === 'worker') {
  const { runWorker } = await import('./worker.ts');
  await runWorker(cfg, openWorkflowStorage);
  compileBaselineFirst();
} else {
  await runService('workflow', cfg, buildApp);
  compileBaselineFirst();
  // The image library loads on first use; load it soon after start so the first
  // image request does not pay for it, but not before the first requests are served.
  const { warmSharp } = await import('./files/sharp.ts');
  setTimeout(warmSharp, 2000).unref();
}
