import { Asset } from '@stellar/stellar-sdk';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@farebox/protocol';
import * as api from '@farebox/stellar';
import {
  LOCAL_REGISTRY_CONTRACT_ID,
  LOCAL_USDC_ISSUER,
  resolveNetwork,
  TESTNET_USDC_ISSUER,
  unitsToDecimal,
  decimalToUnits,
  opCodeName,
  txCodeName,
} from '@farebox/stellar';

describe('resolveNetwork', () => {
  it('defaults to testnet with the public endpoints and the testnet USDC contract', () => {
    const n = resolveNetwork({ env: {} });
    expect(n).toMatchObject({
      name: 'testnet',
      passphrase: 'Test SDF Network ; September 2015',
      rpcUrl: 'https://soroban-testnet.stellar.org',
      x402Network: 'stellar:testnet',
      allowHttp: false,
    });
    expect(n.usdc.contractId).toBe('CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA');
    expect(n.registryContractId).toBeUndefined();
    expect(n.explorer.tx('ab')).toBe('https://stellar.expert/explorer/testnet/tx/ab');
  });

  it('builds the local preset from the devnet URL with deterministic issuer and registry', () => {
    const n = resolveNetwork({ network: 'local', devnetUrl: 'http://127.0.0.1:9999/devnet/', env: {} });
    expect(n).toMatchObject({
      rpcUrl: 'http://127.0.0.1:9999/devnet/soroban/rpc',
      horizonUrl: 'http://127.0.0.1:9999/devnet',
      friendbotUrl: 'http://127.0.0.1:9999/devnet/friendbot',
      registryContractId: LOCAL_REGISTRY_CONTRACT_ID,
      allowHttp: true,
      x402Network: 'stellar:local',
    });
    expect(n.usdc).toEqual({
      code: 'USDC',
      issuer: LOCAL_USDC_ISSUER,
      contractId: new Asset('USDC', LOCAL_USDC_ISSUER).contractId('Standalone Network ; February 2017'),
    });
    expect(n.explorer.contract('CX')).toBe('http://127.0.0.1:9999/devnet/explorer/local/contract/CX');
  });

  it("runs the local preset under the testnet passphrase as stellar:testnet, with testnet's USDC issuer and contract", () => {
    const viaOption = resolveNetwork({ network: 'local', devnetUrl: 'http://127.0.0.1:9999/devnet', devnetPassphrase: 'testnet', env: {} });
    expect(viaOption.passphrase).toBe('Test SDF Network ; September 2015');
    expect(viaOption.x402Network).toBe('stellar:testnet');
    expect(viaOption.usdc).toEqual({ code: 'USDC', issuer: TESTNET_USDC_ISSUER, contractId: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA' });
    expect(viaOption.registryContractId).toBe(LOCAL_REGISTRY_CONTRACT_ID);
    const viaEnv = resolveNetwork({ network: 'local', env: { FAREBOX_DEVNET_PASSPHRASE: 'testnet' } });
    expect(viaEnv.x402Network).toBe('stellar:testnet');
    const viaStellarEnv = resolveNetwork({ network: 'local', env: { STELLAR_NETWORK_PASSPHRASE: 'Test SDF Network ; September 2015' } });
    expect(viaStellarEnv.x402Network).toBe('stellar:testnet');
    const literal = resolveNetwork({ network: 'local', env: { FAREBOX_DEVNET_PASSPHRASE: 'My Devnet ; 2026' } });
    expect([literal.passphrase, literal.x402Network]).toEqual(['My Devnet ; 2026', 'stellar:local']);
    expect(resolveNetwork({ network: 'local', env: { FAREBOX_DEVNET_PASSPHRASE: 'local' } }).passphrase).toBe('Standalone Network ; February 2017');
    // Only the local preset reads the devnet's passphrase.
    expect(resolveNetwork({ network: 'mainnet', env: { FAREBOX_DEVNET_PASSPHRASE: 'testnet' } }).passphrase).toBe(
      'Public Global Stellar Network ; September 2015',
    );
  });

  it('refuses the mainnet passphrase for the devnet', () => {
    expect(() => resolveNetwork({ network: 'local', env: { FAREBOX_DEVNET_PASSPHRASE: 'Public Global Stellar Network ; September 2015' } })).toThrow(
      'the devnet passphrase must not be the mainnet one (its signatures would be valid on the public network)',
    );
    expect(() => api.devnetPassphrase('mainnet')).toThrow(ConfigError);
    expect(api.devnetPassphrase(undefined)).toBe('Standalone Network ; February 2017');
    expect(api.devnetPassphrase('testnet')).toBe('Test SDF Network ; September 2015');
  });

  it('takes options over environment over preset, and keeps instances independent', () => {
    const env = { STELLAR_NETWORK: 'mainnet', STELLAR_RPC_URL: 'https://rpc.example', STELLAR_CONTRACT_ID: LOCAL_REGISTRY_CONTRACT_ID };
    const main = resolveNetwork({ env });
    expect(main).toMatchObject({ name: 'mainnet', rpcUrl: 'https://rpc.example', registryContractId: LOCAL_REGISTRY_CONTRACT_ID });
    expect('friendbotUrl' in main).toBe(false);
    expect(main.usdc.contractId).toBe('CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75');
    const test = resolveNetwork({ network: 'testnet', rpcUrl: 'https://mine.example', env });
    expect(test).toMatchObject({ name: 'testnet', rpcUrl: 'https://mine.example' });
    expect(main.name).toBe('mainnet');
  });

  it('reports every configuration problem at once', () => {
    let err: unknown;
    try {
      resolveNetwork({ network: 'moon' as never, rpcUrl: 'not a url', contractId: 'CNOPE', env: {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toHaveLength(3);
  });
});

describe('helpers', () => {
  it('converts between 7-decimal strings and base units exactly', () => {
    expect(decimalToUnits('1.2500000')).toBe(12_500_000n);
    expect(decimalToUnits('922337203685.4775807')).toBe(9_223_372_036_854_775_807n);
    expect(unitsToDecimal(1n)).toBe('0.0000001');
  });

  it('spells result codes as Horizon does', () => {
    expect(txCodeName('txBadSeq')).toBe('tx_bad_seq');
    expect(txCodeName('txNoAccount')).toBe('tx_no_source_account');
    expect(opCodeName('paymentNoTrust')).toBe('op_no_trust');
    expect(opCodeName('paymentUnderfunded')).toBe('op_underfunded');
    expect(opCodeName('createAccountAlreadyExist')).toBe('op_already_exists');
  });

  it('exports exactly the documented names', () => {
    expect(Object.keys(api).sort()).toMatchInlineSnapshot(`
      [
        "CHANNEL_COMMITMENT_DOMAIN",
        "CHANNEL_ERRORS",
        "DEFAULT_DEVNET_URL",
        "FileCursorStore",
        "LOCAL_CHANNEL_FACTORY_ID",
        "LOCAL_CHANNEL_WASM_HASH",
        "LOCAL_PASSPHRASE",
        "LOCAL_REGISTRY_CONTRACT_ID",
        "LOCAL_USDC_ISSUER",
        "LOCAL_USDC_ISSUER_SECRET",
        "MAINNET_PASSPHRASE",
        "MemoryCursorStore",
        "REGISTRY_ERRORS",
        "REGISTRY_LIMITS",
        "StellarError",
        "TESTNET_PASSPHRASE",
        "TESTNET_USDC_ISSUER",
        "channelAddress",
        "channelInvoke",
        "commitmentBytes",
        "commitmentScVal",
        "createAccounts",
        "createCatalogMirror",
        "createRegistryClient",
        "decimalToUnits",
        "devnetPassphrase",
        "keypairSigner",
        "opCodeName",
        "openChannel",
        "readChannelState",
        "readMuxedAddress",
        "resolveNetwork",
        "resultCodesFromXdr",
        "rpcServer",
        "serviceMuxedId",
        "servicePayTo",
        "txCodeName",
        "unitsToDecimal",
      ]
    `);
  });
});
