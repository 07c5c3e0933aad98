import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';

// Libraries take options; each host reads its environment once (apps/gateway
// loadConfig, apps/mcp loadAdapterConfig, apps/cli createContext) and passes
// it on. The only library code that may read process.env is a public SDK's
// documented configuration reader, listed here.
const ALLOWED: Record<string, string> = {
  'packages/provider/src/config.ts': 'the publisher SDK reads its options from the environment (spec: option, then environment variable, then preset)',
  'packages/client/src/direct.ts':
    'the caller SDK falls back to TRUSTLESS_WORK_API_KEY, TRUSTLESS_WORK_PLATFORM_ADDRESS and FAREBOX_URL (packages/client README)',
  'packages/client/src/discovery.ts': 'the caller SDK falls back to FAREBOX_DISCOVERY_URL (packages/client README)',
  'packages/devnet/src/cli.ts': 'the farebox-devnet bin is a host: it reads FAREBOX_DEVNET_PASSPHRASE (docs/devnet.md) and passes it to startDevnet',
  'packages/test-kit/src/tls.ts': "the private test kit finds the test run's certificate through NODE_EXTRA_CA_CERTS, which vitest.shared.ts sets",
  'packages/discovery/src/embedder.ts': 'createEmbedder() falls back to FAREBOX_MODEL_DIR (docs/search.md)',
};

const root = resolve(import.meta.dirname, '..');
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' || name === 'dist' ? [] : files(path);
    return /\.(ts|tsx|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

it('no library reads process.env outside the documented SDK configuration readers', () => {
  const readers: string[] = [];
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const src = join(root, 'packages', pkg, 'src');
    if (!statSync(join(root, 'packages', pkg)).isDirectory()) continue;
    let all: string[];
    try {
      all = files(src);
    } catch {
      continue;
    }
    for (const file of all) {
      // Code only: comments may name process.env.
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/(^|[^:])\/\/.*$/gm, '$1');
      if (/\bprocess\.env\b/.test(code)) readers.push(relative(root, file));
    }
  }
  expect(readers.filter((f) => !(f in ALLOWED))).toEqual([]);
  // Every exception is still real (remove it here once its package stops reading the environment).
  expect(Object.keys(ALLOWED).filter((f) => !readers.includes(f))).toEqual([]);
});

// gateway-core takes typed options (GatewayOptions, validated once by
// resolveGatewayConfig in src/config.ts); the gateway host reads the
// environment (apps/gateway/src/config.ts, configFromEnv). Nothing in
// gateway-core's src reads process.env, or an environment map handed in.
it('gateway-core reads no environment: neither process.env nor an env map', () => {
  const src = join(root, 'packages', 'gateway-core', 'src');
  const found: string[] = [];
  for (const file of files(src)) {
    const code = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|[^:])\/\/.*$/gm, '$1');
    code.split('\n').forEach((line, i) => {
      // process.env; env.X, env?.X, env['X'], options.env; an env map passed on (`env,` `env }` `env: env` `env: options.env`).
      if (/\bprocess\.env\b|\benv\s*(\?\.|\.|\[)|\.env\b|\benv\s*[,}]|\benv\s*:\s*[A-Za-z_$]/.test(line))
        found.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(found).toEqual([]);
});

// Each host reads its environment in one module, and process.env only in its
// entry point, which hands it there.
const HOST_READERS: Record<string, { config: string; entry: string }> = {
  gateway: { config: 'apps/gateway/src/config.ts', entry: 'apps/gateway/src/run.ts' },
  discovery: { config: 'apps/discovery/src/server.ts', entry: 'apps/discovery/src/main.ts' },
  mcp: { config: 'apps/mcp/src/config.ts', entry: 'apps/mcp/src/main.ts' },
  cli: { config: 'apps/cli/src/context.ts', entry: 'apps/cli/src/program.ts' },
};

it('each host reads its environment once: in its configuration module, from process.env in its entry point only', () => {
  const found: string[] = [];
  for (const [app, { config, entry }] of Object.entries(HOST_READERS)) {
    for (const file of files(join(root, 'apps', app, 'src'))) {
      const rel = relative(root, file);
      const code = readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/(^|[^:])\/\/.*$/gm, '$1');
      code.split('\n').forEach((line, i) => {
        if (/\bprocess\.env\b/.test(line) && rel !== entry) found.push(`${rel}:${i + 1}: ${line.trim()}`);
        else if (/\benv\s*(\?\.|\.|\[)/.test(line.replace(/\bprocess\.env\b/g, '')) && rel !== config) found.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  expect(found).toEqual([]);
});
