import { Asset, BASE_FEE, Horizon, Operation, StrKey, TransactionBuilder } from '@stellar/stellar-sdk';
import { StellarError, type ResultCodes } from './errors.js';
import type { NetworkConfig } from './network.js';
import type { TxSigner } from './signer.js';

export interface AccountBalances {
  exists: boolean;
  /** Stroops (1 XLM = 10,000,000). */
  xlm: bigint;
  /** USDC base units; null when the account has no USDC trustline. */
  usdc: bigint | null;
}

export interface Accounts {
  /** Funds a new account through the network's friendbot (test networks only). */
  fund(address: string): Promise<void>;
  /**
   * Creates `address` on chain with `startingXlm` stroops paid by `funder` (networks without a
   * friendbot); an account that already exists is left as it is.
   */
  createAccount(funder: TxSigner, address: string, startingXlm: bigint): Promise<{ txHash?: string }>;
  ensureUsdcTrustline(signer: TxSigner): Promise<{ txHash?: string }>;
  balances(address: string): Promise<AccountBalances>;
  payUsdc(signer: TxSigner, to: string, amount: bigint): Promise<{ txHash: string }>;
  /** Pays `stroops` of XLM (native) from `signer` to the existing account `to`. */
  payXlm(signer: TxSigner, to: string, stroops: bigint): Promise<{ txHash: string }>;
}

/** "12.3400000" -> 123400000n (7 decimals, exact). */
export function decimalToUnits(text: string): bigint {
  const m = /^(-?)(\d+)(?:\.(\d{1,7}))?$/.exec(text.trim());
  if (!m) throw new StellarError('RPC_ERROR', `unexpected amount "${text}"`);
  const units = BigInt(m[2]!) * 10_000_000n + BigInt((m[3] ?? '').padEnd(7, '0'));
  return m[1] ? -units : units;
}

/** 123400000n -> "12.3400000". */
export function unitsToDecimal(units: bigint): string {
  const neg = units < 0n;
  const abs = neg ? -units : units;
  return `${neg ? '-' : ''}${abs / 10_000_000n}.${(abs % 10_000_000n).toString().padStart(7, '0')}`;
}

function requireAccountId(label: string, v: unknown): string {
  if (!StrKey.isValidEd25519PublicKey(String(v))) throw new StellarError('INVALID_INPUT', `${label} must be a G... public key`);
  return String(v);
}

interface HorizonProblem {
  response?: { status?: number; data?: { detail?: string; extras?: { result_codes?: { transaction?: string; operations?: string[] }; result_xdr?: string } } };
}

function horizonFailure(e: unknown, what: string): StellarError {
  const resp = (e as HorizonProblem).response;
  const codes = resp?.data?.extras?.result_codes;
  if (codes?.transaction) {
    const resultCodes: ResultCodes = { transaction: codes.transaction, operations: codes.operations ?? [] };
    const ops = resultCodes.operations.filter((c) => c !== 'op_success');
    return new StellarError('TX_FAILED', `${what} failed: ${resultCodes.transaction}${ops.length ? ` (${ops.join(', ')})` : ''}`, { resultCodes });
  }
  const message = e instanceof Error ? e.message : String(e);
  return new StellarError('RPC_ERROR', `${what} failed: ${resp?.data?.detail ?? message}`, { status: resp?.status });
}

/**
 * Account helpers over Horizon: friendbot funding, the USDC trustline, balances
 * and USDC payments (classic operations).
 *
 * @example
 * const accounts = createAccounts(network);
 * await accounts.fund(signer.publicKey);
 * await accounts.ensureUsdcTrustline(signer);
 */
