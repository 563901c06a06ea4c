import { loadConfig, runService } from '@svc/kernel';
import { buildApp } from './app.ts';

const cfg = loadConfig('memory', { port: 8000 });
await runService('memory', cfg, buildApp);
