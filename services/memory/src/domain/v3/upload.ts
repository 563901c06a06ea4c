import type { FastifyRequest } from 'fastify';
import { detailError, HttpError } from '@svc/kernel';
import type { Ctx } from '../context.ts';
import { extractText, MAX_FILE_SIZE, splitText } from './files.ts';
import { createMessages } from './messages.ts';
import { parseIsoTime } from './util.ts';

const missing = (field: string) => new HttpError(422, { detail: [{ type: 'missing', loc: ['body', field], msg: 'Field required', input: null }] });

/** Form fields the reference parses leniently: bad JSON or a bad date is dropped, not refused. */
function jsonField(v: string | undefined): any {
  if (!v) return undefined;
  try {
    const x = JSON.parse(v);
    return x && typeof x === 'object' && !Array.isArray(x) ? x : undefined;
  } catch {
    return undefined;
  }
}

/** Reads the multipart form of `messages/upload` and stores the file's text as messages (one per chunk). */
export async function uploadMessages(ctx: Ctx, req: FastifyRequest, workspace: string, session: string) {
  if (!req.isMultipart()) throw missing('file');
  const fields: Record<string, string> = {};
  let file: { bytes: Buffer; type: string; name: string } | undefined;
  try {
    for await (const part of req.parts({ limits: { fileSize: MAX_FILE_SIZE, files: 1, fields: 20, fieldSize: 1024 * 1024 } })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || file) {
          await part.toBuffer();
          continue;
        }
        const bytes = await part.toBuffer();
        if ((part.file as any).truncated) throw detailError(413, `File size exceeds maximum allowed size (${MAX_FILE_SIZE} bytes)`);
        file = { bytes, type: part.mimetype || 'application/octet-stream', name: part.filename };
      } else if (typeof part.value === 'string') fields[part.fieldname] = part.value;
    }
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const code = (err as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw detailError(413, `File size exceeds maximum allowed size (${MAX_FILE_SIZE} bytes)`);
    if (code?.startsWith('FST_')) throw detailError(400, (err as Error).message);
    throw err;
  }
  if (!file) throw missing('file');
  if (!fields.peer_id) throw missing('peer_id');
  const text = await extractText(file.bytes, file.type);
  if (!text) return [];
  const metadata = jsonField(fields.metadata);
  const configuration = jsonField(fields.configuration);
  const createdAt = fields.created_at ? parseIsoTime(fields.created_at)?.toISOString() : undefined;
  const chunks = splitText(text);
  return createMessages(
    ctx,
    workspace,
    session,
    chunks.map((content) => ({ peer_id: fields.peer_id!, content, metadata, configuration, created_at: createdAt })),
  );
}
