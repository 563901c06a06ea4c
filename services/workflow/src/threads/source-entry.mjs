// Starts an execution thread from the TypeScript sources (tests, `tsx src/main.ts`): a worker thread does
// not inherit tsx's loader, so it is registered here before the entry is imported. The bundle
// (scripts/run-service.mjs) starts its own compiled entry instead.
import { register } from 'tsx/esm/api';

register();
await import('./execution-thread.ts');
