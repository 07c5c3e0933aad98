import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';

// The MCP Registry entries of the remote server (/mcp) and of the stdio adapter package, against the schema
// the registry publishes for the `$schema` they name (vendored byte for byte: docs/mcp-registry, docs/oauth.md "MCP Registry").
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const read = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8')) as Record<string, any>;

const SCHEMA_URL = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';
// sha256 of the file published at SCHEMA_URL (the 2025-12-11 release of modelcontextprotocol/registry's schema).
const SCHEMA_SHA256 = '3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0';

/** `farebox.example` → `example.farebox`: the registry's domain namespace of a host. */
const reverseDns = (host: string) => host.split('.').reverse().join('.');
const namespaceOf = (name: string) => name.split('/')[0]!;

function validator() {
  const bytes = readFileSync(join(root, 'docs/mcp-registry/server.schema.json'));
  expect(createHash('sha256').update(bytes).digest('hex'), 'the vendored schema is the published 2025-12-11 file, unchanged').toBe(SCHEMA_SHA256);
  const schema = JSON.parse(bytes.toString('utf8'));
  expect(schema.$id).toBe(SCHEMA_URL);
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv.compile(schema);
}

describe('server.json for the MCP Registry', () => {
  const validate = validator();

  it('the remote server: valid, streamable-http at the gateway /mcp over https, named in the namespace of that host, versioned as the gateway', () => {
    const server = read('server.json');
    expect(validate(server), JSON.stringify(validate.errors)).toBe(true);
    expect(server.$schema).toBe(SCHEMA_URL);
    expect(server.remotes).toHaveLength(1);
    const [remote] = server.remotes;
    expect(remote.type).toBe('streamable-http');
    const url = new URL(remote.url);
    expect(url.protocol).toBe('https:');
    expect(url.pathname).toBe('/mcp');
    // A domain namespace is proven on its domain (mcp-publisher login http|dns): the host clients connect to.
    expect(namespaceOf(server.name)).toBe(reverseDns(url.hostname));
    expect(server.version).toBe(read('apps/gateway/package.json').version);
  });

  it('the stdio adapter: valid, the npm package as published (name, version, mcpName), in the same namespace, and the variables the adapter reads', () => {
    const server = read('apps/mcp/server.json');
    expect(validate(server), JSON.stringify(validate.errors)).toBe(true);
    expect(server.$schema).toBe(SCHEMA_URL);
    const pkg = read('apps/mcp/package.json');
    // The registry checks that the npm package names the server back (mcpName).
    expect(pkg.mcpName).toBe(server.name);
    expect(namespaceOf(server.name)).toBe(namespaceOf(read('server.json').name));
    expect(server.version).toBe(pkg.version);
    const [entry] = server.packages;
    expect(entry).toMatchObject({
      registryType: 'npm',
      registryBaseUrl: 'https://registry.npmjs.org',
      identifier: pkg.name,
      version: pkg.version,
      transport: { type: 'stdio' },
    });
    // The variables the adapter reads are those it declares (apps/mcp/src/settings.ts, read by config.ts through it).
    const settings = readFileSync(join(root, 'apps/mcp/src/settings.ts'), 'utf8');
    const read_ = [...new Set([...settings.matchAll(/^ {2}(FAREBOX_[A-Z_]+): \{/gm)].map((m) => m[1]))].sort();
    expect(read_.length).toBeGreaterThan(2);
    expect(entry.environmentVariables.map((v: { name: string }) => v.name).sort()).toEqual(read_);
    expect(entry.environmentVariables.find((v: { name: string }) => v.name === 'FAREBOX_API_KEY')).toMatchObject({ isSecret: true });
  });

  it('the schema refuses what the registry refuses (a wrong transport, a URL not starting with http(s), a missing version, a bad name)', () => {
    const server = read('server.json');
    expect(validate({ ...server, remotes: [{ type: 'websocket', url: 'https://x.example/mcp' }] })).toBe(false);
    // 2025-12-11 takes variables inside a URL (https://{tenant}.example/mcp), not in front of it.
    expect(validate({ ...server, remotes: [{ type: 'streamable-http', url: '{gateway_url}/mcp', variables: { gateway_url: {} } }] })).toBe(false);
    expect(validate({ ...server, remotes: [{ type: 'streamable-http', url: 'https://{tenant}.farebox.example/mcp', variables: { tenant: {} } }] })).toBe(true);
    const { version: _v, ...unversioned } = server;
    expect(validate(unversioned)).toBe(false);
    expect(validate({ ...server, name: 'farebox' })).toBe(false);
  });
});
