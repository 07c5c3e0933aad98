/** A request a test sends: a JSON body (or text) sends `POST` unless a method is named. */
export interface JsonRequestInit {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What a test reads of the answer: its status, its JSON body (or its text) and its headers. */
export interface JsonAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON came back
  body: any;
  headers: Headers;
}

/** One request through `fetcher` (the global fetch, or a handler's in process), the body as JSON, the answer parsed when it is JSON. */
export async function jsonRequest(
  fetcher: (input: string, init: RequestInit) => Promise<Response>,
  path: string,
  init: JsonRequestInit = {},
): Promise<JsonAnswer> {
  const res = await fetcher(path, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text
  }
  return { status: res.status, body, headers: res.headers };
}
