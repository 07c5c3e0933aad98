// docs/configuration.md, and the settings tables other pages embed, generated
// from the settings each host declares (`pnpm docs:config` writes them;
// tests/configuration.test.ts fails when a page differs from what this
// generates). Run: node --conditions=@farebox/source --import tsx scripts/configuration.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defineSettings, textSetting, type Setting } from '../packages/protocol/src/index.js';
import { CLI_SETTINGS } from '../apps/cli/src/settings.js';
import { DISCOVERY_SETTINGS } from '../apps/discovery/src/settings.js';
import { GATEWAY_SETTINGS } from '../apps/gateway/src/settings.js';
import { ADAPTER_SETTINGS } from '../apps/mcp/src/settings.js';
import { CLIENT_SETTINGS } from '../packages/client/src/settings.js';
import { DEVNET_SETTINGS } from '../packages/devnet/src/settings.js';
import { PROVIDER_SETTINGS } from '../packages/provider/src/settings.js';

export const ROOT = resolve(import.meta.dirname, '..');

/** What `npm start` (scripts/start.mjs) and `pnpm setup` (scripts/bootstrap.mjs) read themselves; the rest they pass on to the stack. */
export const START_SETTINGS = defineSettings({
  FAREBOX_EXAMPLE_PORTS: {
    meaning: "Pins the two examples' ports; by default they take free ones, so that two stacks (another `PORT` and `FAREBOX_DATA_DIR`) run side by side.",
    kind: textSetting('two ports, e.g. `4101,4102`'),
    default: 'unset: free ports',
  },
  FAREBOX_FORCE_BUILD: {
    meaning: 'Builds the workspace even when nothing it reads changed since the last build.',
    kind: textSetting('`1`'),
    default: 'unset',
  },
});

type AnySettings = Record<string, Pick<Setting, 'meaning' | 'default' | 'values' | 'secret' | 'deprecated'> & { kind: { values: string }; fallback?: unknown }>;

export interface SettingsHost {
  /** The key a page's generated block names (`<!-- settings:gateway ... -->`). */
  key: string;
  title: string;
  /** Where its settings are declared. */
  source: string;
  intro: string;
  settings: AnySettings;
  /** Sub-headings: the first variable of each group. */
  groups?: Record<string, string>;
}

export const HOSTS: SettingsHost[] = [
  {
    key: 'gateway',
    title: 'The gateway (`farebox-gateway`, `@farebox/gateway`)',
    source: 'apps/gateway/src/settings.ts',
    intro:
      'Read once at start (`loadConfig`, `configFromEnv`); a malformed value, or an unsafe one where money is real (docs/production.md), stops it with every problem named. An option given to `startGateway` or `configFromEnv` wins over its variable.',
    settings: GATEWAY_SETTINGS,
    groups: {
      HOST: 'Server',
      FAREBOX_LOG_LEVEL: 'Logs, metrics and health',
      STELLAR_NETWORK: 'Settlement network',
      FAREBOX_CALL_TIMEOUT_MS: 'Calls and limits',
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'Accounts and keys',
      FAREBOX_DISCOVERY_URL: 'Search',
      FAREBOX_SETTLEMENT_INTERVAL: 'Settlement and operators',
      FAREBOX_X402_FACILITATOR: 'The x402 facilitator',
    },
  },
  {
    key: 'discovery',
    title: 'The discovery service (`farebox-discovery`, `@farebox/discovery-service`)',
    source: 'apps/discovery/src/settings.ts',
    intro: 'Read once at start (`loadDiscoveryConfig`); a malformed value stops it with every problem named (docs/deploy.md).',
    settings: DISCOVERY_SETTINGS,
  },
  {
    key: 'cli',
    title: 'The CLI (`farebox`, `@farebox/cli`)',
    source: 'apps/cli/src/settings.ts',
    intro:
      'Read once per command; a flag wins over its variable. `farebox dev` and `farebox discovery` pass the whole environment on to the programs they start, which read their own (above).',
    settings: CLI_SETTINGS,
  },
  {
    key: 'mcp',
    title: 'The stdio MCP adapter (`farebox-mcp`, `@farebox/mcp`)',
    source: 'apps/mcp/src/settings.ts',
    intro: 'Read once at start (`loadAdapterConfig`); a malformed value stops it with every problem named on stderr.',
    settings: ADAPTER_SETTINGS,
  },
  {
    key: 'provider',
    title: 'The provider SDK (`@farebox/provider`)',
    source: 'packages/provider/src/settings.ts',
    intro:
      "A publisher's service reads these when `createProvider` is not given the option named (option, then variable, then the network preset); `createProvider` names every problem at once (`ConfigError`). `prepareLocalEnv` fills in the local ones from a running gateway.",
    settings: PROVIDER_SETTINGS,
  },
  {
    key: 'client',
    title: 'The caller SDK (`@farebox/client`)',
    source: 'packages/client/src/settings.ts',
    intro: '`createClient` and `createDiscoveryClient` read these when not given the option (their `env` option, default `process.env`).',
    settings: CLIENT_SETTINGS,
  },
  {
    key: 'devnet',
    title: 'The devnet (`farebox-devnet`, `@farebox/devnet`)',
    source: 'packages/devnet/src/settings.ts',
    intro: 'Its other settings are flags (`farebox-devnet --help`; docs/devnet.md).',
    settings: DEVNET_SETTINGS,
  },
  {
    key: 'start',
    title: 'The checkout (`npm start`, `pnpm setup`)',
    source: 'scripts/configuration.ts',
    intro:
      '`npm start` runs the local stack with `STELLAR_NETWORK=local`, `FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true`, `FAREBOX_ALLOW_MODEL_DOWNLOAD=true`, `FAREBOX_LOG_PRETTY=true` and `FAREBOX_SETTLEMENT_INTERVAL=1m` (publishers paid every minute) unless they are set, and `FAREBOX_DEVNET_PASSPHRASE=testnet` for a new data folder; it passes the rest on to the gateway. It reads these itself:',
    settings: START_SETTINGS,
  },
];

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function defaultText(s: AnySettings[string]): string {
  if (s.default !== undefined) return s.default;
  if (s.fallback !== undefined && s.fallback !== '') return `\`${String(s.fallback)}\``;
  return 'unset';
}

