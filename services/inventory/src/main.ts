import { loadConfig, runService } from '@svc/kernel';
import { buildApp } from './app.ts';

const cfg = loadConfig('inventory', { port: 8080 });
const app = await runService('inventory', cfg, buildApp);
if (app.generatedAdminToken) {
  // Shown once: only its hash is stored.
  process.stdout.write(`Created superuser "admin" with API token (shown only now): ${app.generatedAdminToken}\n`);
}
