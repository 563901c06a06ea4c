/**
 * OpenAPI documentation of the asset operations (the routes validate by hand,
 * to answer with the reference's `{"error": {code, message, details}}`).
 */
const uuid = { type: 'string', format: 'uuid' } as const;
const hash = { type: 'string', pattern: '^blake3:[a-f0-9]{64}$' } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;
const tagsArray = { type: 'array', items: { type: 'string' } } as const;

const errorBody = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object', additionalProperties: true } },
    },
  },
} as const;

export const assetSchema = {
  type: 'object',
  required: ['id', 'name', 'size', 'created_at', 'updated_at'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    hash: { ...hash, nullable: true },
    asset_hash: { ...hash, nullable: true, deprecated: true, description: 'Deprecated: use `hash` instead.' },
    size: { type: 'integer', format: 'int64' },
    mime_type: { type: 'string' },
    tags: tagsArray,
    user_metadata: { type: 'object', additionalProperties: true },
    metadata: { type: 'object', additionalProperties: true, readOnly: true, description: 'System metadata; images carry {kind: "image", width, height}.' },
    preview_url: { type: 'string' },
    preview_id: uuid,
    prompt_id: { ...uuid, nullable: true, deprecated: true, description: 'Deprecated: use job_id instead.' },
    job_id: { ...uuid, nullable: true },
    file_path: { type: 'string', description: 'For assets that are files in a folder: <folder>/<subfolder>/<name>.' },
    display_name: { type: 'string' },
    created_at: dateTime,
    updated_at: dateTime,
    last_access_time: dateTime,
    is_immutable: { type: 'boolean' },
  },
} as const;

const assetCreated = { ...assetSchema, required: [...assetSchema.required, 'created_new'], properties: { ...assetSchema.properties, created_new: { type: 'boolean' } } };

const filterQuery = {
  include_tags: { type: 'array', items: { type: 'string' }, description: 'Tags that assets must have (AND); repeated or comma-separated' },
  exclude_tags: { type: 'array', items: { type: 'string' }, description: 'Tags that assets must not have' },
  name_contains: { type: 'string' },
  metadata_filter: { type: 'string', description: 'JSON object: key → value (or list of values, any of) matched against user_metadata' },
};

const idParams = { type: 'object', required: ['id'], properties: { id: uuid } } as const;
const tagsBody = { type: 'object', required: ['tags'], properties: { tags: tagsArray } } as const;
const tagsModification = {
  type: 'object',
  required: ['total_tags'],
  properties: { added: tagsArray, removed: tagsArray, already_present: tagsArray, not_present: tagsArray, total_tags: { type: 'integer' } },
} as const;

const tag = ['assets'];
const errors = { 400: errorBody, 404: errorBody, 503: errorBody };