export function createAccounts(config: NetworkConfig): Accounts {
  const horizon = new Horizon.Server(config.horizonUrl, { allowHttp: config.allowHttp });
  const usdc = new Asset(config.usdc.code, config.usdc.issuer);

  async function load(address: string): Promise<Horizon.AccountResponse | null> {
    try {
      return await horizon.loadAccount(address);
    } catch (e) {
      if ((e as HorizonProblem).response?.status === 404) return null;
      throw horizonFailure(e, `loading account ${address}`);
    }
  }

  async function submit(signer: TxSigner, build: (b: TransactionBuilder) => TransactionBuilder, what: string): Promise<string> {
    const account = await load(signer.publicKey);
    if (!account)
      throw new StellarError('NOT_FOUND', `account ${signer.publicKey} does not exist on ${config.name}; fund it first`, { address: signer.publicKey });
    const tx = build(new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: config.passphrase }))
      .setTimeout(120)
      .build();
    const signed = TransactionBuilder.fromXDR(await signer.signTransaction(tx.toXDR(), config.passphrase), config.passphrase);
    try {
      const res = await horizon.submitTransaction(signed);
      return res.hash;
    } catch (e) {
      throw horizonFailure(e, what);
    }
  }

  const hasUsdc = (acc: Horizon.AccountResponse) =>
    acc.balances.some((b) => 'asset_code' in b && b.asset_code === config.usdc.code && 'asset_issuer' in b && b.asset_issuer === config.usdc.issuer);

  return {
    async fund(address) {
      requireAccountId('address', address);
      if (!config.friendbotUrl) throw new StellarError('NO_FRIENDBOT', `${config.name} has no friendbot: fund ${address} from an existing account`);
      let res: Response;
      try {
        res = await fetch(`${config.friendbotUrl}?addr=${encodeURIComponent(address)}`);
      } catch (e) {
        throw new StellarError('RPC_ERROR', `friendbot unreachable: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (res.ok) return;
      const body = await res.text();
      if (/createAccountAlreadyExist|op_already_exists|already funded/i.test(body)) return;
      throw new StellarError('RPC_ERROR', `friendbot refused (${res.status}): ${body.slice(0, 300)}`);
    },
    async createAccount(funder, address, startingXlm) {
      requireAccountId('address', address);
      if (typeof startingXlm !== 'bigint' || startingXlm <= 0n) throw new StellarError('INVALID_INPUT', 'startingXlm must be a positive bigint of stroops');
      if (await load(address)) return {};
      try {
        const txHash = await submit(
          funder,
          (b) => b.addOperation(Operation.createAccount({ destination: address, startingBalance: unitsToDecimal(startingXlm) })),
          'creating the account',
        );
        return { txHash };
      } catch (e) {
        // Created meanwhile (another gateway): what was wanted exists.
        if (await load(address).catch(() => null)) return {};
        throw e;
      }
    },
    async ensureUsdcTrustline(signer) {
      const account = await load(requireAccountId('signer.publicKey', signer.publicKey));
      if (account && hasUsdc(account)) return {};
      const txHash = await submit(signer, (b) => b.addOperation(Operation.changeTrust({ asset: usdc })), 'setting the USDC trustline');
      return { txHash };
    },
    async balances(address) {
      const account = await load(requireAccountId('address', address));
      if (!account) return { exists: false, xlm: 0n, usdc: null };
      let xlm = 0n;
      let usdcBalance: bigint | null = null;
      for (const b of account.balances) {
        if (b.asset_type === 'native') xlm = decimalToUnits(b.balance);
        else if ('asset_code' in b && b.asset_code === config.usdc.code && b.asset_issuer === config.usdc.issuer) usdcBalance = decimalToUnits(b.balance);
      }
      return { exists: true, xlm, usdc: usdcBalance };
    },
    async payUsdc(signer, to, amount) {
      requireAccountId('to', to);
      if (typeof amount !== 'bigint' || amount <= 0n) throw new StellarError('INVALID_INPUT', 'amount must be a positive bigint of base units');
      const txHash = await submit(
        signer,
        (b) => b.addOperation(Operation.payment({ destination: to, asset: usdc, amount: unitsToDecimal(amount) })),
        'USDC payment',
      );
      return { txHash };
    },
    async payXlm(signer, to, stroops) {
      requireAccountId('to', to);
      if (typeof stroops !== 'bigint' || stroops <= 0n) throw new StellarError('INVALID_INPUT', 'stroops must be a positive bigint');
      const txHash = await submit(
        signer,
        (b) => b.addOperation(Operation.payment({ destination: to, asset: Asset.native(), amount: unitsToDecimal(stroops) })),
        'XLM payment',
      );
      return { txHash };
    },
  };
}
