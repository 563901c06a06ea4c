import { loadConfig, runService } from '@svc/kernel';
import { buildApp } from './app.ts';

const cfg = loadConfig('inventory', { port: 8080 });
const app = await runService('inventory', cfg, buildApp);
if (app.generatedAdminToken) showAdminToken(app.generatedAdminToken);

/** The admin token made at the first start, shown once: only its hash is stored. */
function showAdminToken(token: string): void {
  // Under npm start the supervisor frames it beside the other services' banners.
  if (process.send && process.env.SVC_SUPERVISED === '1') {
    process.send({ type: 'admin-token', token });
    return;
  }
  const addr = app.server.address();
  const port = addr && typeof addr === 'object' ? addr.port : cfg.port;
  const url = `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`;
  const rule = '-'.repeat(72);
  process.stdout.write(
    [
      rule,
      `Created superuser "admin" with API token (shown only now): ${token}`,
      'Only its hash is stored: keep it. It is the API credential (Authorization: Token <token>)',
      `and the login of the admin UI at ${url}/ui/ (API docs: ${url}/docs, Authorize).`,
      `Another token: POST ${url}/api/users/tokens/ with this one, or start with --admin-token <token>.`,
      rule,
      '',
    ].join('\n'),
  );
}
