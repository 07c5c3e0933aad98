import { Account, Address, BASE_FEE, TransactionBuilder, rpc, type xdr, type Transaction } from '@stellar/stellar-sdk';
import { StellarError } from './errors.js';
import type { NetworkConfig } from './network.js';
import { resultCodesFromXdr } from './results.js';
import type { TxSigner } from './signer.js';

/** The all-zero account: simulation-only source for read calls (never signs). */
export const NULL_ACCOUNT = 'GAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAWHF';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function rpcServer(config: NetworkConfig): rpc.Server {
  return new rpc.Server(config.rpcUrl, { allowHttp: config.allowHttp });
}

/** Wraps transport failures (HTTP, JSON-RPC errors) as RPC_ERROR; passes StellarErrors through. */
export async function rpcCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof StellarError) throw e;
    const message = e instanceof Error ? e.message : typeof e === 'object' && e && 'message' in e ? String((e as { message: unknown }).message) : String(e);
    throw new StellarError('RPC_ERROR', `${what} failed: ${message}`, { cause: e });
  }
}

export type ContractErrorMapper = (contractCode: number, raw: string) => StellarError | undefined;

function simulationError(raw: string, mapContract?: ContractErrorMapper): StellarError {
  const m = /Error\(Contract, #(\d+)\)/.exec(raw);
  if (m && mapContract) {
    const mapped = mapContract(Number(m[1]), raw);
    if (mapped) return mapped;
  }
  if (/Error\(Auth,/.test(raw)) return new StellarError('UNAUTHORIZED', `missing authorisation: ${firstLine(raw)}`, { simulation: raw });
  return new StellarError('TX_FAILED', `simulation failed: ${firstLine(raw)}`, { simulation: raw });
}

const firstLine = (s: string) => s.split('\n')[0] ?? s;

/** Simulates a read-only contract call and returns its return value. */
export async function simulateRead(server: rpc.Server, config: NetworkConfig, op: xdr.Operation, mapContract?: ContractErrorMapper): Promise<xdr.ScVal> {
  const tx = new TransactionBuilder(new Account(NULL_ACCOUNT, '0'), { fee: BASE_FEE, networkPassphrase: config.passphrase })
    .addOperation(op)
    .setTimeout(0)
    .build();
  const sim = await rpcCall('simulateTransaction', () => server.simulateTransaction(tx));
  if (rpc.Api.isSimulationError(sim)) throw simulationError(sim.error, mapContract);
  const retval = 'result' in sim ? sim.result?.retval : undefined;
  if (!retval) throw new StellarError('RPC_ERROR', 'simulation returned no result');
  return retval;
}

async function loadAccount(server: rpc.Server, config: NetworkConfig, address: string): Promise<Account> {
  try {
    return await server.getAccount(address);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (/not found/i.test(message)) {
      throw new StellarError('NOT_FOUND', `account ${address} does not exist on ${config.name}; fund it first`, { address });
    }
    throw new StellarError('RPC_ERROR', `getAccount failed: ${message}`, { cause: e });
  }
}

/** Throws a StellarError for a failed or refused transaction result. */
export function failedTransaction(result: xdr.TransactionResult | undefined, hash: string, stage: string): StellarError {
  const resultCodes = result ? resultCodesFromXdr(result) : { transaction: 'unknown', operations: [] };
  const ops = resultCodes.operations.filter((c) => c !== 'op_success');
  return new StellarError('TX_FAILED', `transaction ${stage}: ${resultCodes.transaction}${ops.length ? ` (${ops.join(', ')})` : ''}`, {
    resultCodes,
    txHash: hash,
  });
}

/** Polls getTransaction until the transaction leaves NOT_FOUND (first poll at once). */
export async function waitForTransaction(server: rpc.Server, hash: string, timeoutMs = 60_000): Promise<rpc.Api.GetSuccessfulTransactionResponse> {
  const deadline = Date.now() + timeoutMs;
  let delay = 100;
  for (;;) {
    const got = await rpcCall('getTransaction', () => server.getTransaction(hash));
    if (got.status === rpc.Api.GetTransactionStatus.SUCCESS) return got;
    if (got.status === rpc.Api.GetTransactionStatus.FAILED) throw failedTransaction(got.resultXdr, hash, 'failed');
    if (Date.now() > deadline) throw new StellarError('TIMEOUT', `transaction ${hash} was not included within ${timeoutMs} ms`, { txHash: hash });
    await sleep(delay);
    delay = Math.min(delay * 1.5, 2000);
  }
}

/**
 * Builds, simulates, assembles, signs, sends and confirms a single contract
 * call whose invoker is the signer (source-account authorisation).
 */
export async function invokeAsSource(
  server: rpc.Server,
  config: NetworkConfig,
  signer: TxSigner,
  op: xdr.Operation,
  mapContract?: ContractErrorMapper,
): Promise<{ txHash: string; returnValue: xdr.ScVal | undefined }> {
  const account = await loadAccount(server, config, signer.publicKey);
  const tx = new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: config.passphrase }).addOperation(op).setTimeout(120).build();
  const sim = await rpcCall('simulateTransaction', () => server.simulateTransaction(tx));
  if (rpc.Api.isSimulationError(sim)) throw simulationError(sim.error, mapContract);
  if (!rpc.Api.isSimulationSuccess(sim)) throw new StellarError('RPC_ERROR', 'simulation needs a footprint restore; not supported');
  // An authorisation entry for any address but the signer means someone else
  // owns what this call touches: the network would refuse it, so stop here.
  for (const entry of sim.result?.auth ?? []) {
    const creds = entry.credentials();
    if (creds.switch().name === 'sorobanCredentialsAddress') {
      const who = Address.fromScAddress(creds.address().address()).toString();
      if (who !== signer.publicKey) {
        throw new StellarError('UNAUTHORIZED', `missing authorisation: this call must be authorised by ${who}, not ${signer.publicKey}`, {
          required: who,
          signer: signer.publicKey,
        });
      }
    }
  }
  const prepared = rpc.assembleTransaction(tx, sim).build();
  return sendSigned(server, config, signer, prepared);
}

export async function sendSigned(
  server: rpc.Server,
  config: NetworkConfig,
  signer: TxSigner,
  tx: Transaction,
): Promise<{ txHash: string; returnValue: xdr.ScVal | undefined }> {
  const signedXdr = await signer.signTransaction(tx.toXDR(), config.passphrase);
  const signed = TransactionBuilder.fromXDR(signedXdr, config.passphrase);
  const sent = await rpcCall('sendTransaction', () => server.sendTransaction(signed));
  if (sent.status === 'ERROR') throw failedTransaction(sent.errorResult, sent.hash, 'refused');
  if (sent.status === 'TRY_AGAIN_LATER') throw new StellarError('RPC_ERROR', 'the network asked to try again later', { txHash: sent.hash });
  const done = await waitForTransaction(server, sent.hash);
  return { txHash: sent.hash, returnValue: done.returnValue };
}
