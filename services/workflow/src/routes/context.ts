import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { NodeScope } from '../nodes/api.ts';

/** What every route module needs beyond its own domain: whose data a request sees. */
export interface RouteCtx {
  /** The owner scope of a request: '' in single-user mode, the Comfy-User id with --multi-user. */
  owner(req: FastifyRequest): string;
  /** Owner filter for queries: undefined when everything is visible (single-user local runtime). */
  scope(req: FastifyRequest): string | undefined;
  storageDb(): Kysely<any>;
  /** Whether the request's owner owns the prompt (always true when everything is visible). */
  ownsPrompt(req: FastifyRequest, promptId: string): Promise<boolean>;
  /** The request's file folders (the hosted runtime gives each workspace its own input folder). */
  folders(req: FastifyRequest): NodeScope;
}
