import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { App } from '@svc/kernel';

const common = { allErrors: true, removeAdditional: false, useDefaults: true, verbose: true, strict: false } as const;

/**
 * pydantic's lax mode converts query/path strings to ints and bools but never
 * turns a JSON number into a string (`content: 5` is a string_type error), so
 * bodies are validated without Ajv's type coercion. Lax booleans and UUIDs in
 * bodies are normalised beforehand by the kernel's lax-coercion hook.
 */
export function installValidators(app: App): void {
  const coercing = new (Ajv as any).default({ ...common, coerceTypes: true });
  const strictTypes = new (Ajv as any).default({ ...common, coerceTypes: false });
  (addFormats as any).default(coercing);
  (addFormats as any).default(strictTypes);
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strictTypes : coercing).compile(schema));
}
