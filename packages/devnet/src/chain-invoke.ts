// The contract host of the devnet chain: runs hosted contracts against a view,
// enforces or records Soroban authorisation, and simulates transactions.
import { Address, StrKey, xdr } from '@stellar/stellar-sdk';
import type { ContractEventOut, InvocationOutcome, Parsed, View } from './chain-types.js';
import { dataMapKey } from './chain-xdr.js';
import { HostError, type DevnetContract, type HostContext } from './contracts.js';
import type { Chain } from './core.js';
import { cloneAccount, Overlay } from './state.js';
import { gToAccountId, int64, muxedToG, scAddressToString, sha256, toBig, usdcTrustLineAsset, verifyEd25519 } from './xdrutil.js';

/** Runs a contract call against a view (simulation or application). Throws HostError. */
export function invoke(
  chain: Chain,
  view: View,
  call: xdr.InvokeContractArgs,
  opts: { source: string; ledger: number; timestamp: number; authMode: 'record' | 'enforce'; authEntries: xdr.SorobanAuthorizationEntry[] },
): InvocationOutcome {
  const rootId = scAddressToString(call.contractAddress());
  const readOnly = new Map<string, xdr.LedgerKey>();
  const readWrite = new Map<string, xdr.LedgerKey>();
  const events: ContractEventOut[] = [];
  const recorded: string[] = [];
  const deployed = new Map<string, DevnetContract>();
  const rootB64 = call.toXDR('base64');
  const touch = (k: xdr.LedgerKey, write: boolean) => {
    const b = k.toXDR('base64');
    if (write) {
      readOnly.delete(b);
      readWrite.set(b, k);
    } else if (!readWrite.has(b)) readOnly.set(b, k);
  };
  const lookup = (id: string) => deployed.get(id) ?? chain.contracts.get(id);
  // An address whose entry authorised the root call covers the calls made beneath it (the host matches them against
  // the entry's sub-invocations; the devnet, by root call only): a nested require_auth of it passes, its nonce used once.
  const authorized = new Set<string>();
  let depth = 0;
  const run = (contractId: string, fn: string, args: xdr.ScVal[], caller: string | undefined): xdr.ScVal => {
    const contractAddr = new Address(contractId).toScAddress();
    const instanceKey = xdr.LedgerKey.contractData(
      new xdr.LedgerKeyContractData({
        contract: contractAddr,
        key: xdr.ScVal.scvLedgerKeyContractInstance(),
        durability: xdr.ContractDataDurability.persistent(),
      }),
    );
    touch(instanceKey, false);
    const contract = lookup(contractId);
    if (!contract) throw new HostError('Storage', 'MissingValue');
    if (depth >= 8) throw new HostError('WasmVm', 'ExceededLimit');
    const dataKey = (key: xdr.ScVal) =>
      xdr.LedgerKey.contractData(new xdr.LedgerKeyContractData({ contract: contractAddr, key, durability: xdr.ContractDataDurability.persistent() }));
    const ctx: HostContext = {
      contractId,
      ledger: opts.ledger,
      timestamp: opts.timestamp,
      getData: (key) => {
        const kb = key.toXDR('base64');
        touch(dataKey(key), false);
        const e = view.data.get(dataMapKey(contractId, kb));
        return e ? xdr.ScVal.fromXDR(e.val, 'base64') : undefined;
      },
      putData: (key, val) => {
        const kb = key.toXDR('base64');
        touch(dataKey(key), true);
        view.data.set(dataMapKey(contractId, kb), { contractId, key: kb, val: val.toXDR('base64'), lastModified: opts.ledger });
      },
      delData: (key) => {
        touch(dataKey(key), true);
        view.data.delete(dataMapKey(contractId, key.toXDR('base64')));
      },
      emit: (topics, data) => events.push({ contractId, topics, data }),
      account: (id, write) => {
        touch(xdr.LedgerKey.trustline(new xdr.LedgerKeyTrustLine({ accountId: gToAccountId(id), asset: usdcTrustLineAsset(chain.usdcIssuer) })), write);
        const a = write ? view.accounts.getMut(id) : view.accounts.get(id);
        if (a && write && a.usdc) a.usdc.lastModified = opts.ledger;
        return a;
      },
      requireAuth: (address) => {
        // A contract authorises the calls it makes itself (Soroban's invoker auth).
        if (caller !== undefined && address === caller) return;
        if (authorized.has(address)) return;
        if (opts.authMode === 'record') {
          if (!recorded.includes(address)) recorded.push(address);
          return;
        }
        // As the host: a matching entry that has expired or whose nonce was used fails with its own error.
        let failure: HostError = new HostError('Auth', 'InvalidAction');
        for (const entry of opts.authEntries) {
          const f = entry.rootInvocation().function();
          if (f.switch().name !== 'sorobanAuthorizedFunctionTypeContractFn' || f.contractFn().toXDR('base64') !== rootB64) continue;
          const creds = entry.credentials();
          if (creds.switch().name === 'sorobanCredentialsSourceAccount') {
            if (address === opts.source) return;
            continue;
          }
          const ac = creds.address();
          if (scAddressToString(ac.address()) !== address) continue;
          const check = checkAddressSignature(chain, entry, address, opts.ledger, view);
          if (check === 'ok') {
            authorized.add(address);
            return;
          }
          if (check === 'expired') failure = new HostError('Auth', 'InvalidInput');
          if (check === 'nonce') failure = new HostError('Auth', 'ExistingValue');
        }
        throw failure;
      },
      call: (target, callFn, callArgs) => {
        depth += 1;
        try {
          return run(target, callFn, callArgs, contractId);
        } finally {
          depth -= 1;
        }
      },
      deploy: (created) => {
        if (lookup(created.id)) throw new HostError('Storage', 'ExistingValue');
        deployed.set(created.id, created);
      },
    };
    return contract.invoke(ctx, fn, args);
  };
  const retval = run(rootId, call.functionName().toString(), call.args(), undefined);
  return { retval, events, recordedAuth: recorded, readOnly, readWrite, deployed: [...deployed.values()] };
}

