// Options of the standard x402 `exact` payment and of the bazaar discovery
// extension: what createProvider reads and validates for them.
import { dirname, join } from 'node:path';
import { EXACT_NETWORKS, isValidStrKey, type X402Network } from '@farebox/protocol';
import { bazaarResourceServerExtension, declareDiscoveryExtension, validateDiscoveryExtension, type DiscoveryExtension } from '@x402/extensions/bazaar';
import { checkUrl, label, nonEmpty, pick, type ProviderEnv } from './config-util.js';
import type { ServedEscrowStore } from './served-store.js';

/** When an `exact` payment is settled: after the handler answered (default), or before it runs. */
export type ExactSettle = 'after-handler' | 'before-handler';

/**
 * The standard x402 `exact` payment (one signed USDC `transfer`, verified by a
 * facilitator before the handler runs and settled once it answered). Offered on
 * `stellar:testnet` / `stellar:pubnet` (the devnet counts as testnet under the
 * testnet passphrase) when a facilitator is known.
 */
export interface ExactOptions {
  /**
   * The facilitator's base URL (`POST <url>/verify`, `POST <url>/settle`).
   * Env: `FAREBOX_FACILITATOR_URL`. Default: the platform's, `<platform.url>/x402`
   * (which names `payTo`, the platform treasury, at `GET <url>/supported`).
   */
  facilitatorUrl?: string;
  /**
   * Who receives the payments (`G...` or `C...`). Env: `FAREBOX_EXACT_PAY_TO`.
   * Required with `facilitatorUrl`; refused with the platform's facilitator (it names the treasury).
   */
  payTo?: string;
  /**
   * How long a payer's authorization stays valid, seconds (1 to 3600); default 60.
   * With `settle: 'after-handler'` it is also how long the handler has to answer.
   */
  maxTimeoutSeconds?: number;
  /**
   * When the payment is settled. `'after-handler'` (default): verified, the
   * handler runs, and it is settled only when the handler answered (below
   * 400, within `maxTimeoutSeconds`); a failed handler moves no money.
   * `'before-handler'`: settled before the handler runs, for a service that
   * must be paid before it acts; a failed handler then leaves the payer
   * charged, and the refund is the owner's to make by hand.
   */
  settle?: ExactSettle;
  /** Where served payments are recorded (a durable JSON file); default `served-exact-payments.json` next to the keypair file. */
  servedStorePath?: string;
  /** A store of served payments instead of the file (shared by replicas). */
  servedStore?: ServedEscrowStore;
}

/** What the service takes and returns, shown to x402 catalogs as the `bazaar` extension and in `/manifest`. */
export interface DiscoveryOptions {
  /** JSON Schema of the payload (the JSON request body). */
  input?: Record<string, unknown>;
  /** JSON Schema of the result (shown with an example output only, as the bazaar extension does). */
  output?: Record<string, unknown>;
  /** One call: a payload and the result it gets (checked against the schemas). */
  example?: { input?: unknown; output?: unknown };
}

/** The `exact` settings a provider runs with. */
export interface ResolvedExact {
  facilitatorUrl: string;
  /** Whether the facilitator is the platform's (`payTo` is then learned from its `/supported`). */
  platform: boolean;
  /** The receiver, when configured (another facilitator). */
  payTo?: string;
  /** The USDC token contract, `C...`. */
  asset: string;
  maxTimeoutSeconds: number;
  settle: ExactSettle;
  servedStorePath: string;
}

const isPlainObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads the `exact` options; undefined when `exact` is not offered (off, another network, or no facilitator known). */
export function resolveExact(
  options: ExactOptions | false | undefined,
  env: ProviderEnv,
  chain: { x402Network: X402Network | undefined; usdcContractId: string | undefined; platformUrl: string | undefined; keypairFile: string | undefined },
  problems: string[],
): ResolvedExact | undefined {
  if (options === false) return undefined;
  if (options !== undefined && !isPlainObject(options)) {
    problems.push('exact must be an object or false');
    return undefined;
  }
  const urlPick = pick(options?.facilitatorUrl, env, 'FAREBOX_FACILITATOR_URL');
  const payToPick = pick(options?.payTo, env, 'FAREBOX_EXACT_PAY_TO');
  const capable = (EXACT_NETWORKS as readonly string[]).includes(chain.x402Network ?? '');
  if (urlPick.from === 'option' && chain.x402Network && !capable) {
    problems.push(
      `exact.facilitatorUrl: exact payments run on ${EXACT_NETWORKS.join(' or ')}, this service is on ${chain.x402Network} (run the devnet under the testnet passphrase: FAREBOX_DEVNET_PASSPHRASE=testnet)`,
    );
  }
  if (urlPick.value !== undefined) checkUrl(urlPick.value, label('exact.facilitatorUrl', urlPick.from), problems);
  if (payToPick.value !== undefined && !isValidStrKey('publicKey', payToPick.value) && !isValidStrKey('contract', payToPick.value)) {
    problems.push(`${label('exact.payTo', payToPick.from)} is not a valid G... or C... address`);
  }
  if (urlPick.value !== undefined && payToPick.value === undefined) {
    problems.push(
      `exact.payTo (FAREBOX_EXACT_PAY_TO) is required with another facilitator (${label('exact.facilitatorUrl', urlPick.from)}): the account the payments go to`,
    );
  }
  if (urlPick.value === undefined && payToPick.value !== undefined) {
    problems.push(
      `${label('exact.payTo', payToPick.from)} is set without exact.facilitatorUrl (FAREBOX_FACILITATOR_URL): the platform's facilitator names the receiver itself (the platform treasury)`,
    );
  }
  const timeout = options?.maxTimeoutSeconds ?? 60;
  if (!Number.isSafeInteger(timeout) || timeout < 1 || timeout > 3600) problems.push('exact.maxTimeoutSeconds must be an integer from 1 to 3600');
  const settle = options?.settle ?? 'after-handler';
  if (settle !== 'after-handler' && settle !== 'before-handler') {
    problems.push(`exact.settle must be 'after-handler' (the default) or 'before-handler', not ${JSON.stringify(settle)}`);
  }
  if (options?.servedStorePath !== undefined && (typeof options.servedStorePath !== 'string' || options.servedStorePath.trim() === '')) {
    problems.push('exact.servedStorePath must be a file path');
  }
  if (options?.servedStore !== undefined && typeof options.servedStore?.claim !== 'function') {
    problems.push('exact.servedStore must implement claim, update, get and list');
  }
  const facilitatorUrl = urlPick.value ?? (chain.platformUrl !== undefined ? `${chain.platformUrl.replace(/\/+$/, '')}/x402` : undefined);
  if (!capable || facilitatorUrl === undefined || chain.usdcContractId === undefined) return undefined;
  return {
    facilitatorUrl: facilitatorUrl.replace(/\/+$/, ''),
    platform: urlPick.value === undefined,
    ...(payToPick.value !== undefined ? { payTo: payToPick.value } : {}),
    asset: chain.usdcContractId,
    maxTimeoutSeconds: timeout,
    settle,
    servedStorePath: nonEmpty(options?.servedStorePath) ?? join(dirname(chain.keypairFile ?? '.farebox/keypair'), 'served-exact-payments.json'),
  };
}

/**
 * Builds the `bazaar` extension from the discovery options with
 * `@x402/extensions`' `declareDiscoveryExtension` (a JSON POST route) and checks
 * it with its `validateDiscoveryExtension` (the example against the schemas).
 */
export function resolveDiscovery(options: DiscoveryOptions | undefined, problems: string[]): Record<string, unknown> | undefined {
  if (options === undefined) return undefined;
  if (!isPlainObject(options)) {
    problems.push('discovery must be an object { input, output, example }');
    return undefined;
  }
  const before = problems.length;
  if (options.input !== undefined && !isPlainObject(options.input)) problems.push('discovery.input must be a JSON Schema object');
  if (options.output !== undefined && !isPlainObject(options.output)) problems.push('discovery.output must be a JSON Schema object');
  if (options.example !== undefined && !isPlainObject(options.example)) problems.push('discovery.example must be an object { input, output }');
  if (problems.length > before) return undefined;
  const example = options.example ?? {};
  if (example.input !== undefined && !isPlainObject(example.input)) {
    problems.push('discovery.example.input must be a JSON object (the payload of a JSON POST)');
    return undefined;
  }
  const declared = declareDiscoveryExtension({
    bodyType: 'json',
    ...(example.input !== undefined ? { input: example.input as Record<string, unknown> } : {}),
    ...(options.input ? { inputSchema: options.input } : {}),
    ...(example.output !== undefined ? { output: { example: example.output, ...(options.output ? { schema: options.output } : {}) } } : {}),
  }).bazaar;
  // The method, as the stock resource server's bazaar extension adds it for each request (a provider's paid route is a POST).
  const bazaar = bazaarResourceServerExtension.enrichDeclaration?.(declared, { method: 'POST', adapter: {} }) as DiscoveryExtension;
  const verdict = validateDiscoveryExtension(bazaar);
  if (!verdict.valid) {
    problems.push(`discovery: the example does not match the schemas: ${(verdict.errors ?? []).join('; ')}`);
    return undefined;
  }
  return JSON.parse(JSON.stringify(bazaar)) as Record<string, unknown>;
}
