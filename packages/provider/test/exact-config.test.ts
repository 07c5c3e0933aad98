// The options of the `exact` payment and of the bazaar extension: what is
// offered where, and every refusal with its message (no chain needed).
import { ConfigError, encodeStrKey, randomBytes } from '@farebox/protocol';
import { resolveNetwork } from '@farebox/stellar';
import { describe, expect, it } from 'vitest';
import { createProvider, type ProviderOptions } from '../src/index.js';
import { Keypair } from '@stellar/stellar-sdk';
import { ownerWallet } from './helpers.js';

const payTo = encodeStrKey('publicKey', randomBytes(32));
const base: ProviderOptions = { service: 'echo', pricePerCall: '0.01', network: 'testnet', ownerWallet, allowUnverified: true, onWarning: () => {}, env: {} };

function problems(options: ProviderOptions): string[] {
  try {
    createProvider(options);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('exact options', () => {
  it("uses the platform's facilitator at <platform.url>/x402 on testnet, with the USDC token contract, 60 s, settling after the handler and the store next to the keypair", () => {
    const { config } = createProvider({ ...base, env: { FAREBOX_URL: 'https://farebox.example/' } });
    expect(config.exact).toEqual({
      facilitatorUrl: 'https://farebox.example/x402',
      platform: true,
      asset: resolveNetwork({ network: 'testnet' }).usdc.contractId,
      maxTimeoutSeconds: 60,
      settle: 'after-handler',
      servedStorePath: '.farebox/served-exact-payments.json',
    });
    expect(config.warnings).toEqual([]);
    expect(createProvider({ ...base, env: { FAREBOX_URL: 'https://farebox.example/' } }).manifest().payments).toEqual(['exact']);
  });

  it('takes another facilitator with its payTo from options or environment', () => {
    const fromEnv = createProvider({ ...base, env: { FAREBOX_FACILITATOR_URL: 'https://fac.example', FAREBOX_EXACT_PAY_TO: payTo } }).config.exact;
    expect(fromEnv).toMatchObject({ facilitatorUrl: 'https://fac.example', platform: false, payTo });
    const fromOptions = createProvider({ ...base, exact: { facilitatorUrl: 'https://fac.example/', payTo, maxTimeoutSeconds: 30 } }).config.exact;
    expect(fromOptions).toMatchObject({ facilitatorUrl: 'https://fac.example', platform: false, payTo, maxTimeoutSeconds: 30 });
  });

  it("settles before the handler runs only when asked (settle: 'before-handler'), and refuses any other value", () => {
    const platform = { FAREBOX_URL: 'https://farebox.example/' };
    const owner = Keypair.random();
    const withSecret = { ...base, ownerWallet: owner.publicKey(), wallet: { secret: owner.secret() } };
    expect(createProvider({ ...withSecret, exact: { settle: 'before-handler' }, env: platform }).config.exact?.settle).toBe('before-handler');
    // Settle-first refunds a failed handler's payment with a request its owner signs: the secret is required.
    expect(problems({ ...base, exact: { settle: 'before-handler' }, env: platform })).toEqual([
      "exact.settle 'before-handler' needs the owner's secret (wallet.secret, AGENT_WALLET_SECRET, wallet.keypairPath or KEYPAIR_PATH): a payment settled before a handler that fails is refunded by a request the owner's key signs",
    ]);
    // With another facilitator (no refund operation there) it is not needed: the refund stays the owner's, by hand.
    expect(
      createProvider({ ...base, exact: { settle: 'before-handler', facilitatorUrl: 'https://fac.example', payTo }, env: platform }).config.exact?.settle,
    ).toBe('before-handler');
    expect(createProvider({ ...base, exact: { settle: 'after-handler' }, env: platform }).config.exact?.settle).toBe('after-handler');
    expect(problems({ ...base, exact: { settle: 'first' as never }, env: platform })).toEqual([
      `exact.settle must be 'after-handler' (the default) or 'before-handler', not "first"`,
    ]);
  });

  it('offers no exact on the local devnet passphrase, without a facilitator, or when turned off', () => {
    expect(createProvider({ ...base, network: 'local', env: { FAREBOX_URL: 'http://127.0.0.1:8787' } }).config.exact).toBeUndefined();
    expect(createProvider({ ...base, platform: { publicKey: payTo } }).config.exact).toBeUndefined();
    expect(createProvider({ ...base, exact: false, env: { FAREBOX_URL: 'https://farebox.example' } }).config.exact).toBeUndefined();
  });

  it('runs on the devnet under the testnet passphrase (devnetPassphrase or FAREBOX_DEVNET_PASSPHRASE)', () => {
    const { config } = createProvider({ ...base, network: 'local', env: { FAREBOX_URL: 'http://127.0.0.1:8787', FAREBOX_DEVNET_PASSPHRASE: 'testnet' } });
    expect(config.x402Network).toBe('stellar:testnet');
    expect(config.exact?.facilitatorUrl).toBe('http://127.0.0.1:8787/x402');
  });

  it('refuses a facilitator without payTo, payTo without a facilitator, a bad payTo, a bad timeout, and a facilitator on a network exact does not run on', () => {
    expect(problems({ ...base, exact: { facilitatorUrl: 'https://fac.example' } })).toEqual([
      'exact.payTo (FAREBOX_EXACT_PAY_TO) is required with another facilitator (exact.facilitatorUrl): the account the payments go to',
    ]);
    expect(problems({ ...base, env: { FAREBOX_EXACT_PAY_TO: payTo } })).toEqual([
      "exact.payTo (from FAREBOX_EXACT_PAY_TO) is set without exact.facilitatorUrl (FAREBOX_FACILITATOR_URL): the platform's facilitator names the receiver itself (the platform treasury)",
    ]);
    expect(problems({ ...base, exact: { facilitatorUrl: 'ftp://fac.example', payTo: 'GNOPE', maxTimeoutSeconds: 0 } })).toEqual([
      'exact.facilitatorUrl must be an http(s) URL: "ftp://fac.example"',
      'exact.payTo is not a valid G... or C... address',
      'exact.maxTimeoutSeconds must be an integer from 1 to 3600',
    ]);
    expect(problems({ ...base, network: 'local', exact: { facilitatorUrl: 'https://fac.example', payTo } })).toEqual([
      'exact.facilitatorUrl: exact payments run on stellar:testnet or stellar:pubnet, this service is on stellar:local (run the devnet under the testnet passphrase: FAREBOX_DEVNET_PASSPHRASE=testnet)',
    ]);
  });
});

describe('discovery options', () => {
  const discovery = {
    input: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    output: { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'] },
    example: { input: { text: 'hi' }, output: { echo: 'hi' } },
  };

  it('builds the bazaar extension (a JSON POST) and shows it in /manifest', () => {
    const provider = createProvider({ ...base, discovery });
    expect(provider.config.bazaar).toMatchObject({
      info: { input: { type: 'http', method: 'POST', bodyType: 'json', body: { text: 'hi' } }, output: { type: 'json', example: { echo: 'hi' } } },
      schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', properties: { input: { properties: { body: discovery.input } } } },
    });
    expect(provider.manifest().bazaar).toEqual(provider.config.bazaar);
  });

  it('refuses an example that does not match its schema, and schemas that are not objects', () => {
    expect(problems({ ...base, discovery: { ...discovery, example: { input: { text: 3 }, output: { echo: 'hi' } } } })).toEqual([
      'discovery: the example does not match the schemas: /input/body/text: must be string',
    ]);
    expect(problems({ ...base, discovery: { ...discovery, example: { input: { text: 'hi' }, output: {} } } })).toEqual([
      "discovery: the example does not match the schemas: /output/example: must have required property 'echo'",
    ]);
    expect(problems({ ...base, discovery: { input: 'text' as never, output: [] as never } })).toEqual([
      'discovery.input must be a JSON Schema object',
      'discovery.output must be a JSON Schema object',
    ]);
    expect(problems({ ...base, discovery: { example: { input: 'hi' } } })).toEqual([
      'discovery.example.input must be a JSON object (the payload of a JSON POST)',
    ]);
  });
});
