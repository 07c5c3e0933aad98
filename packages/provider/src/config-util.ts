// Option helpers shared by the provider's configuration readers.

/** Environment variables the provider reads (defaults to `process.env`). */
export type ProviderEnv = Record<string, string | undefined>;

export function nonEmpty(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const t = value.trim();
  return t === '' ? undefined : t;
}

/** First defined of: option, each env var in order. */
export function pick(option: string | undefined, env: ProviderEnv, ...names: string[]): { value?: string; from?: string } {
  if (nonEmpty(option) !== undefined) return { value: nonEmpty(option)!, from: 'option' };
  for (const name of names) {
    const v = nonEmpty(env[name]);
    if (v !== undefined) return { value: v, from: name };
  }
  return {};
}

export function label(option: string, from: string | undefined): string {
  return from && from !== 'option' ? `${option} (from ${from})` : option;
}

export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname.startsWith('127.');
}

export function checkUrl(value: string, name: string, problems: string[]): URL | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${name} is not a valid URL: ${JSON.stringify(value)}`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.push(`${name} must be an http(s) URL: ${JSON.stringify(value)}`);
    return undefined;
  }
  return url;
}
