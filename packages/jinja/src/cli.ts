// npm run jinja -- <template-file> [<context.json>]
// Prints the rendering as Python Jinja2's SandboxedEnvironment would; exit 1 with the message on error.

import { readFileSync } from 'node:fs';
import { Environment, TemplateSyntaxError, parseJsonPreservingFloats } from './index.js';

function main(argv: string[]): number {
  if (argv.length < 1 || argv.length > 2 || argv[0] === '-h' || argv[0] === '--help') {
    process.stderr.write('usage: npm run jinja -- <template-file> [<context.json>]\n');
    return argv.length < 1 ? 1 : 0;
  }
  try {
    const source = readFileSync(argv[0], 'utf8');
    const ctx = argv[1] ? parseJsonPreservingFloats(readFileSync(argv[1], 'utf8')) : {};
    if (ctx === null || typeof ctx !== 'object' || Array.isArray(ctx)) throw new Error('context must be a JSON object');
    const out = new Environment().fromString(source).render(ctx as Record<string, unknown>);
    process.stdout.write(out);
    return 0;
  } catch (err) {
    const name = err instanceof Error ? err.name : 'Error';
    const msg = err instanceof Error ? err.message : String(err);
    const where = err instanceof TemplateSyntaxError ? ` (line ${err.lineno})` : '';
    process.stderr.write(`${name}: ${msg}${where}\n`);
    return 1;
  }
}

process.exitCode = main(process.argv.slice(2));
