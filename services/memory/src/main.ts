import { loadConfig, runService } from '@svc/kernel';
import { buildApp } from './app.ts';
import { tuneRuntime } from './runtime.ts';

tuneRuntime();

const cfg = loadConfig('memory', { port: 8000 });
await runService('memory', cfg, buildApp);