function meaningText(s: AnySettings[string]): string {
  return `${s.deprecated ? `Deprecated: set ${s.deprecated} instead. ` : ''}${s.meaning}`;
}

/** One table: every column (docs/configuration.md) or the short one other pages embed (variable, default, meaning). */
export function settingsTable(settings: AnySettings, names: readonly string[], full: boolean): string {
  const rows = names.map((name) => {
    const s = settings[name];
    if (!s) throw new Error(`no setting ${name}`);
    const values = `${s.values ?? s.kind.values}${s.secret ? ' (sensitive)' : ''}`;
    return full
      ? `| \`${name}\` | ${cell(defaultText(s))} | ${cell(values)} | ${cell(meaningText(s))} |`
      : `| \`${name}\` | ${cell(defaultText(s))} | ${cell(meaningText(s))} |`;
  });
  const head = full ? '| Variable | Default | Values | Meaning |\n|---|---|---|---|' : '| Variable | Default | Meaning |\n|---|---|---|';
  return `${head}\n${rows.join('\n')}`;
}

/** docs/configuration.md. */
export function renderConfiguration(): string {
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated by `pnpm docs:config` from the settings each host declares; edit those, not this page (tests/configuration.test.ts). -->',
    '',
    'Every environment variable each program and SDK reads: its default, the values it takes and what it does. Each host declares its',
    "variables once, with a zod schema per variable (`@farebox/protocol`'s setting kinds), reads its environment through that",
    'declaration and refuses to start on a malformed value, naming every problem at once. Empty counts as unset. Checks that',
    "depend on other settings (the network, mainnet's rules: docs/production.md) are made where the settings are used, in the",
    'same list of problems.',
    '',
  ];
  for (const host of HOSTS) out.push(`- [${host.title}](#${anchor(host.title)})`);
  out.push('');
  for (const host of HOSTS) {
    out.push(`## ${host.title}`, '', `Declared in \`${host.source}\`. ${host.intro}`, '');
    const names = Object.keys(host.settings);
    if (!host.groups) {
      out.push(settingsTable(host.settings, names, true), '');
      continue;
    }
    let group: string[] = [];
    let heading = '';
    const flush = () => {
      if (group.length) out.push(...(heading ? [`### ${heading}`, ''] : []), settingsTable(host.settings, group, true), '');
      group = [];
    };
    for (const name of names) {
      if (host.groups[name] !== undefined) {
        flush();
        heading = host.groups[name]!;
      }
      group.push(name);
    }
    flush();
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** GitHub's heading anchor. */
function anchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');
}

/** `<!-- settings:<host> NAME NAME ... -->` ... `<!-- /settings -->`: a table of those settings, generated in place. */
const BLOCK = /(<!-- settings:([a-z]+) ([A-Z0-9_ ]+) -->\n)[\s\S]*?(<!-- \/settings -->)/g;

/** A page with each of its generated blocks filled in from the settings. */
export function renderBlocks(page: string): string {
  return page.replace(BLOCK, (_all, open: string, key: string, names: string, close: string) => {
    const host = HOSTS.find((h) => h.key === key);
    if (!host) throw new Error(`settings block names no host: ${key}`);
    return `${open}${settingsTable(host.settings, names.trim().split(/\s+/), false)}\n${close}`;
  });
}

/** The pages that embed generated blocks (besides docs/configuration.md, generated whole). */
export const PAGES_WITH_BLOCKS = ['README.md', 'docs/deploy.md', 'docs/operations.md', 'docs/settlement.md', 'apps/mcp/README.md'];

/** Every generated file, as it should read: path, then text. */
export function generatedFiles(): Map<string, string> {
  const files = new Map<string, string>([['docs/configuration.md', renderConfiguration()]]);
  for (const page of PAGES_WITH_BLOCKS) files.set(page, renderBlocks(readFileSync(join(ROOT, page), 'utf8')));
  return files;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const [path, text] of generatedFiles()) {
    const full = join(ROOT, path);
    let before = '';
    try {
      before = readFileSync(full, 'utf8');
    } catch {}
    if (before !== text) {
      writeFileSync(full, text);
      console.log(`wrote ${path}`);
    }
  }
}
