import { loadConfig, runService } from '@svc/kernel';
import { buildApp } from './app.ts';

const cfg = loadConfig('workflow', { port: 8188 });
await runService('workflow', cfg, buildApp);
