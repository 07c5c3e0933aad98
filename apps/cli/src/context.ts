import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGatewayClient, type GatewayClient } from '@farebox/client';
import { configDir, createOAuthSession, writeFileAtomic, DEFAULT_GATEWAY_URL, type OAuthSession } from '@farebox/client/oauth';
import { readSettings } from '@farebox/protocol';
import { z } from 'zod';
import { CliError } from './errors.js';
import { CLI_SETTINGS } from './settings.js';

/** What `farebox login` stores (`cli.json`, mode 0600). */
const StoredConfigSchema = z.looseObject({
  url: z.string().optional(),
  apiKey: z.string().optional(),
  /** Signed in through the browser: the OAuth token lives in `cli-token.json`. */
  oauth: z.boolean().optional(),
  email: z.string().optional(),
});
export type StoredConfig = z.infer<typeof StoredConfigSchema>;

export interface GlobalOptions {
  url?: string;
  apiKey?: string;
  json?: boolean;
}

/** A process environment (`process.env`, or a test's own map). */
export type Env = Record<string, string | undefined>;

/**
 * What the CLI takes from its environment, read once per command
 * (`cliSettingsFromEnv`, called by `createContext`); the commands use these
 * and never the environment itself.
 */
export interface CliSettings {
  /** `FAREBOX_CONFIG_DIR`, else the user's config folder (`~/.config/farebox`). */
  configDir: string;
  /** `FAREBOX_URL`: the gateway, unless `--url` names one. */
  url: string | undefined;
  /** `FAREBOX_API_KEY`: the credential, unless `--api-key` gives one. */
  apiKey: string | undefined;
  /** `FAREBOX_CLIENT_NAME`: the name the browser sign-in registers (default `farebox CLI`). */
  clientName: string;
  /** `BROWSER=none` turns off opening a browser (the sign-in URL is still printed). */
  openBrowser: boolean;
  /** `TRUSTLESS_WORK_API_KEY`: the escrow provider's key for direct calls, unless `--escrow-key` gives one. */
  escrowApiKey: string | undefined;
  /** `DATABASE_URL` and `FAREBOX_DATA_DIR` (default `./.farebox`): the gateway database the operator grants open. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** `FAREBOX_MODEL_HUB_URL`: where `farebox model fetch` downloads from, unless `--hub` names a hub. */
  modelHubUrl: string | undefined;
  /** `PATH`: where `farebox dev` and `farebox discovery` look for the programs they start. */
  path: string;
  /** The environment `farebox discovery` starts its program with: the CLI's own, passed on. */
  childEnv: Env;
  /**
   * The environment `farebox dev` starts the local stack with: the CLI's own,
   * with the local network (`STELLAR_NETWORK=local`) and loopback endpoints
   * allowed (`FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true`) unless it names them.
   */
  devStackEnv: Env;
  /** `FAREBOX_DEVNET_PASSPHRASE` and whether the local stack runs the local network: `farebox dev` picks its devnet's passphrase from them. */
  devnet: { passphrase: string | undefined; local: boolean };
}

/**
 * The CLI's settings from an environment (`CLI_SETTINGS`, docs/configuration.md).
 * A malformed value stops the command with every problem named (`USAGE`).
 */
export function cliSettingsFromEnv(env: Env): CliSettings {
  const { values: v, problems } = readSettings(env, CLI_SETTINGS);
  if (problems.length) throw new CliError('USAGE', `invalid configuration: ${problems.join('; ')}`, { problems });
  const network = v.STELLAR_NETWORK ?? v.FAREBOX_NETWORK;
  return {
    configDir: cliConfigDir(env),
    url: v.FAREBOX_URL,
    apiKey: v.FAREBOX_API_KEY,
    clientName: v.FAREBOX_CLIENT_NAME.trim() || 'farebox CLI',
    openBrowser: (v.BROWSER ?? '').toLowerCase() !== 'none',
    escrowApiKey: v.TRUSTLESS_WORK_API_KEY,
    databaseUrl: v.DATABASE_URL,
    dataDir: v.FAREBOX_DATA_DIR,
    modelHubUrl: v.FAREBOX_MODEL_HUB_URL,
    path: v.PATH,
    childEnv: env,
    devStackEnv: {
      ...env,
      // The local stack: the embedded devnet (the gateway's default network is testnet).
      ...(network ? {} : { STELLAR_NETWORK: 'local' }),
      // It calls the developer's services on localhost (never the gateway's own port; refused on mainnet).
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: env.FAREBOX_ALLOW_LOOPBACK_ENDPOINTS ?? 'true',
      // A missing search model downloads in the background where the network allows (docs/search.md); offline, keyword-only.
      FAREBOX_ALLOW_MODEL_DOWNLOAD: env.FAREBOX_ALLOW_MODEL_DOWNLOAD ?? 'true',
    },
    devnet: { passphrase: v.FAREBOX_DEVNET_PASSPHRASE, local: (network ?? 'local') === 'local' },
  };
}