/**
 * Whether an address credential is signed by that account's key ('ok'), expired (its
 * signatureExpirationLedger is before this ledger), reuses a nonce, or is badly signed;
 * 'ok' marks its nonce used in the view.
 */
function checkAddressSignature(
  chain: Chain,
  entry: xdr.SorobanAuthorizationEntry,
  address: string,
  ledger: number,
  view: View,
): 'ok' | 'expired' | 'nonce' | 'signature' {
  if (!StrKey.isValidEd25519PublicKey(address) || !view.accounts.get(address)) return 'signature';
  const ac = entry.credentials().address();
  const nonceKey = `${address}:${toBig(ac.nonce())}`;
  if (ac.signatureExpirationLedger() < ledger) return 'expired';
  if (chain.nonces.has(nonceKey) || view.nonces.has(nonceKey)) return 'nonce';
  const preimage = xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
    new xdr.HashIdPreimageSorobanAuthorization({
      networkId: chain.networkId,
      nonce: ac.nonce(),
      signatureExpirationLedger: ac.signatureExpirationLedger(),
      invocation: entry.rootInvocation(),
    }),
  );
  const payload = sha256(preimage.toXDR());
  const sig = ac.signature();
  if (sig.switch().name !== 'scvVec') return 'signature';
  const raw = StrKey.decodeEd25519PublicKey(address);
  for (const item of sig.vec() ?? []) {
    if (item.switch().name !== 'scvMap') continue;
    const m = new Map((item.map() ?? []).map((e) => [String(e.key().sym()), e.val()]));
    const pk = m.get('public_key');
    const s = m.get('signature');
    if (!pk || !s || pk.switch().name !== 'scvBytes' || s.switch().name !== 'scvBytes') continue;
    if (Buffer.compare(Buffer.from(pk.bytes()), raw) !== 0) continue;
    if (verifyEd25519(address, payload, s.bytes())) {
      view.nonces.add(nonceKey);
      return 'ok';
    }
  }
  return 'signature';
}

/** The instructions a simulated call declares (a token transfer uses a few hundred thousand). */
const INSTRUCTIONS = 1_000_000;

/**
 * The devnet's resource fee schedule, in stroops: a model of testnet's (not metered):
 * 2,500 for the declared instructions, 1,000 per entry read, 4,000 per entry written
 * and 1,000 per contract event. A USDC transfer between two accounts (the contract
 * instance read; both trustlines and the payer's nonce written; one event) costs
 * 2,500 + 1,000 + 12,000 + 1,000 = 16,500 stroops.
 */
export function resourceFeeOf(reads: number, writes: number, events: number): bigint {
  return 2_500n + 1_000n * BigInt(reads) + 4_000n * BigInt(writes) + 1_000n * BigInt(events);
}

