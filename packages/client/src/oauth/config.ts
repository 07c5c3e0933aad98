import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The gateway used when none is configured: the local stack that
 * `npm start` / `farebox dev` runs.
 */
export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8787';

/**
 * The user's configuration folder for Farebox: `%APPDATA%\farebox` on Windows,
 * else `$XDG_CONFIG_HOME/farebox` or `~/.config/farebox`.
 */
export function configDir(env: Record<string, string | undefined>): string {
  if (process.platform === 'win32' && env.APPDATA) return join(env.APPDATA, 'farebox');
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.trim() !== '' ? env.XDG_CONFIG_HOME : join(env.HOME ?? homedir(), '.config');
  return join(base, 'farebox');
}
