/** Small fetch wrapper for black-box tests: JSON in, status + parsed body + headers out. */
export interface HttpResult<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export function client(baseUrl: string, defaultHeaders: Record<string, string> = {}) {
  async function request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult<T>> {
    const init: RequestInit = { method, headers: { ...defaultHeaders, ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + path, init);
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  }
  return {
    request,
    get: <T = any>(p: string, h?: Record<string, string>) => request<T>('GET', p, undefined, h),
    post: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => request<T>('POST', p, b, h),
    put: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => request<T>('PUT', p, b, h),
    patch: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => request<T>('PATCH', p, b, h),
    delete: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => request<T>('DELETE', p, b, h),
  };
}