/** simulateTransaction: runs the single contract call without committing anything. */
export function simulate(
  chain: Chain,
  now: () => number,
  envB64: string,
):
  | {
      ok: true;
      retval: xdr.ScVal;
      auth: xdr.SorobanAuthorizationEntry[];
      transactionData: xdr.SorobanTransactionData;
      resourceFee: bigint;
      events: ContractEventOut[];
    }
  | { ok: false; error: string } {
  let p: Parsed;
  try {
    p = chain.parse(envB64, false);
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  const ops = p.tx.operations();
  const op = ops[0];
  if (ops.length !== 1 || !op || op.body().switch().name !== 'invokeHostFunction')
    return { ok: false, error: 'simulation needs exactly one invokeHostFunction operation' };
  const hf = op.body().invokeHostFunctionOp().hostFunction();
  if (hf.switch().name !== 'hostFunctionTypeInvokeContract') return { ok: false, error: 'only contract invocations can be simulated on the devnet' };
  const source = op.sourceAccount() ? muxedToG(op.sourceAccount()!) : p.source;
  const view: View = { accounts: new Overlay(chain.accounts, cloneAccount), data: new Overlay(chain.data, (d) => ({ ...d })), nonces: new Set() };
  const call = hf.invokeContract();
  // As Soroban RPC: without auth entries the host records the authorisations the call needs
  // (the source may be any account, even the SDK's null account); with entries it enforces them
  // (signatures, expiry, nonces) and the entries are kept as given.
  const given = op.body().invokeHostFunctionOp().auth();
  const authMode = given.length > 0 ? 'enforce' : 'record';
  let out: InvocationOutcome;
  try {
    out = chain.invoke(view, call, {
      source,
      ledger: chain.latest.seq + 1,
      timestamp: Math.max(now(), chain.latest.closeTime),
      authMode,
      authEntries: given,
    });
  } catch (e) {
    if (e instanceof HostError)
      return {
        ok: false,
        error: `${e.message}\n\nEvent log (newest first):\n   0: [Diagnostic Event] contract:${scAddressToString(call.contractAddress())}, topics:[error, ${e.message.replace('HostError: ', '')}], data:"escalating error to panic"`,
      };
    throw e;
  }
  const invocation = new xdr.SorobanAuthorizedInvocation({
    function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(call),
    subInvocations: [],
  });
  const auth =
    authMode === 'enforce'
      ? given
      : out.recordedAuth.map((addr) => {
          if (addr === source)
            return new xdr.SorobanAuthorizationEntry({ credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(), rootInvocation: invocation });
          const nonce = xdr.Int64.fromString(BigInt.asIntN(64, sha256(`${addr}:${Date.now()}:${Math.random()}`).readBigUInt64BE(0)).toString());
          return new xdr.SorobanAuthorizationEntry({
            credentials: xdr.SorobanCredentials.sorobanCredentialsAddress(
              new xdr.SorobanAddressCredentials({
                address: new Address(addr).toScAddress(),
                nonce,
                signatureExpirationLedger: 0,
                signature: xdr.ScVal.scvVoid(),
              }),
            ),
            rootInvocation: invocation,
          });
        });
  // Each address credential consumes its nonce: a temporary entry under the signer's address (read-write).
  for (const entry of auth) {
    if (entry.credentials().switch().name !== 'sorobanCredentialsAddress') continue;
    const ac = entry.credentials().address();
    const key = xdr.LedgerKey.contractData(
      new xdr.LedgerKeyContractData({
        contract: ac.address(),
        key: xdr.ScVal.scvLedgerKeyNonce(new xdr.ScNonceKey({ nonce: ac.nonce() })),
        durability: xdr.ContractDataDurability.temporary(),
      }),
    );
    out.readWrite.set(key.toXDR('base64'), key);
  }
  const reads = out.readOnly.size;
  const writes = out.readWrite.size;
  const resourceFee = resourceFeeOf(reads, writes, out.events.length);
  const transactionData = new xdr.SorobanTransactionData({
    ext: new xdr.SorobanTransactionDataExt(0),
    resources: new xdr.SorobanResources({
      footprint: new xdr.LedgerFootprint({ readOnly: [...out.readOnly.values()], readWrite: [...out.readWrite.values()] }),
      instructions: INSTRUCTIONS,
      diskReadBytes: 300 * (reads + writes),
      writeBytes: 300 * writes,
    }),
    resourceFee: int64(resourceFee),
  });
  return { ok: true, retval: out.retval, auth, transactionData, resourceFee, events: out.events };
}
