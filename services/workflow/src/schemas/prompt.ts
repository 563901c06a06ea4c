import { Type } from 'typebox';

const Free = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });

export const PromptRequest = Type.Object(
  {
    prompt: Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description: 'The node graph in API format: {node_id: {class_type, inputs}}' }),
    number: Type.Optional(Type.Number({ description: 'Priority: lower runs first. Defaults to the server counter.' })),
    front: Type.Optional(Type.Boolean({ description: 'Queue at the front (negative counter).' })),
    extra_data: Type.Optional(Free),
    client_id: Type.Optional(Type.String({ description: 'WebSocket client id that receives execution messages.' })),
    prompt_id: Type.Optional(Type.String({ format: 'uuid', description: 'Server generates one if omitted; must be canonical lowercase.' })),
    partial_execution_targets: Type.Optional(Type.Array(Type.String())),
    workflow_id: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: '[cloud] Ignored by the local runtime.' })),
    workflow_version_id: Type.Optional(Type.Union([Type.String({ format: 'uuid' }), Type.Null()], { description: '[cloud] Ignored by the local runtime.' })),
  },
  { additionalProperties: true, title: 'PromptRequest' },
);

export const PromptResponse = Type.Object(
  { prompt_id: Type.String({ format: 'uuid' }), number: Type.Number(), node_errors: Free },
  { title: 'PromptResponse' },
);

export const PromptInfo = Type.Object({ exec_info: Type.Object({ queue_remaining: Type.Integer() }) }, { title: 'PromptInfo' });

export const QueueManageRequest = Type.Object(
  { clear: Type.Optional(Type.Boolean()), delete: Type.Optional(Type.Array(Type.String())) },
  { title: 'QueueManageRequest', additionalProperties: true },
);

export const QueueInfo = Type.Object(
  { queue_running: Type.Array(Type.Array(Type.Unknown())), queue_pending: Type.Array(Type.Array(Type.Unknown())) },
  { title: 'QueueInfo' },
);

export const InterruptRequest = Type.Object({ prompt_id: Type.Optional(Type.String({ format: 'uuid' })) }, { additionalProperties: true });
export const FreeRequest = Type.Object({ unload_models: Type.Optional(Type.Boolean()), free_memory: Type.Optional(Type.Boolean()) }, { additionalProperties: true });

export const JobsQuery = Type.Object(
  {
    status: Type.Optional(Type.String({ description: 'Comma-separated: pending, in_progress, completed, failed, cancelled' })),
    workflow_id: Type.Optional(Type.String()),
    workflow_version_id: Type.Optional(Type.String({ description: '[cloud] Jobs of one saved workflow version' })),
    sort_by: Type.Optional(Type.String({ enum: ['created_at', 'execution_duration'] })),
    sort_order: Type.Optional(Type.String({ enum: ['asc', 'desc'] })),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  },
  { additionalProperties: true },
);

export const JobEntry = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    status: Type.String(),
    priority: Type.Optional(Type.Number()),
    create_time: Type.Optional(Type.Integer()),
    execution_start_time: Type.Optional(Type.Integer()),
    execution_end_time: Type.Optional(Type.Integer()),
    execution_error: Type.Optional(Free),
    outputs_count: Type.Optional(Type.Integer()),
    preview_output: Type.Optional(Free),
    workflow_id: Type.Optional(Type.String()),
  },
  { title: 'JobEntry', additionalProperties: true },
);

export const JobsList = Type.Object(
  {
    jobs: Type.Array(JobEntry),
    pagination: Type.Object({ offset: Type.Integer(), limit: Type.Integer(), total: Type.Integer(), has_more: Type.Boolean() }),
  },
  { title: 'JobsListResponse' },
);

export const HistoryQuery = Type.Object(
  { max_items: Type.Optional(Type.Integer({ minimum: 1 })), offset: Type.Optional(Type.Integer({ minimum: 0 })) },
  { additionalProperties: true },
);
