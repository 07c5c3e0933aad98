import { StellarError, createAccounts, keypairSigner, type NetworkConfig, type RegistryAgent, type RegistryClient, type TxSigner } from '@farebox/stellar';
import { ProviderError } from './errors.js';

/** Result of {@link Provider.bootstrap}. */
export interface BootstrapResult {
  action: 'registered' | 'updated' | 'unchanged';
  service: string;
  owner: string;
  /** The endpoint stored in the registry. */
  endpoint: string;
  /** Hash of the register or update transaction. */
  transaction?: string;
  /** Explorer page of that transaction. */
  explorerUrl?: string;
  /** True when this bootstrap created the owner account through the friendbot. */
  funded: boolean;
  /** Hash of the change-trust transaction when this bootstrap set the USDC trustline. */
  trustlineTransaction?: string;
}

/** What the registry entry should say. */
export interface DesiredEntry {
  service: string;
  pricePerCall: bigint;
  endpoint: string;
  description: string;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

function lowFunds(e: unknown): boolean {
  const codes = e instanceof StellarError ? e.resultCodes : undefined;
  return !!codes && (codes.transaction === 'tx_insufficient_balance' || codes.operations.some((c) => c === 'op_low_reserve' || c === 'op_underfunded'));
}

/** Creates the owner account where a friendbot exists and sets the USDC trustline. */
async function prepareAccount(network: NetworkConfig, signer: TxSigner): Promise<{ funded: boolean; trustlineTransaction?: string }> {
  const accounts = createAccounts(network);
  const owner = signer.publicKey;
  const unfunded = (why: string) =>
    new ProviderError(
      'UNFUNDED',
      `the owner account ${owner} ${why} on ${network.name}, which has no friendbot: send it XLM from an existing account (and set its USDC trustline, issuer ${network.usdc.issuer}), then run bootstrap() again. Nothing was registered.`,
      { owner, network: network.name },
    );
  let funded = false;
  try {
    const { exists } = await accounts.balances(owner);
    if (!exists) {
      if (!network.friendbotUrl) throw unfunded('does not exist');
      await accounts.fund(owner);
      funded = true;
    }
  } catch (e) {
    if (e instanceof ProviderError) throw e;
    throw new ProviderError('CHAIN', `cannot fund the owner account ${owner} on ${network.name} (${network.horizonUrl}): ${message(e)}`, { owner });
  }
  try {
    const { txHash } = await accounts.ensureUsdcTrustline(signer);
    return { funded, ...(txHash ? { trustlineTransaction: txHash } : {}) };
  } catch (e) {
    if (lowFunds(e) && !network.friendbotUrl) throw unfunded('holds too little XLM for the trustline reserve and fees');
    throw new ProviderError('CHAIN', `cannot set the USDC trustline of ${owner} on ${network.name}: ${message(e)}`, { owner });
  }
}

function nameTaken(service: string, holder: string, owner: string): ProviderError {
  return new ProviderError('NAME_TAKEN', `service name "${service}" is registered to ${holder}, not to ${owner}: pick another name`, {
    service,
    owner: holder,
  });
}

/**
 * Makes the chain say what the provider serves: funds the owner (friendbot
 * networks), sets its USDC trustline, then registers the service or updates
 * the fields that changed.
 */
export async function bootstrapOnChain(network: NetworkConfig, registry: RegistryClient, secret: string, desired: DesiredEntry): Promise<BootstrapResult> {
  const signer = keypairSigner(secret);
  const owner = signer.publicKey;
  const read = async (): Promise<RegistryAgent | null> => {
    try {
      return await registry.getAgent(desired.service);
    } catch (e) {
      throw new ProviderError('REGISTRY', `cannot read the registry ${registry.contractId} at ${network.rpcUrl}: ${message(e)}`);
    }
  };
  const failure = (what: string, e: unknown) =>
    lowFunds(e) && !network.friendbotUrl
      ? new ProviderError('UNFUNDED', `${owner} cannot pay the fees of the ${what} on ${network.name}: ${message(e)}`, { owner, network: network.name })
      : new ProviderError('REGISTRY', `the ${what} of "${desired.service}" failed: ${message(e)}`, { service: desired.service });

  // Refuse a taken name before spending anything on the account.
  let existing = await read();
  if (existing && existing.owner !== owner) throw nameTaken(desired.service, existing.owner, owner);
  const account = await prepareAccount(network, signer);
  const base = { service: desired.service, owner, endpoint: desired.endpoint, ...account };
  const done = (action: BootstrapResult['action'], transaction?: string): BootstrapResult => ({
    action,
    ...base,
    ...(transaction ? { transaction, explorerUrl: network.explorer.tx(transaction) } : {}),
  });

  if (!existing) {
    try {
      return done('registered', (await registry.register(signer, desired)).txHash);
    } catch (e) {
      if (!(e instanceof StellarError && e.code === 'ALREADY_EXISTS')) throw failure('registration', e);
    }
    // Registered meanwhile (another process): reconcile against what is there now.
    existing = await read();
    if (!existing) throw new ProviderError('REGISTRY', `the registry refused "${desired.service}" as already registered but does not return it`);
    if (existing.owner !== owner) throw nameTaken(desired.service, existing.owner, owner);
  }

  const changes: { pricePerCall?: bigint; endpoint?: string; description?: string } = {};
  if (existing.pricePerCall !== desired.pricePerCall) changes.pricePerCall = desired.pricePerCall;
  if (existing.endpoint !== desired.endpoint) changes.endpoint = desired.endpoint;
  if (existing.description !== desired.description) changes.description = desired.description;
  if (Object.keys(changes).length === 0) return done('unchanged');
  try {
    return done('updated', (await registry.update(signer, desired.service, changes)).txHash);
  } catch (e) {
    throw failure('update', e);
  }
}
