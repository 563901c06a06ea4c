// npm run jinja -- <template-file> [<context.json>]
// Prints the rendering as Python Jinja2's SandboxedEnvironment would; exit 1 with the message on error.
// The render runs in a worker thread with a heap limit and a hard time limit (RenderPool), like the
// services' renders, so a hostile template cannot exhaust this process either.

import { readFileSync } from 'node:fs';
import { RenderPool } from './pool.js';

async function main(argv: string[]): Promise<number> {
  if (argv.length < 1 || argv.length > 2 || argv[0] === '-h' || argv[0] === '--help') {
    process.stderr.write('usage: npm run jinja -- <template-file> [<context.json>]\n');
    return argv.length < 1 ? 1 : 0;
  }
  let source: string;
  let context: string;
  try {
    source = readFileSync(argv[0], 'utf8');
    context = argv[1] ? readFileSync(argv[1], 'utf8') : '{}';
  } catch (err) {
    process.stderr.write(`Error: ${(err as Error).message}\n`);
    return 1;
  }
  const pool = new RenderPool({
    heapMb: Number(process.env.JINJA_HEAP_MB) || undefined,
    hardTimeoutMs: Number(process.env.JINJA_HARD_TIMEOUT_MS) || undefined,
    maxStrikes: 1,
  });
  try {
    const [r] = await pool.render([{ env: 'default', source }], context, { floats: true });
    if (r!.ok) {
      process.stdout.write(r!.out);
      return 0;
    }
    const e = r!.error;
    process.stderr.write(`${e.name}: ${e.message}${e.lineno !== undefined ? ` (line ${e.lineno})` : ''}\n`);
    return 1;
  } finally {
    await pool.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
