// Placeholder with the contract's signature so the core compiles; Owner B replaces this file.
import type { FastifyInstance } from 'fastify';
import type { MemoryDeps } from '../search/index.ts';

export async function chatRoutes(_app: FastifyInstance, _deps: MemoryDeps): Promise<void> {}
