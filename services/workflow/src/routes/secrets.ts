import type { FastifyInstance, FastifyReply } from 'fastify';
import { MAX_SECRETS, SecretForbidden, SecretNameTaken, secretMeta, TooManySecrets, type SecretRow, type SecretStore } from '../domain/cloud/secrets.ts';
import type { Principal } from '../identity/index.ts';
import { ROLE_RANK } from '../identity/store.ts';
import { cloudError } from '../identity/errors.ts';
import { textProblem } from '../identity/store.ts';
import { addContentSchemas } from '../schemas/cloud-content.ts';
import { arrayOf, badRequest, cloudRoute, errors, noContent, objectBody, principal, ref } from './cloud-common.ts';

const MAX_VALUE = 16 * 1024;
const idParam = { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid', description: 'The secret ID.' } } };
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function nameOf(v: unknown): string {
  const e = textProblem(v, 'name', 100);
  if (e) badRequest(e);
  return (v as string).trim();
}

function valueOf(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '') badRequest(`${field} must be a non-empty string`);
  if (v.length > MAX_VALUE) badRequest(`${field} must be at most ${MAX_VALUE} characters`);
  if (LONE_SURROGATE.test(v)) badRequest(`${field} contains invalid characters`);
  return v;
}

function providerOf(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !/^[a-z0-9][a-z0-9_.-]{0,49}$/.test(v)) badRequest('provider must be a lowercase identifier such as huggingface or civitai');
  return v;
}

const notFound = () => cloudError(404, 'not_found', 'Secret not found');
const forbidden = () => cloudError(403, 'forbidden', 'Only the secret’s creator or a workspace admin can change or delete it');

/** Members change the secrets they stored; admins and owners any of the workspace (every member's prompts may use them). */
function mayManage(p: Principal, r: SecretRow): boolean {
  return r.created_by === p.userId || ROLE_RANK[p.role] >= ROLE_RANK.admin;
}

/** Workspace secrets: metadata only ever leaves; nodes read values by name while running. */
export function secretRoutes(app: FastifyInstance, store: SecretStore): void {
  addContentSchemas(app, ['SecretMeta', 'UpdateSecretRequest']);
  const tags = ['settings'];

  cloudRoute(app, 'GET', '/api/secrets', { operationId: 'listSecrets', summary: 'List user secrets', tags, description: 'Returns the list of secrets (API keys for third-party services) stored for the current workspace. Secret values are redacted.', response: { 200: arrayOf('SecretMeta', 'Secret list') } }, async (req) => (await store.list(principal(req).workspaceId)).map(secretMeta));

  cloudRoute(
    app,
    'POST',
    '/api/secrets',
    {
      operationId: 'createSecret',
      summary: 'Create or update a secret',
      tags,
      description: 'Stores a new secret, or replaces the value of the workspace secret with that name (its creator or a workspace admin, 403 otherwise); 201 either way, the same id when replaced. Secrets are encrypted at rest (AES-256-GCM) and never returned; nodes read them by name while a prompt of the workspace runs (e.g. the OpenAI nodes\' `api_key_secret` input).',
      body: { type: 'object', required: ['name', 'value'], properties: { name: { type: 'string', maxLength: 100, description: 'Secret name (unique per workspace)' }, value: { type: 'string', description: 'Secret value' }, provider: { type: 'string', description: 'Provider identifier (e.g. huggingface, civitai)' } } },
      response: { 201: ref('SecretMeta', 'Secret created (or its value replaced)'), ...errors(400, 403, 409) },
    },
    async (req, reply: FastifyReply) => {
      const p = principal(req);
      const b = objectBody(req);
      const name = nameOf(b.name);
      const value = valueOf(b.value, 'value');
      let out;
      try {
        out = await store.put(p.workspaceId, p.userId, name, value, providerOf(b.provider), (r) => mayManage(p, r));
      } catch (err) {
        if (err instanceof SecretForbidden) throw forbidden();
        if (err instanceof TooManySecrets) throw cloudError(409, 'too_many_secrets', `A workspace keeps at most ${MAX_SECRETS} secrets`);
        throw err;
      }
      // 201 also when the value of an existing secret was replaced: the only status the reference documents.
      return reply.code(201).send(secretMeta(out.row));
    },
  );

  cloudRoute(app, 'GET', '/api/secrets/:id', { operationId: 'getSecret', summary: 'Get secret metadata', tags, description: 'Returns metadata for a specific secret. Does not return the plaintext secret value.', params: idParam, response: { 200: ref('SecretMeta', 'Secret metadata'), ...errors(404) } }, async (req) => {
    const row = await store.get(principal(req).workspaceId, (req.params as { id: string }).id);
    if (!row) throw notFound();
    return secretMeta(row);
  });

  cloudRoute(
    app,
    'PATCH',
    '/api/secrets/:id',
    { operationId: 'updateSecret', summary: 'Update a secret', tags, description: "Updates an existing secret's name and/or value (`secret_value`). Both fields are optional; only provided fields are updated. 409 when another secret of the workspace has the new name; 403 for a member changing a secret another member stored (admins change any).", params: idParam, body: { $ref: 'UpdateSecretRequest#' }, response: { 200: ref('SecretMeta', 'Secret updated'), ...errors(400, 403, 404, 409) } },
    async (req) => {
      const p = principal(req);
      const id = (req.params as { id: string }).id;
      const b = objectBody(req);
      const change: { name?: string; value?: string; provider?: string } = {};
      if (b.name !== undefined) change.name = nameOf(b.name);
      if (b.secret_value !== undefined) change.value = valueOf(b.secret_value, 'secret_value');
      else if (b.value !== undefined) change.value = valueOf(b.value, 'value');
      if (b.provider !== undefined) change.provider = providerOf(b.provider);
      const current = await store.get(p.workspaceId, id);
      if (!current) throw notFound();
      if (!mayManage(p, current)) throw forbidden();
      try {
        const row = await store.update(p.workspaceId, id, change);
        if (!row) throw notFound();
        return secretMeta(row);
      } catch (err) {
        if (err instanceof SecretNameTaken) throw cloudError(409, 'secret_exists', 'A secret with this name already exists');
        throw err;
      }
    },
  );

  cloudRoute(app, 'DELETE', '/api/secrets/:id', { operationId: 'deleteSecret', summary: 'Delete a secret', tags, description: 'Permanently deletes a stored secret (its creator or a workspace admin: 403 otherwise).', params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } }, response: { 204: { description: 'Secret deleted' }, ...errors(403, 404) } }, async (req, reply) => {
    const p = principal(req);
    const current = await store.get(p.workspaceId, (req.params as { id: string }).id);
    if (!current) throw notFound();
    if (!mayManage(p, current)) throw forbidden();
    if (!(await store.delete(p.workspaceId, current.id))) throw notFound();
    return noContent(reply);
  });
}
