import { describe, expect, it } from 'vitest';
import * as contract from '../src/index.js';

describe('public surface', () => {
  it('exports exactly these names', () => {
    expect(Object.keys(contract).sort()).toEqual([
      'CREDENTIAL_KINDS',
      'DiscoveryApiError',
      'IDEMPOTENCY_KEY_META',
      'MCP_INSTRUCTIONS',
      'MCP_TOOLS',
      'OAUTH_SCOPES',
      'TOOL_ERROR_META',
      'connections',
      'createDiscoveryClient',
      'credentialReaches',
      'discoveryAnswers',
      'findOperation',
      'inputs',
      'openApiPath',
      'operationList',
      'operations',
      'publisherLinks',
      'registerMcpTools',
      'runMcpTool',
      'schemas',
      'toolError',
      'toolResult',
      'webhooks',
    ]);
  });

  it("depends on zod and @farebox/protocol only (both runtime-neutral; the name policy is protocol's)", async () => {
    const pkg = (await import('../package.json', { with: { type: 'json' } })).default as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies)).toEqual(['@farebox/protocol', 'zod']);
  });
});
