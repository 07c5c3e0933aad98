import { join } from 'node:path';
import { configDir, DEFAULT_GATEWAY_URL } from '@farebox/client/oauth';
import { AdapterError } from './errors.js';
import type { z } from 'zod';
import { ADAPTER_SETTINGS } from './settings.js';

/** The package name: the default client name shown on the consent page. */
export const PACKAGE_NAME = '@farebox/mcp';
export const PACKAGE_VERSION = '0.1.0';

export interface AdapterConfig {
  /** The gateway's base URL, without a trailing slash. */
  url: string;
  /** `{url}/mcp`, the remote MCP server and the OAuth resource. */
  mcpUrl: string;
  /** When set, OAuth is skipped and the key is sent as a bearer to the REST API. */
  apiKey: string | undefined;
  /** Where the OAuth token is stored (JSON, mode 0600). */
  tokenPath: string;
  /** Client name registered with the gateway (shown on the consent page). */
  clientName: string;
  /** `BROWSER=none` turns off opening a browser (the sign-in URL is still printed). */
  openBrowser: boolean;
}

/**
 * Reads the adapter variables (spec: FAREBOX_URL, FAREBOX_API_KEY,
 * FAREBOX_TOKEN_PATH, FAREBOX_CLIENT_NAME). Every problem is reported at once.
 *
 * @example
 * const config = loadAdapterConfig(process.env);
 */
export function loadAdapterConfig(env: Record<string, string | undefined>): AdapterConfig {
  // Every variable is declared in settings.ts (docs/configuration.md); the token path's default folder follows the user's.
  const { values, problems } = readAdapterSettings(env);
  if (problems.length > 0) throw new AdapterError('CONFIG', `invalid configuration: ${problems.join('; ')}`);
  const url = values.FAREBOX_URL ?? DEFAULT_GATEWAY_URL.replace(/\/+$/, '');
  return {
    url,
    mcpUrl: `${url}/mcp`,
    apiKey: values.FAREBOX_API_KEY,
    tokenPath: values.FAREBOX_TOKEN_PATH ?? join(configDir(env), 'mcp-token.json'),
    clientName: values.FAREBOX_CLIENT_NAME ?? PACKAGE_NAME,
    openBrowser: (values.BROWSER ?? '').toLowerCase() !== 'none',
  };
}

/** The environment read against `ADAPTER_SETTINGS`: the typed values and every problem. */
export function readAdapterSettings(env: Record<string, string | undefined>): {
  values: { [K in keyof typeof ADAPTER_SETTINGS]: z.output<ReturnType<(typeof ADAPTER_SETTINGS)[K]['kind']['schema']>> };
  problems: string[];
} {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, spec] of Object.entries(ADAPTER_SETTINGS)) {
    const parsed = spec.kind.schema(name).safeParse(env[name]);
    if (parsed.success) values[name] = parsed.data;
    else problems.push(...parsed.error.issues.map((i) => i.message));
  }
  return { values: values as ReturnType<typeof readAdapterSettings>['values'], problems };
}
