/** A cookie-keeping form client for the admin UI's HTTP tests (no browser). */
export interface UiResponse {
  status: number;
  text: string;
  headers: Headers;
  location: string | null;
}

export function uiClient(baseUrl: string) {
  const jar = new Map<string, string>();
  function remember(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /max-age=0/i.test(c)) jar.delete(name);
      else jar.set(name, value);
    }
  }
  function cookieHeader(): Record<string, string> {
    return jar.size ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {};
  }
  async function request(method: string, path: string, form?: Record<string, string | string[]>, headers: Record<string, string> = {}): Promise<UiResponse> {
    const init: RequestInit = { method, redirect: 'manual', headers: { ...cookieHeader(), ...headers } };
    if (form) {
      const p = new URLSearchParams();
      for (const [k, v] of Object.entries(form)) for (const item of Array.isArray(v) ? v : [v]) p.append(k, item);
      init.body = p.toString();
      (init.headers as Record<string, string>)['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(baseUrl + path, init);
    remember(res);
    return { status: res.status, text: await res.text(), headers: res.headers, location: res.headers.get('location') };
  }
  return {
    jar,
    get: (path: string, headers?: Record<string, string>) => request('GET', path, undefined, headers),
    post: (path: string, form: Record<string, string | string[]>, headers?: Record<string, string>) => request('POST', path, form, headers),
    /** The CSRF token embedded in a page's forms. */
    csrfOf(page: string): string {
      const m = /name="csrf_token" value="([^"]+)"/.exec(page);
      if (!m) throw new Error('no CSRF token on the page');
      return m[1]!;
    },
    async login(token: string): Promise<UiResponse> {
      const page = await request('GET', '/ui/login');
      return request('POST', '/ui/login', { csrf_token: this.csrfOf(page.text), token, next: '/ui/' });
    },
  };
}
