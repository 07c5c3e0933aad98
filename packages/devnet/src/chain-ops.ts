// Classic operations on the devnet chain: createAccount, payment (XLM and USDC),
// changeTrust, and invokeHostFunction handed to the contract host.
import { xdr } from '@stellar/stellar-sdk';
import { BASE_RESERVE, type ContractEventOut, type Parsed, type View } from './chain-types.js';
import { accountEntry, contractEvent, fmt, opResult } from './chain-xdr.js';
import { HostError, type DevnetContract } from './contracts.js';
import type { Chain } from './core.js';
import type { AccountState } from './state.js';
import { accountIdToG, MAX_INT64, muxedToG, scAddressToString, sha256, toBig } from './xdrutil.js';

/** The minimum XLM balance of an account with its sub-entries (and `extraSubEntries` more). */
export function minBalance(a: AccountState, extraSubEntries = 0): bigint {
  return (2n + BigInt(a.numSubEntries + extraSubEntries)) * BASE_RESERVE;
}

/** A human summary of one operation, for the explorer. */
export function describeOp(op: xdr.Operation, txSource: string): string {
  const src = op.sourceAccount() ? muxedToG(op.sourceAccount()!) : txSource;
  const body = op.body();
  switch (body.switch().name) {
    case 'createAccount': {
      const b = body.createAccountOp();
      return `create account ${accountIdToG(b.destination())} with ${fmt(toBig(b.startingBalance()))} XLM (from ${src})`;
    }
    case 'payment': {
      const b = body.paymentOp();
      const asset = b.asset().switch().name === 'assetTypeNative' ? 'XLM' : 'USDC';
      return `pay ${fmt(toBig(b.amount()))} ${asset} from ${src} to ${muxedToG(b.destination())}`;
    }
    case 'changeTrust':
      return `change trust by ${src} (limit ${fmt(toBig(body.changeTrustOp().limit()))})`;
    case 'invokeHostFunction': {
      const hf = body.invokeHostFunctionOp().hostFunction();
      if (hf.switch().name !== 'hostFunctionTypeInvokeContract') return 'invoke host function';
      const a = hf.invokeContract();
      return `invoke ${a.functionName().toString()} on ${scAddressToString(a.contractAddress())} by ${src}`;
    }
    default:
      return body.switch().name;
  }
}

