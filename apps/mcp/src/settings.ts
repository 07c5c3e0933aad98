import { z } from 'zod';

/**
 * Every variable `farebox-mcp` reads, declared once: meaning, default, the
 * values taken and a zod schema that parses the text (the shape of
 * `@farebox/protocol`'s `SettingSpecs`, which this package does not depend
 * on). `loadAdapterConfig` (config.ts) reads the environment against it, and
 * docs/configuration.md is generated from it.
 */
interface AdapterSetting<T> {
  meaning: string;
  kind: { values: string; schema(name: string): z.ZodType<T | undefined, string | undefined> };
  default?: string;
  secret?: boolean;
}

/** A kind: `parse` returns the value, or a problem (`{ problem }`). Empty text (after trimming) is unset. */
function kind<T>(values: string, parse: (text: string, name: string) => T | { problem: string }): AdapterSetting<T>['kind'] {
  return {
    values,
    schema: (name) =>
      z
        .string()
        .optional()
        .transform((raw, ctx): T | undefined => {
          const text = raw?.trim();
          if (!text) return undefined;
          const out = parse(text, name);
          if (out && typeof out === 'object' && 'problem' in out) {
            ctx.addIssue({ code: 'custom', message: out.problem });
            return z.NEVER;
          }
          return out as T;
        }),
  };
}

/** The gateway URL, normalized: no trailing slash, the connector URL `…/mcp` taken as its gateway. */
const gatewayUrl = kind<string>('an http(s) URL (the gateway, or its connector URL `…/mcp`)', (text, name) => {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    return { problem: `${name} is not a valid URL: ${JSON.stringify(text)}` };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return { problem: `${name} must be an http(s) URL, got ${JSON.stringify(text)}` };
  if (parsed.search || parsed.hash) return { problem: `${name} must not carry a query or fragment` };
  const url = `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '');
  return url.endsWith('/mcp') ? url.slice(0, -'/mcp'.length) : url;
});

function define<S extends Record<string, AdapterSetting<unknown>>>(specs: S): S {
  return specs;
}

export const ADAPTER_SETTINGS = define({
  FAREBOX_URL: {
    meaning: 'The gateway; its connector URL `…/mcp` is accepted too.',
    kind: gatewayUrl,
    default: '`http://127.0.0.1:8787` (the local stack of `npm start` / `farebox dev`)',
  },
  FAREBOX_API_KEY: {
    meaning: 'An API key: when set, OAuth is skipped and the key is sent to the REST API.',
    kind: kind('an API key (`sk_live_…`)', (text, name) =>
      /\s/.test(text) || !text.startsWith('sk_live_') ? { problem: `${name} must be a Farebox API key (it starts with sk_live_)` } : text,
    ),
    default: 'unset: OAuth in the browser',
    secret: true,
  },
  FAREBOX_TOKEN_PATH: {
    meaning: 'Where the OAuth token is stored (JSON, mode 0600).',
    kind: kind('a file path', (text) => text),
    default: '`~/.config/farebox/mcp-token.json` (`$XDG_CONFIG_HOME/farebox`, `%APPDATA%\\farebox` on Windows)',
  },
  FAREBOX_CLIENT_NAME: {
    meaning: 'The client name registered with the gateway, shown on the consent page.',
    kind: kind('at most 200 characters', (text, name) => (text.length > 200 ? { problem: `${name} is too long (max 200 characters)` } : text)),
    default: '`@farebox/mcp`',
  },
  BROWSER: {
    meaning: '`none` turns off opening a browser for the sign-in (the URL is still printed).',
    kind: kind('`none`, or anything else', (text) => text),
    default: 'unset: the system browser',
  },
});
