// Loaded inside each render worker thread (see RenderPool in @svc/jinja): the two environments
// webhook templates render in (and the config templates' below), configured as NetBox's render_jinja2 (`env` always, `header_safe`
// only for additional_headers).

import { Environment } from '@svc/jinja';
import { envFilterFor, headerSafe } from './templates.ts';

// Config templates' related managers (`device.interfaces.all()`), attached to the parsed context in the worker.
export { prepareContext } from './template-managers.ts';

export function environments(data: { envParams: string[] }): Record<string, Environment> {
  const make = (headers: boolean) => {
    const env = new Environment({});
    env.addFilter('env', envFilterFor(data.envParams));
    if (headers) env.addFilter('header_safe', headerSafe);
    return env;
  };
  const envs: Record<string, Environment> = { headers: make(true), other: make(false) };
  // Config templates (render-config): `config-<trim_blocks><lstrip_blocks><keep_trailing_newline>`, as their
  // environment_params choose (models/config-contexts.ts environmentName); no `env` filter, as NetBox's.
  for (let bits = 0; bits < 8; bits++) {
    const name = `config-${bits & 4 ? 1 : 0}${bits & 2 ? 1 : 0}${bits & 1 ? 1 : 0}`;
    envs[name] = new Environment({ trimBlocks: !!(bits & 4), lstripBlocks: !!(bits & 2), keepTrailingNewline: !!(bits & 1) });
  }
  return envs;
}
