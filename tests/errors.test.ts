import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { ERRORS_DOC, FareboxError } from '../packages/protocol/src/index.js';

// One error base class: every error class a package exports extends
// FareboxError (code, message, data, cause, docs), and docs/errors.md has its
// section.
const root = resolve(import.meta.dirname, '..');
const entries: Record<string, () => Promise<Record<string, unknown>>> = {
  '@farebox/protocol': () => import('../packages/protocol/src/index.js'),
  '@farebox/protocol/files': () => import('../packages/protocol/src/node/files.js'),
  '@farebox/contract': () => import('../packages/contract/src/index.js'),
  '@farebox/stellar': () => import('../packages/stellar/src/index.js'),
  '@farebox/escrow': () => import('../packages/escrow/src/index.js'),
  '@farebox/wallets': () => import('../packages/wallets/src/index.js'),
  '@farebox/ledger': () => import('../packages/ledger/src/index.js'),
  '@farebox/discovery': () => import('../packages/discovery/src/index.js'),
  '@farebox/client': () => import('../packages/client/src/index.js'),
  '@farebox/client/oauth': () => import('../packages/client/src/oauth/index.js'),
  '@farebox/provider': () => import('../packages/provider/src/index.js'),
  '@farebox/devnet': () => import('../packages/devnet/src/index.js'),
  '@farebox/gateway-core': () => import('../packages/gateway-core/src/index.js'),
  '@farebox/gateway-http': () => import('../packages/gateway-http/src/index.js'),
};

const isErrorClass = (v: unknown): v is new (...args: never[]) => Error => typeof v === 'function' && v.prototype instanceof Error;

it('every exported error class of every package extends FareboxError and is described in docs/errors.md', async () => {
  const doc = readFileSync(resolve(root, ERRORS_DOC), 'utf8');
  const headings = new Set([...doc.matchAll(/^#{2,3} (\w+)$/gm)].map((m) => m[1]!.toLowerCase()));
  const found: string[] = [];
  const offenders: string[] = [];
  for (const [entry, load] of Object.entries(entries)) {
    for (const [name, value] of Object.entries(await load())) {
      if (!isErrorClass(value)) continue;
      found.push(name);
      if (value !== FareboxError && !(value.prototype instanceof FareboxError)) offenders.push(`${entry}: ${name} does not extend FareboxError`);
      if (!headings.has(name.toLowerCase())) offenders.push(`${entry}: ${name} has no section in ${ERRORS_DOC}`);
    }
  }
  expect(offenders).toEqual([]);
  // The classes this test checks (a new package's errors must appear here too).
  expect([...new Set(found)].sort()).toEqual([
    'ClientError',
    'ConfigError',
    'DiscoveryApiError',
    'DiscoveryError',
    'EndpointVerificationError',
    'EscrowError',
    'EscrowPaymentError',
    'FareboxError',
    'GatewayApiError',
    'GatewayError',
    'HostError',
    'LedgerError',
    'LockHeldError',
    'LockTimeoutError',
    'MppError',
    'OAuthClientError',
    'ProviderError',
    'StellarError',
    'WalletError',
  ]);
});

it('keeps each error’s code, message, data and cause, and links its docs section', async () => {
  const { LedgerError } = await import('../packages/ledger/src/index.js');
  const { GatewayError, HTTP_STATUS } = await import('../packages/gateway-core/src/index.js');
  const { EscrowError } = await import('../packages/escrow/src/index.js');
  const cause = new Error('driver failed');
  const e = new LedgerError('INSUFFICIENT_BALANCE', 'insufficient balance', { needed: '10' }, { cause });
  expect(e).toBeInstanceOf(FareboxError);
  expect({ name: e.name, code: e.code, message: e.message, data: e.data, cause: e.cause, docs: e.docs }).toEqual({
    name: 'LedgerError',
    code: 'INSUFFICIENT_BALANCE',
    message: 'insufficient balance',
    data: { needed: '10' },
    cause,
    docs: 'docs/errors.md#ledgererror',
  });
  const g = new GatewayError('RATE_LIMITED', 'rate limit exceeded', undefined, { 'Retry-After': '3' });
  expect([g.status, HTTP_STATUS[g.code], g.headers]).toEqual([429, 429, { 'Retry-After': '3' }]);
  const esc = new EscrowError('HTTP', 'escrow provider answered 404', { status: 404, providerMessage: 'Escrow not found' });
  expect([esc.status, esc.providerMessage, esc.data]).toEqual([404, 'Escrow not found', { status: 404, providerMessage: 'Escrow not found' }]);
  expect(String(e)).toBe('LedgerError: insufficient balance');
});
