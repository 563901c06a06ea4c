import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { App } from '@svc/kernel';

const common = { allErrors: true, removeAdditional: false, useDefaults: true, verbose: true, strict: false } as const;

type Compiled = ((data: unknown, dataCxt?: unknown) => boolean) & { errors?: any[] | null };

let instances: { coercing: any; strictTypes: any } | undefined;

/**
 * The two Ajv instances, made once per process: every app instance of the
 * process shares them, and with them Ajv's cache of compiled schemas (keyed
 * by the schema object; the route schemas are module constants).
 */
function ajvs() {
  if (!instances) {
    const coercing = new (Ajv as any).default({ ...common, coerceTypes: true });
    const strictTypes = new (Ajv as any).default({ ...common, coerceTypes: false });
    (addFormats as any).default(coercing);
    (addFormats as any).default(strictTypes);
    instances = { coercing, strictTypes };
  }
  return instances;
}

/**
 * A validator that compiles its schema on its first use: a start no longer
 * compiles the ~200 validators of routes it may never serve (about half of
 * the service's start-up CPU). It passes Fastify's data context through (Ajv
 * coerces a root value in place through it: Fastify gives it to functions
 * with a `schemaEnv`) and exposes each call's `errors` as Ajv's own function does.
 */
function lazyValidator(compile: () => Compiled): Compiled & { schemaEnv: true } {
  let fn: Compiled | undefined;
  const validate = ((data: unknown, dataCxt?: unknown) => {
    fn ??= compile();
    const ok = fn(data, dataCxt);
    validate.errors = fn.errors;
    return ok;
  }) as Compiled & { schemaEnv: true };
  validate.schemaEnv = true;
  return validate;
}

/**
 * pydantic's lax mode converts query/path strings to ints and bools but never
 * turns a JSON number into a string (`content: 5` is a string_type error), so
 * bodies are validated without Ajv's type coercion. Lax booleans and UUIDs in
 * bodies are normalised beforehand by the kernel's lax-coercion hook.
 */
export function installValidators(app: App): void {
  app.setValidatorCompiler(({ schema, httpPart }) =>
    lazyValidator(() => {
      const { coercing, strictTypes } = ajvs();
      return (httpPart === 'body' ? strictTypes : coercing).compile(schema);
    }),
  );
}