export interface Context {
  url: string;
  json: boolean;
  /** The environment's settings, read once (`cliSettingsFromEnv`). */
  settings: CliSettings;
  dir: string;
  configPath: string;
  tokenPath: string;
  stored: StoredConfig;
  /** Messages for the user that are not the result (stderr). */
  log(line: string): void;
  /** Where the credential comes from, if any. */
  credential: { kind: 'api-key'; apiKey: string } | { kind: 'oauth' } | undefined;
  oauthSession(): OAuthSession;
  /** A REST client with the current credential; throws NOT_SIGNED_IN when there is none. */
  gateway(): Promise<GatewayClient>;
  /** A REST client without a credential (health, platform key). */
  anonymous(): GatewayClient;
  saveConfig(next: StoredConfig): Promise<void>;
}

/** The CLI's folder: `FAREBOX_CONFIG_DIR`, else the user's config folder (`~/.config/farebox`). */
export function cliConfigDir(env: Env): string {
  return env.FAREBOX_CONFIG_DIR?.trim() || configDir(env);
}

async function readStored(path: string): Promise<StoredConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return {};
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError('LOCAL', `${path} is not valid JSON: fix or delete it (farebox logout)`);
  }
  const parsed = StoredConfigSchema.safeParse(json);
  if (!parsed.success) throw new CliError('LOCAL', `${path} is not a farebox configuration: fix or delete it (farebox logout)`);
  return parsed.data;
}

/**
 * A command's context: the environment read once into settings
 * (`cliSettingsFromEnv`), the stored login, the credential. Precedence: flag,
 * then environment (`FAREBOX_URL`, `FAREBOX_API_KEY`), then the stored
 * configuration.
 */
export async function createContext(opts: GlobalOptions, env: Env, log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<Context> {
  const settings = cliSettingsFromEnv(env);
  const dir = settings.configDir;
  const configPath = join(dir, 'cli.json');
  const tokenPath = join(dir, 'cli-token.json');
  const stored = await readStored(configPath);
  const rawUrl = (opts.url ?? settings.url ?? stored.url ?? DEFAULT_GATEWAY_URL).trim();
  let url: string;
  try {
    const u = new URL(rawUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    url = `${u.origin}${u.pathname}`.replace(/\/+$/, '').replace(/\/mcp$/, '');
  } catch {
    throw new CliError('USAGE', `not an http(s) URL: ${JSON.stringify(rawUrl)}`);
  }
  const apiKey = opts.apiKey ?? settings.apiKey ?? (stored.url === undefined || stored.url === url ? stored.apiKey : undefined);
  const oauth = !apiKey && stored.oauth === true && (stored.url === undefined || stored.url === url);
  let session: OAuthSession | undefined;
  const ctx: Context = {
    url,
    json: opts.json === true,
    settings,
    dir,
    configPath,
    tokenPath,
    stored,
    log,
    credential: apiKey ? { kind: 'api-key', apiKey } : oauth ? { kind: 'oauth' } : undefined,
    oauthSession() {
      session ??= createOAuthSession({
        mcpUrl: `${url}/mcp`,
        tokenPath,
        clientName: settings.clientName,
        openBrowser: settings.openBrowser,
        log,
      });
      return session;
    },
    async gateway() {
      const c = ctx.credential;
      if (!c)
        throw new CliError(
          'NOT_SIGNED_IN',
          `not signed in to ${url}: run \`farebox login\` (browser) or \`farebox login --api-key sk_live_...\`, or set FAREBOX_API_KEY`,
        );
      if (c.kind === 'api-key') return createGatewayClient({ baseUrl: url, apiKey: c.apiKey });
      return createGatewayClient({ baseUrl: url, accessToken: await ctx.oauthSession().accessToken() });
    },
    anonymous: () => createGatewayClient({ baseUrl: url }),
    async saveConfig(next) {
      await writeFileAtomic(configPath, `${JSON.stringify(next, null, 2)}\n`);
    },
  };
  return ctx;
}
