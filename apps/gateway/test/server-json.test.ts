import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';

// The MCP Registry entries of the remote server (/mcp) and of the stdio adapter package, against the registry's schema (vendored: docs/mcp-registry).
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const read = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8')) as Record<string, any>;

function validator() {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv.compile(read('docs/mcp-registry/server.schema.json'));
}

describe('server.json for the MCP Registry', () => {
  const validate = validator();

  it('the remote server: valid, streamable-http at the gateway /mcp, versioned as the gateway', () => {
    const server = read('server.json');
    expect(validate(server), JSON.stringify(validate.errors)).toBe(true);
    expect(server.remotes).toEqual([expect.objectContaining({ type: 'streamable-http', url: '{gateway_url}/mcp' })]);
    expect(server.version).toBe(read('apps/gateway/package.json').version);
    expect(server.$schema).toBe('https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json');
  });

  it('the stdio adapter: valid, the npm package as published (name, version, mcpName), and the variables the adapter reads', () => {
    const server = read('apps/mcp/server.json');
    expect(validate(server), JSON.stringify(validate.errors)).toBe(true);
    const pkg = read('apps/mcp/package.json');
    // The registry checks that the npm package names the server back (mcpName).
    expect(pkg.mcpName).toBe(server.name);
    expect(server.version).toBe(pkg.version);
    const [entry] = server.packages;
    expect(entry).toMatchObject({ registryType: 'npm', identifier: pkg.name, version: pkg.version, transport: { type: 'stdio' } });
    const config = readFileSync(join(root, 'apps/mcp/src/config.ts'), 'utf8');
    const read_ = [...new Set([...config.matchAll(/env\.(FAREBOX_[A-Z_]+)/g)].map((m) => m[1]))].sort();
    expect(entry.environmentVariables.map((v: { name: string }) => v.name).sort()).toEqual(read_);
    expect(entry.environmentVariables.find((v: { name: string }) => v.name === 'FAREBOX_API_KEY')).toMatchObject({ isSecret: true });
  });

  it('the schema refuses what the registry refuses (a wrong transport, a missing version)', () => {
    const server = read('server.json');
    expect(validate({ ...server, remotes: [{ type: 'websocket', url: 'https://x.example/mcp' }] })).toBe(false);
    const { version: _v, ...unversioned } = server;
    expect(validate(unversioned)).toBe(false);
  });
});