export const assetSchemas = {
  checkAssetByHash: {
    operationId: 'checkAssetByHash',
    tags: tag,
    summary: 'Whether content with this hash exists among the caller\'s assets (200) or not (404)',
    params: { type: 'object', required: ['hash'], properties: { hash: { type: 'string' } } },
  },
  listAssets: {
    operationId: 'listAssets',
    tags: tag,
    summary: 'List assets with filters, offset or cursor pagination',
    querystring: {
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 500, default: 20 },
        offset: { type: 'integer', minimum: 0, default: 0 },
        ...filterQuery,
        sort: { type: 'string', enum: ['created_at', 'updated_at', 'name', 'size', 'last_access_time'], default: 'created_at' },
        order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
        after: { type: 'string', description: 'Opaque cursor (next_cursor of the previous page); offset is ignored. Not with sort=last_access_time (400 INVALID_CURSOR).' },
        asset_hash: { type: 'string', description: 'Exact content hash' },
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['assets', 'total', 'has_more'],
        properties: { assets: { type: 'array', items: assetSchema }, total: { type: 'integer' }, has_more: { type: 'boolean' }, next_cursor: { type: 'string' } },
      },
      ...errors,
    },
  },
  createAsset: {
    operationId: 'createAsset',
    tags: tag,
    summary: 'Upload an asset (multipart); the bytes are stored once per content hash',
    consumes: ['multipart/form-data'],
    body: {
      type: 'object',
      required: ['file'],
      properties: {
        file: { type: 'string', format: 'binary' },
        name: { type: 'string' },
        tags: { type: 'string', description: 'Comma-separated tags (or a JSON list); repeatable' },
        user_metadata: { type: 'string', description: 'JSON object' },
        hash: { type: 'string', description: 'blake3:<hex>: checked against the bytes, or stands for them when already stored' },
        mime_type: { type: 'string' },
        preview_id: uuid,
        id: { ...uuid, description: 'Client-chosen id for idempotent creation: a retry returns the existing asset' },
      },
    },
    response: { 200: assetCreated, 201: assetCreated, 413: errorBody, 415: errorBody, ...errors },
  },
  createAssetFromHash: {
    operationId: 'createAssetFromHash',
    tags: tag,
    summary: 'Create an asset referencing content already stored, by hash',
    body: {
      type: 'object',
      required: ['hash'],
      properties: { hash: { type: 'string' }, name: { type: 'string' }, tags: tagsArray, user_metadata: { type: 'object', additionalProperties: true }, mime_type: { type: 'string', nullable: true }, preview_id: uuid, id: uuid },
    },
    response: { 201: assetCreated, ...errors },
  },
  getAsset: { operationId: 'getAsset', tags: tag, summary: 'Get an asset', params: idParams, response: { 200: assetSchema, ...errors } },
  updateAsset: {
    operationId: 'updateAsset',
    tags: tag,
    summary: 'Update name, user_metadata, preview_id or mime_type; answers the asset (AssetUpdated fields included)',
    params: idParams,
    body: { type: 'object', properties: { name: { type: 'string' }, user_metadata: { type: 'object', additionalProperties: true }, preview_id: { ...uuid, nullable: true }, mime_type: { type: 'string', nullable: true } } },
    response: { 200: assetSchema, 403: errorBody, ...errors },
  },
  deleteAsset: {
    operationId: 'deleteAsset',
    tags: tag,
    summary: 'Delete an asset; delete_content also removes the bytes once no asset holds them',
    params: idParams,
    querystring: { type: 'object', properties: { delete_content: { type: 'boolean' } } },
    response: { 204: { type: 'null' }, 403: errorBody, ...errors },
  },
  getAssetContent: {
    operationId: 'getAssetContent',
    tags: tag,
    summary: 'Download the asset\'s bytes (range requests, ETag)',
    params: idParams,
    querystring: { type: 'object', properties: { disposition: { type: 'string', enum: ['inline', 'attachment'], default: 'attachment' } } },
  },
  addAssetTags: { operationId: 'addAssetTags', tags: tag, summary: 'Add tags to an asset', params: idParams, body: tagsBody, response: { 200: tagsModification, 403: errorBody, ...errors } },
  removeAssetTags: { operationId: 'removeAssetTags', tags: tag, summary: 'Remove tags from an asset', params: idParams, body: tagsBody, response: { 200: tagsModification, 403: errorBody, ...errors } },
  listTags: {
    operationId: 'listTags',
    tags: tag,
    summary: 'Tags of the caller\'s assets with counts',
    querystring: {
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        offset: { type: 'integer', minimum: 0, default: 0 },
        search: { type: 'string' },
        prefix: { type: 'string' },
        order: { type: 'string', enum: ['count_desc', 'name_asc'], default: 'count_desc' },
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['tags', 'total', 'has_more'],
        properties: { tags: { type: 'array', items: { type: 'object', required: ['name', 'count'], properties: { name: { type: 'string' }, count: { type: 'integer' } } } }, total: { type: 'integer' }, has_more: { type: 'boolean' } },
      },
      ...errors,
    },
  },
  refineAssetTags: {
    operationId: 'refineAssetTags',
    tags: tag,
    summary: 'Counts of the further tags carried by the assets a filter selects',
    querystring: { type: 'object', properties: { ...filterQuery, limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } } },
    response: { 200: { type: 'object', required: ['tag_counts'], properties: { tag_counts: { type: 'object', additionalProperties: { type: 'integer' } } } }, ...errors },
  },
  seedAssets: {
    operationId: 'seedAssets',
    tags: tag,
    summary: 'Register the files of models, input and output that are not assets yet (background; ?wait=true waits)',
    querystring: { type: 'object', properties: { wait: { type: 'boolean' } } },
    body: { type: 'object', properties: { roots: { type: 'array', items: { type: 'string', enum: ['models', 'input', 'output'] } } } },
  },
  getAssetSeedStatus: { operationId: 'getAssetSeedStatus', tags: tag, summary: 'Progress of the last seed scan' },
  cancelAssetSeed: { operationId: 'cancelAssetSeed', tags: tag, summary: 'Cancel a running seed scan' },
  pruneAssets: { operationId: 'pruneAssets', tags: tag, summary: 'Mark assets whose files no longer exist as missing (hidden from lists)' },
} as const;
