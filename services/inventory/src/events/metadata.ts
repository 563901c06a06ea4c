import type { ApiConventions, FieldInfo } from '../api/conventions.ts';
import { fieldLabel } from '../models/metadata.ts';
import { EVENT_OBJECT_TYPES, EVENT_TYPES } from './rules.ts';
import { HTTP_METHODS } from './webhooks.ts';

const ro = (type: string, label: string): FieldInfo => ({ type, required: false, read_only: true, label });
const field = (name: string, type: string, extra: Partial<FieldInfo> = {}): [string, FieldInfo] => [name, { type, required: false, read_only: false, label: fieldLabel(name), ...extra }];
const choices = (values: readonly string[], label = (v: string) => v) => values.map((v) => ({ value: v, display_name: label(v) }));

const common = (): Array<[string, FieldInfo]> => [
  ['id', ro('integer', 'ID')],
  ['url', ro('field', 'Url')],
  ['display_url', ro('field', 'Display url')],
  ['display', ro('field', 'Display')],
];

/** OPTIONS metadata of the webhook and event rule endpoints (their own validators, not the model registry). */
export function describeEventEndpoints(api: ApiConventions): void {
  api.describe('/api/extras/webhooks/', {
    name: 'Webhook',
    fields: () =>
      Object.fromEntries([
        ...common(),
        field('name', 'string', { required: true, max_length: 150 }),
        field('description', 'string', { max_length: 200 }),
        field('payload_url', 'string', { required: true, max_length: 500, label: 'URL' }),
        field('http_method', 'choice', { choices: choices(HTTP_METHODS), label: 'HTTP method' }),
        field('http_content_type', 'string', { max_length: 100, label: 'HTTP content type' }),
        field('additional_headers', 'string'),
        field('body_template', 'string'),
        field('secret', 'string', { max_length: 255 }),
        field('ssl_verification', 'boolean', { label: 'SSL verification' }),
        field('ca_file_path', 'string', { max_length: 4096, label: 'CA File Path' }),
        field('timeout', 'integer', { min_value: 1, max_value: 3600 }),
        field('max_retries', 'integer', { min_value: 0, max_value: 100 }),
        field('custom_fields', 'field'),
        field('tags', 'list'),
        ['created', ro('datetime', 'Created')],
        ['last_updated', ro('datetime', 'Last updated')],
      ]),
  });
  api.describe('/api/extras/event-rules/', {
    name: 'Event Rule',
    fields: () =>
      Object.fromEntries([
        ...common(),
        field('object_types', 'list', { required: true, child: { type: 'field', required: true, read_only: false, label: 'Object types', choices: choices(EVENT_OBJECT_TYPES) } }),
        field('name', 'string', { required: true, max_length: 150 }),
        field('enabled', 'boolean'),
        field('event_types', 'list', { required: true, child: { type: 'choice', required: true, read_only: false, label: 'Event types', choices: choices(EVENT_TYPES) } }),
        field('conditions', 'json'),
        field('action_type', 'choice', { choices: [{ value: 'webhook', display_name: 'Webhook' }] }),
        field('action_object_type', 'field', { required: true, choices: [{ value: 'extras.webhook', display_name: 'Extras | webhook' }] }),
        field('action_object_id', 'integer', { label: 'Action object ID' }),
        ['action_object', ro('field', 'Action object')],
        field('description', 'string', { max_length: 200 }),
        field('comments', 'string'),
        field('custom_fields', 'field'),
        field('tags', 'list'),
        ['created', ro('datetime', 'Created')],
        ['last_updated', ro('datetime', 'Last updated')],
      ]),
  });
}
