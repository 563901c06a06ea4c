import { detailError, HttpError } from '@svc/kernel';
import { isUniqueViolation } from './values.ts';

/** The reference's exact detail strings (memory.md §4.1), plus 404/406 where it answered 500. */
export const D = {
  app: 'App not found',
  user: 'User not found',
  session: 'Session not found',
  collection: 'collection not found or does not belong to user',
  document: 'document not found or does not belong to user',
  appExists: 'App with name may already exist',
  userExists: 'User with name may already exist',
  collectionReserved: 'error invalid collection configuration - honcho is a reserved name',
  collectionExists: 'Error invalid collection configuration - name may already exist',
  sessionMetaEmpty: 'Session metadata cannot be empty',
  messageMetaEmpty: 'Message metadata cannot be empty',
  metamessageMetaEmpty: 'Metamessage metadata cannot be empty',
  documentBothNone: 'content and metadata cannot both be None',
} as const;

export const notFound = (detail: string) => detailError(404, detail);
export const conflict = (detail: string) => detailError(406, detail);
export const badRequest = (detail: string) => detailError(400, detail);

/** Runs a write whose unique-key clash (a name already taken) is the client's 406 with `detail`. */
export async function conflictOnUnique<T>(detail: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(detail);
    throw err;
  }
}

/** A FastAPI-shaped 422 for a value the schema cannot express (bad filter JSON, NUL bytes, …). */
export function invalid(loc: Array<string | number>, type: string, msg: string, input: unknown, ctx?: Record<string, unknown>): HttpError {
  const entry: Record<string, unknown> = { type, loc, msg, input };
  if (ctx) entry.ctx = ctx;
  return new HttpError(422, { detail: [entry] });
}
