export * from './postgres.ts';
export * from './server.ts';
export * from './matrix.ts';
export * from './http.ts';
export * from './openapi.ts';
export * from './ports.ts';
