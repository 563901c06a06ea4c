/**
 * OpenAPI components of the hosted runtime's secrets, workflows and hub
 * (referenced by `Name#`). Handlers check bodies themselves (CloudError
 * answers), so these document the wire shapes.
 */
const cloud = (description: string, schema: Record<string, unknown>) => ({ type: 'object', 'x-runtime': ['cloud'], description: `[cloud-only] ${description}`, ...schema });
const dt = { type: 'string', format: 'date-time' };
const strArr = { type: 'array', items: { type: 'string' } };
/** AssetInfo, inline: the cloud assets routes own that component. */
const assetInfo = { type: 'object', required: ['id', 'filename'], properties: { id: { type: 'string' }, filename: { type: 'string' }, mime_type: { type: 'string' }, size_bytes: { type: 'integer', format: 'int64' } } };

export const contentSchemas: Record<string, Record<string, unknown>> = {
  SecretMeta: cloud('Metadata for a stored secret (value is never returned).', {
    required: ['id', 'name'],
    properties: { id: { type: 'string' }, name: { type: 'string' }, provider: { type: 'string', description: 'Provider identifier (e.g., huggingface, civitai).' }, last_used_at: { ...dt, description: 'When the secret was last used for decryption (absent until first use).' }, created_at: dt, updated_at: dt },
  }),
  UpdateSecretRequest: cloud('Request body for updating an existing user secret.', {
    properties: { name: { type: 'string', description: 'New name for the secret' }, secret_value: { type: 'string', description: 'New secret value (API key, token, etc.)' }, provider: { type: 'string' } },
  }),
  CloudWorkflow: cloud('A cloud-managed workflow with version history.', {
    required: ['id', 'name'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      description: { type: 'string' },
      share_id: { type: ['string', 'null'], description: 'Public share identifier if published' },
      latest_version_id: { type: ['string', 'null'], format: 'uuid' },
      latest_version: { type: 'integer' },
      thumbnail_url: { type: ['string', 'null'], format: 'uri' },
      created_at: dt,
      updated_at: dt,
    },
  }),
  CloudWorkflowList: cloud('Paginated list of cloud workflows.', {
    required: ['workflows', 'total', 'has_more'],
    properties: { workflows: { type: 'array', items: { $ref: 'CloudWorkflow#' } }, total: { type: 'integer' }, has_more: { type: 'boolean' } },
  }),
  CloudWorkflowVersion: cloud('A version of a cloud workflow.', {
    required: ['id', 'workflow_id'],
    properties: { id: { type: 'string', format: 'uuid' }, workflow_id: { type: 'string', format: 'uuid' }, version_number: { type: 'integer' }, created_by: { type: 'string' }, created_at: dt },
  }),
  CreateWorkflowVersionRequest: cloud('Request body for creating a new version of a saved workflow.', {
    required: ['base_version', 'workflow_json'],
    properties: { base_version: { type: 'integer', description: 'Version number this change is based on (for optimistic concurrency).' }, workflow_json: { type: 'object', additionalProperties: true } },
  }),
  WorkflowVersionResponse: cloud('Metadata for a single workflow version.', {
    required: ['id', 'version', 'latest_version', 'created_by', 'created_at'],
    properties: { id: { type: 'string' }, version: { type: 'integer' }, latest_version: { type: 'integer' }, created_by: { type: 'string' }, created_at: dt },
  }),
  WorkflowPublishInfo: cloud('Publishing metadata for a workflow shared to the Hub.', {
    required: ['workflow_id', 'share_id', 'listed', 'assets'],
    properties: { workflow_id: { type: 'string' }, share_id: { type: 'string' }, publish_time: { ...dt, nullable: true }, listed: { type: 'boolean' }, assets: { type: 'array', items: assetInfo } },
  }),
  HubLabel: cloud('A label/category used for tagging hub content.', {
    required: ['id', 'name'],
    properties: { id: { type: 'string' }, name: { type: 'string' }, description: { type: 'string' }, color: { type: 'string', description: 'Hex color code for the label' } },
  }),
  HubProfile: cloud('A public user profile on the Hub.', {
    required: ['username'],
    properties: { username: { type: 'string' }, display_name: { type: 'string' }, bio: { type: 'string' }, avatar_url: { type: 'string', format: 'uri' }, links: { type: 'array', items: { type: 'string', format: 'uri' } }, workflow_count: { type: 'integer' }, created_at: dt },
  }),
  CreateHubProfileRequest: cloud('Request body for creating a new Hub profile.', {
    required: ['workspace_id', 'username'],
    properties: { workspace_id: { type: 'string' }, username: { type: 'string', description: 'Unique URL-safe slug (3-39 of a-z, 0-9, "-" and "_", starting with a letter or digit). Immutable after creation.' }, display_name: { type: 'string' }, description: { type: 'string' }, avatar_token: { type: 'string' }, website_urls: strArr },
  }),
  HubWorkflow: cloud('A published workflow on the Hub.', {
    required: ['share_id', 'name'],
    properties: {
      share_id: { type: 'string' },
      name: { type: 'string' },
      description: { type: 'string' },
      status: { type: 'string', enum: ['pending', 'approved', 'rejected', 'deprecated'] },
      author: { $ref: 'HubProfile#' },
      labels: { type: 'array', items: { $ref: 'HubLabel#' } },
      thumbnail_url: { type: 'string', format: 'uri' },
      content: { type: 'object', additionalProperties: true, description: 'Workflow graph JSON' },
      likes: { type: 'integer' },
      views: { type: 'integer' },
      forks: { type: 'integer' },
      created_at: dt,
      updated_at: dt,
    },
  }),
  HubWorkflowList: cloud('Paginated list of hub workflows.', {
    required: ['workflows', 'total', 'has_more'],
    properties: { workflows: { type: 'array', items: { $ref: 'HubWorkflow#' } }, total: { type: 'integer' }, has_more: { type: 'boolean' } },
  }),
  PublishHubWorkflowRequest: cloud('Request body for publishing or updating a workflow on the Hub.', {
    required: ['username', 'name', 'workflow_filename', 'asset_ids'],
    properties: {
      username: { type: 'string' },
      name: { type: 'string' },
      workflow_filename: { type: 'string', description: 'A user data file (e.g. workflows/my.json) or the id of a cloud workflow' },
      asset_ids: strArr,
      description: { type: 'string' },
      tags: strArr,
      models: strArr,
      custom_nodes: strArr,
      tutorial_url: { type: 'string' },
      metadata: { type: 'object', additionalProperties: true },
      thumbnail_type: { type: 'string', enum: ['image', 'video', 'image_comparison'] },
      thumbnail_token_or_url: { type: 'string' },
      thumbnail_comparison_token_or_url: { type: 'string' },
      sample_image_tokens_or_urls: strArr,
    },
  }),
  HubWorkflowDetail: cloud('Full Hub workflow detail including versions, assets, and statistics.', {
    required: ['share_id', 'workflow_id', 'name', 'workflow_json', 'assets', 'profile', 'status'],
    properties: {
      share_id: { type: 'string' },
      workflow_id: { type: 'string' },
      name: { type: 'string' },
      status: { type: 'string', enum: ['pending', 'approved', 'rejected', 'deprecated'] },
      description: { type: 'string' },
      tags: strArr,
      models: strArr,
      custom_nodes: strArr,
      thumbnail_type: { type: 'string', enum: ['image', 'video', 'image_comparison'] },
      thumbnail_url: { type: 'string' },
      thumbnail_comparison_url: { type: 'string' },
      tutorial_url: { type: 'string' },
      metadata: { type: 'object', additionalProperties: true },
      sample_image_urls: strArr,
      publish_time: { ...dt, nullable: true },
      workflow_json: { type: 'object', additionalProperties: true },
      assets: { type: 'array', items: assetInfo },
      profile: { $ref: 'HubProfile#' },
    },
  }),
  HubWorkflowIndexEntry: cloud('Lightweight entry in the hub workflow index for client-side search.', {
    required: ['share_id', 'name'],
    properties: { share_id: { type: 'string' }, name: { type: 'string' }, author_username: { type: 'string' }, labels: strArr, likes: { type: 'integer' }, updated_at: dt },
  }),
};

/** Adds the components once per app (several route modules share them). */
export function addContentSchemas(app: { getSchema(id: string): unknown; addSchema(s: Record<string, unknown>): void }, names: string[]): void {
  for (const n of names) if (!app.getSchema(n)) app.addSchema({ $id: n, ...contentSchemas[n] });
}
