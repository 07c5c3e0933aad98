import { join } from 'node:path';
import { configDir, DEFAULT_GATEWAY_URL } from '@farebox/client/oauth';
import { AdapterError } from './errors.js';

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
  const problems: string[] = [];
  const rawUrl = (env.FAREBOX_URL ?? '').trim() || DEFAULT_GATEWAY_URL;
  let url = rawUrl.replace(/\/+$/, '');
  try {
    const parsed = new URL(rawUrl);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') problems.push(`FAREBOX_URL must be an http(s) URL, got ${JSON.stringify(rawUrl)}`);
    if (parsed.search || parsed.hash) problems.push('FAREBOX_URL must not carry a query or fragment');
    url = `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '');
    // Accept the connector URL too: `https://host/mcp` means the gateway `https://host`.
    if (url.endsWith('/mcp')) url = url.slice(0, -'/mcp'.length);
  } catch {
    problems.push(`FAREBOX_URL is not a valid URL: ${JSON.stringify(rawUrl)}`);
  }
  const apiKey = env.FAREBOX_API_KEY?.trim() || undefined;
  if (apiKey !== undefined && (/\s/.test(apiKey) || !apiKey.startsWith('sk_live_')))
    problems.push('FAREBOX_API_KEY must be a Farebox API key (it starts with sk_live_)');
  const tokenPath = env.FAREBOX_TOKEN_PATH?.trim() || join(configDir(env), 'mcp-token.json');
  const clientName = env.FAREBOX_CLIENT_NAME?.trim() || PACKAGE_NAME;
  if (clientName.length > 200) problems.push('FAREBOX_CLIENT_NAME is too long (max 200 characters)');
  if (problems.length > 0) throw new AdapterError('CONFIG', `invalid configuration: ${problems.join('; ')}`);
  return { url, mcpUrl: `${url}/mcp`, apiKey, tokenPath, clientName, openBrowser: (env.BROWSER ?? '').toLowerCase() !== 'none' };
}
