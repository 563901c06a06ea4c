import fs from 'node:fs';
import path from 'node:path';
import send from '@fastify/send';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fileInfo, listFiles, listTree } from '../domain/userdata.ts';
import { safeContentType } from '../domain/view.ts';
import { UnknownUserError, type UserManager } from '../domain/users.ts';
import { pyUnquote, UnsafePathError, WRITE_FLAGS } from '../files/paths.ts';
import { dual } from './common.ts';
import { queryFlag, queryString, sendText } from './replies.ts';
import { comfyUserHeader } from './users.ts';

/** Thrown by the resolvers below to end a request with the reference's text answer. */
class Answer extends Error {
  constructor(
    readonly status: number,
    readonly text: string,
  ) {
    super(text);
  }
}

export interface UserdataOptions {
  maxUploadSize: number;
}

/**
 * The reference's userdata routes: files under `user/<id>/`, names from the
 * path (with `%2F` for folders, decoded once more as the reference does) or
 * the query. Every name is resolved by files/paths.ts; traversal is 403,
 * an unknown user 401, and answers are the reference's texts.
 */
export function userdataRoutes(app: FastifyInstance, users: UserManager, opts: UserdataOptions): void {
  const userOf = (req: FastifyRequest): string => {
    try {
      return users.userId(req.headers['comfy-user']);
    } catch (err) {
      if (err instanceof UnknownUserError) throw new Answer(401, '401: Unauthorized');
      throw err;
    }
  };
  const rootOf = (user: string): string => {
    try {
      return users.userRoot(user);
    } catch (err) {
      if (err instanceof UnsafePathError) throw new Answer(403, 'Invalid user');
      throw err;
    }
  };
  /** A file named by a path parameter; `status403` is the reference's answer for a name that leaves the user's folder. */
  const fileOf = (req: FastifyRequest, param: 'file' | 'dest'): string => {
    const raw = (req.params as Record<string, string>)[param];
    if (!raw) throw new Answer(400, '400: Bad Request');
    const user = userOf(req);
    try {
      return users.userPath(user, pyUnquote(raw));
    } catch (err) {
      if (err instanceof UnsafePathError) throw new Answer(err.status === 400 ? 400 : 403, err.status === 400 ? 'Invalid filename' : '403: Forbidden');
      throw err;
    }
  };
  const guard = (fn: (req: FastifyRequest, reply: FastifyReply) => unknown) => async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      return await fn(req, reply);
    } catch (err) {
      if (err instanceof Answer) return sendText(reply, err.status, err.text);
      throw err;
    }
  };
  const answerOf = (file: string, root: string, full: boolean) => (full ? fileInfo(file, root) : path.relative(root, file).split(path.sep).join('/'));

  const fileParam = { type: 'object', properties: { file: { type: 'string', description: 'Path below the user folder (%2F for subfolders)' } } } as const;
  const writeQuery = { type: 'object', properties: { overwrite: { type: 'string' }, full_info: { type: 'string' } } } as const;

  dual(
    app,
    'GET',
    '/userdata',
    {
      operationId: 'listUserdata',
      tags: ['userdata'],
      headers: comfyUserHeader,
      querystring: { type: 'object', required: ['dir'], properties: { dir: { type: 'string' }, recurse: { type: 'string' }, full_info: { type: 'string' }, split: { type: 'string' } } },
    },
    guard((req, reply) => {
      const dir = queryString(req.query, 'dir') ?? '';
      if (!dir) throw new Answer(400, 'Directory not provided');
      const user = userOf(req);
      let target: string;
      try {
        target = users.userPath(user, pyUnquote(dir));
      } catch (err) {
        if (err instanceof UnsafePathError) throw new Answer(403, 'Invalid directory');
        throw err;
      }
      const st = fs.statSync(target, { throwIfNoEntry: false });
      if (!st) throw new Answer(404, 'Directory not found');
      if (!st.isDirectory()) return reply.type('application/json').send('[]');
      const fullInfo = queryFlag(req.query, 'full_info');
      const split = queryFlag(req.query, 'split');
      const files = listFiles(rootOf(user), target, queryFlag(req.query, 'recurse'));
      const out = files.map((f) => {
        if (fullInfo) return fileInfo(f, target);
        const rel = path.relative(target, f).split(path.sep).join('/');
        return split ? [rel, ...rel.split('/')] : rel;
      });
      return reply.type('application/json').send(JSON.stringify(out));
    }),
    { validate: false },
  );

  dual(
    app,
    'GET',
    '/v2/userdata',
    { operationId: 'listUserdataV2', tags: ['userdata'], headers: comfyUserHeader, querystring: { type: 'object', properties: { path: { type: 'string' } } } },
    guard((req, reply) => {
      const rel = pyUnquote(queryString(req.query, 'path') ?? '');
      let user: string;
      try {
        user = users.userId(req.headers['comfy-user']);
      } catch (err) {
        if (err instanceof UnknownUserError) throw new Answer(403, 'Invalid user specified in request');
        throw err;
      }
      let base: string;
      let target: string;
      try {
        base = users.userRoot(user);
        target = rel ? users.userPath(user, rel) : base;
      } catch (err) {
        if (err instanceof UnsafePathError) throw new Answer(400, 'Invalid path requested');
        throw err;
      }
      const st = fs.statSync(target, { throwIfNoEntry: false });
      if (!st) {
        if (target === base) return reply.type('application/json').send('[]');
        throw new Answer(404, 'Requested path not found');
      }
      if (!st.isDirectory()) throw new Answer(400, 'Requested path is not a directory');
      return reply.type('application/json').send(JSON.stringify(listTree(base, target)));
    }),
    { validate: false },
  );

  dual(
    app,
    'GET',
    '/userdata/:file',
    { operationId: 'getUserdataFile', tags: ['userdata'], headers: comfyUserHeader, params: fileParam },
    guard(async (req, reply) => {
      const file = fileOf(req, 'file');
      const st = fs.statSync(file, { throwIfNoEntry: false });
      if (!st || !st.isFile()) throw new Answer(404, '404: Not Found');
      const r = await send(req.raw, '/' + encodeURIComponent(path.basename(file)), { root: path.dirname(file), dotfiles: 'allow', index: false, acceptRanges: true, cacheControl: false });
      if (r.type === 'error') throw new Answer(r.statusCode === 404 ? 404 : r.statusCode, `${r.statusCode}: ${r.metadata.error.message}`);
      const headers = r.headers as Record<string, string>;
      if (r.statusCode !== 304) headers['Content-Type'] = safeContentType(headers['Content-Type'] ?? headers['content-type']);
      delete headers['content-type'];
      headers['X-Content-Type-Options'] = 'nosniff';
      return reply.code(r.statusCode).headers(headers).send(r.stream);
    }),
    { validate: false },
  );

  // Raw bytes of any content type: a child context with one parser that keeps the body as it came.
  app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.maxUploadSize }, (_req, body, done) => done(null, body));

    dual(
      raw,
      'POST',
      '/userdata/:file',
      {
        operationId: 'writeUserdataFile',
        tags: ['userdata'],
        headers: comfyUserHeader,
        params: fileParam,
        querystring: writeQuery,
        consumes: ['application/octet-stream'],
        body: { type: 'string', format: 'binary' },
      } as any,
      guard(async (req, reply) => {
        const file = fileOf(req, 'file');
        const overwrite = queryString(req.query, 'overwrite') !== 'false';
        const full = queryString(req.query, 'full_info')?.toLowerCase() === 'true';
        const st = fs.statSync(file, { throwIfNoEntry: false });
        if (st?.isDirectory()) throw new Answer(400, 'Invalid filename: a folder has this name');
        if (!overwrite && st) throw new Answer(409, 'File already exists');
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const root = rootOf(userOf(req));
        try {
          await fs.promises.mkdir(path.dirname(file), { recursive: true });
          const fh = await fs.promises.open(file, WRITE_FLAGS | (overwrite ? 0 : fs.constants.O_EXCL), 0o644);
          try {
            await fh.writeFile(body);
          } finally {
            await fh.close();
          }
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'EEXIST') throw new Answer(409, 'File already exists');
          if (code === 'ELOOP') throw new Answer(403, '403: Forbidden');
          if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENAMETOOLONG' || code === 'EINVAL') {
            throw new Answer(400, 'Invalid filename. Please avoid special characters like :\\/*?"<>|');
          }
          throw err;
        }
        return reply.type('application/json').send(JSON.stringify(answerOf(file, root, full)));
      }),
      { validate: false },
    );

    dual(
      raw,
      'POST',
      '/userdata/:file/move/:dest',
      {
        operationId: 'moveUserdataFile',
        tags: ['userdata'],
        headers: comfyUserHeader,
        params: { type: 'object', properties: { file: { type: 'string' }, dest: { type: 'string' } } },
        querystring: writeQuery,
      },
      guard(async (req, reply) => {
        const source = fileOf(req, 'file');
        const sst = fs.statSync(source, { throwIfNoEntry: false });
        if (!sst) throw new Answer(404, '404: Not Found');
        const dest = fileOf(req, 'dest');
        const overwrite = queryString(req.query, 'overwrite') !== 'false';
        const full = queryString(req.query, 'full_info')?.toLowerCase() === 'true';
        const dst = fs.statSync(dest, { throwIfNoEntry: false });
        if (!overwrite && dst) throw new Answer(409, 'File already exists');
        if (dst?.isDirectory()) throw new Answer(400, 'Invalid destination: a folder has this name');
        const root = rootOf(userOf(req));
        if (sst.isDirectory() && (dest + path.sep).startsWith(source + path.sep)) throw new Answer(400, 'Invalid destination: inside the source folder');
        try {
          await fs.promises.mkdir(path.dirname(dest), { recursive: true });
          if (!overwrite) {
            // link + unlink: the destination appears only if it still does not exist.
            if (sst.isFile()) {
              await fs.promises.link(source, dest);
              await fs.promises.unlink(source);
            } else await fs.promises.rename(source, dest);
          } else await fs.promises.rename(source, dest);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'EEXIST') throw new Answer(409, 'File already exists');
          if (code === 'ENOENT') throw new Answer(404, '404: Not Found');
          if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENOTEMPTY' || code === 'EINVAL' || code === 'EEXIST') throw new Answer(400, 'Invalid destination');
          if (code === 'EXDEV') {
            await fs.promises.cp(source, dest, { recursive: true, errorOnExist: !overwrite, force: overwrite });
            await fs.promises.rm(source, { recursive: true });
          } else throw err;
        }
        return reply.type('application/json').send(JSON.stringify(answerOf(dest, root, full && fs.statSync(dest).isFile())));
      }),
      { validate: false },
    );
  });

  dual(
    app,
    'DELETE',
    '/userdata/:file',
    { operationId: 'deleteUserdataFile', tags: ['userdata'], headers: comfyUserHeader, params: fileParam },
    guard(async (req, reply) => {
      const file = fileOf(req, 'file');
      const st = fs.lstatSync(file, { throwIfNoEntry: false });
      if (!st) throw new Answer(404, '404: Not Found');
      if (st.isDirectory()) throw new Answer(400, 'Not a file');
      try {
        await fs.promises.unlink(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Answer(404, '404: Not Found');
        throw err;
      }
      return reply.code(204).send();
    }),
    { validate: false },
  );
}
