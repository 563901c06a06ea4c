import { parseArgs } from 'node:util';
import { startWebhookReceiver } from './webhook-receiver.ts';

/** `npm run manage -- <command> [options]`: the inventory service's management commands (as NetBox's manage.py). */
const USAGE = `usage: npm run manage -- <command> [options]

commands:
  webhook_receiver [--port 9000] [--no-headers]   print incoming webhooks (listens on localhost)
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'webhook_receiver') {
    const { values } = parseArgs({ args: rest, options: { port: { type: 'string', default: '9000' }, 'no-headers': { type: 'boolean', default: false } }, strict: true });
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      process.stderr.write(`invalid port: ${values.port}\n`);
      return 2;
    }
    const server = await startWebhookReceiver({ port, showHeaders: !values['no-headers'] });
    const stop = () => {
      process.stdout.write('\nExiting...\n');
      server.close();
      server.closeAllConnections();
      process.exit(0);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return new Promise<number>(() => {});
  }
  process.stderr.write(command ? `Unknown command: '${command}'\n${USAGE}` : USAGE);
  return command ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
