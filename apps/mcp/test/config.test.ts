import { expect, it } from 'vitest';
import { loadAdapterConfig } from '../src/config.js';

// The adapter's variables are declared once (src/settings.ts; docs/configuration.md is generated from it).
it('reads its settings, the connector URL taken as its gateway, and names every malformed one at once', () => {
  expect(loadAdapterConfig({ FAREBOX_URL: 'https://farebox.example/mcp/', FAREBOX_TOKEN_PATH: '/tmp/t.json', BROWSER: 'none' })).toEqual({
    url: 'https://farebox.example',
    mcpUrl: 'https://farebox.example/mcp',
    apiKey: undefined,
    tokenPath: '/tmp/t.json',
    clientName: '@farebox/mcp',
    openBrowser: false,
  });
  expect(loadAdapterConfig({ FAREBOX_URL: ' ', FAREBOX_API_KEY: 'sk_live_abc' })).toMatchObject({ url: 'http://127.0.0.1:8787', apiKey: 'sk_live_abc' });
  expect(() => loadAdapterConfig({ FAREBOX_URL: 'ftp://example.com', FAREBOX_API_KEY: 'pk_123', FAREBOX_CLIENT_NAME: 'x'.repeat(201) })).toThrow(
    'invalid configuration: FAREBOX_URL must be an http(s) URL, got "ftp://example.com"; FAREBOX_API_KEY must be a Farebox API key (it starts with sk_live_); FAREBOX_CLIENT_NAME is too long (max 200 characters)',
  );
});