/** Applies one operation to a view; a failed operation leaves its result code and no changes. */
export function applyOp(
  chain: Chain,
  view: View,
  op: xdr.Operation,
  src: string,
  _p: Parsed,
  ledger: number,
  closeTime: number,
  touched: Set<string>,
): {
  ok: boolean;
  result: xdr.OperationResult;
  changes: xdr.LedgerEntryChange[];
  events: ContractEventOut[];
  returnValue?: xdr.ScVal;
  deployed?: DevnetContract[];
} {
  const body = op.body();
  const none = { changes: [] as xdr.LedgerEntryChange[], events: [] as ContractEventOut[] };
  const srcAcc = view.accounts.getMut(src);
  if (!srcAcc) return { ok: false, result: xdr.OperationResult.opNoAccount(), ...none };
  switch (body.switch().name) {
    case 'createAccount': {
      const b = body.createAccountOp();
      const dest = accountIdToG(b.destination());
      const amount = toBig(b.startingBalance());
      const fail = (c: string) => ({ ok: false, result: opResult('createAccount', c), ...none });
      if (amount <= 0n || dest === src) return fail('createAccountMalformed');
      if (view.accounts.get(dest)) return fail('createAccountAlreadyExist');
      if (amount < 2n * BASE_RESERVE) return fail('createAccountLowReserve');
      if (srcAcc.balance - amount < minBalance(srcAcc)) return fail('createAccountUnderfunded');
      srcAcc.balance -= amount;
      const created: AccountState = { id: dest, balance: amount, seq: BigInt(ledger) << 32n, numSubEntries: 0, lastModified: ledger };
      view.accounts.set(dest, created);
      touched.add(dest);
      const entry = new xdr.LedgerEntry({
        lastModifiedLedgerSeq: ledger,
        data: xdr.LedgerEntryData.account(accountEntry(created)),
        ext: new xdr.LedgerEntryExt(0),
      });
      return { ok: true, result: opResult('createAccount', 'createAccountSuccess'), changes: [xdr.LedgerEntryChange.ledgerEntryCreated(entry)], events: [] };
    }
    case 'payment': {
      const b = body.paymentOp();
      const dest = muxedToG(b.destination());
      const amount = toBig(b.amount());
      const fail = (c: string) => ({ ok: false, result: opResult('payment', c), ...none });
      if (amount <= 0n) return fail('paymentMalformed');
      const native = b.asset().switch().name === 'assetTypeNative';
      if (!native && !isUsdc(chain, b.asset())) return fail('paymentNoIssuer');
      const destAcc = view.accounts.getMut(dest);
      if (!destAcc) return fail('paymentNoDestination');
      touched.add(dest);
      if (native) {
        if (srcAcc.balance - amount < minBalance(srcAcc)) return fail('paymentUnderfunded');
        if (destAcc.balance + amount > MAX_INT64) return fail('paymentLineFull');
        srcAcc.balance -= amount;
        // Same object when paying oneself: read back through the overlay.
        view.accounts.getMut(dest)!.balance += amount;
      } else {
        if (src !== chain.usdcIssuer) {
          if (!srcAcc.usdc) return fail('paymentSrcNoTrust');
          if (srcAcc.usdc.balance < amount) return fail('paymentUnderfunded');
        }
        if (dest !== chain.usdcIssuer) {
          if (!destAcc.usdc) return fail('paymentNoTrust');
          if (destAcc.usdc.balance + amount > destAcc.usdc.limit) return fail('paymentLineFull');
        }
        if (src !== chain.usdcIssuer) {
          srcAcc.usdc!.balance -= amount;
          srcAcc.usdc!.lastModified = ledger;
        }
        if (dest !== chain.usdcIssuer) {
          destAcc.usdc!.balance += amount;
          destAcc.usdc!.lastModified = ledger;
        }
      }
      return { ok: true, result: opResult('payment', 'paymentSuccess'), ...none };
    }
    case 'changeTrust': {
      const b = body.changeTrustOp();
      const limit = toBig(b.limit());
      const fail = (c: string) => ({ ok: false, result: opResult('changeTrust', c), ...none });
      const line = b.line();
      if (line.switch().name !== 'assetTypeCreditAlphanum4' || !isUsdc(chain, xdr.Asset.assetTypeCreditAlphanum4(line.alphaNum4())))
        return fail('changeTrustNoIssuer');
      if (src === chain.usdcIssuer || limit < 0n) return fail('changeTrustMalformed');
      if (!srcAcc.usdc) {
        if (limit === 0n) return fail('changeTrustInvalidLimit');
        if (srcAcc.balance < minBalance(srcAcc, 1)) return fail('changeTrustLowReserve');
        srcAcc.usdc = { balance: 0n, limit, flags: 1, lastModified: ledger };
        srcAcc.numSubEntries += 1;
      } else if (limit === 0n) {
        if (srcAcc.usdc.balance !== 0n) return fail('changeTrustInvalidLimit');
        delete srcAcc.usdc;
        srcAcc.numSubEntries -= 1;
      } else {
        if (limit < srcAcc.usdc.balance) return fail('changeTrustInvalidLimit');
        srcAcc.usdc.limit = limit;
        srcAcc.usdc.lastModified = ledger;
      }
      return { ok: true, result: opResult('changeTrust', 'changeTrustSuccess'), ...none };
    }
    case 'invokeHostFunction': {
      const b = body.invokeHostFunctionOp();
      const hf = b.hostFunction();
      if (hf.switch().name !== 'hostFunctionTypeInvokeContract')
        return { ok: false, result: opResult('invokeHostFunction', 'invokeHostFunctionMalformed'), ...none };
      try {
        const out = chain.invoke(view, hf.invokeContract(), { source: src, ledger, timestamp: closeTime, authMode: 'enforce', authEntries: b.auth() });
        const hash = sha256(new xdr.InvokeHostFunctionSuccessPreImage({ returnValue: out.retval, events: out.events.map(contractEvent) }).toXDR());
        return {
          ok: true,
          result: opResult('invokeHostFunction', 'invokeHostFunctionSuccess', hash),
          changes: [],
          events: out.events,
          returnValue: out.retval,
          deployed: out.deployed,
        };
      } catch (e) {
        if (!(e instanceof HostError)) throw e;
        return { ok: false, result: opResult('invokeHostFunction', 'invokeHostFunctionTrapped'), ...none };
      }
    }
    default:
      return { ok: false, result: xdr.OperationResult.opNotSupported(), ...none };
  }
}

function isUsdc(chain: Chain, asset: xdr.Asset): boolean {
  if (asset.switch().name !== 'assetTypeCreditAlphanum4') return false;
  const a4 = asset.alphaNum4();
  return Buffer.from(a4.assetCode()).toString('latin1').replace(/\0+$/, '') === 'USDC' && accountIdToG(a4.issuer()) === chain.usdcIssuer;
}
