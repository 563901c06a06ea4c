export * from './dialect.ts';
export * from './database.ts';
export * from './migrations.ts';
export { jsonContains } from './json-contains.ts';
export { isTransientStorageError } from './transient.ts';
export { holdRow } from './row-lock.ts';
