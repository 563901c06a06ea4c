// Loaded inside each render worker thread (see RenderPool in @svc/jinja): the two environments
// webhook templates render in, configured as NetBox's render_jinja2 (`env` always, `header_safe`
// only for additional_headers).

import { Environment } from '@svc/jinja';
import { envFilterFor, headerSafe } from './templates.ts';

export function environments(data: { envParams: string[] }): Record<string, Environment> {
  const make = (headers: boolean) => {
    const env = new Environment({});
    env.addFilter('env', envFilterFor(data.envParams));
    if (headers) env.addFilter('header_safe', headerSafe);
    return env;
  };
  return { headers: make(true), other: make(false) };
}
