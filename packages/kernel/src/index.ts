export * from './server.ts';
export * from './http-error.ts';
export * from './error-style.ts';
export * from './fastapi-validation.ts';
export * from './lax-coercion.ts';
export * from './config.ts';
export * from './run.ts';
export * from './http-timeouts.ts';
