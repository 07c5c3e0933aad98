// Ledger reads of the devnet chain: getLedgerEntries and the latest ledger's header.
import { xdr } from '@stellar/stellar-sdk';
import { BASE_FEE, BASE_RESERVE, PROTOCOL_VERSION, type LedgerInfo } from './chain-types.js';
import { accountEntry, dataMapKey, trustLineEntry, ZERO32 } from './chain-xdr.js';
import type { Chain } from './core.js';
import { accountIdToG, int64, scAddressToString, sha256, usdcTrustLineAsset } from './xdrutil.js';

/** getLedgerEntries: an account, its USDC trustline, a contract instance or a contract data entry. */
export function ledgerEntry(chain: Chain, key: xdr.LedgerKey): { entry: xdr.LedgerEntryData; lastModified: number } | undefined {
  switch (key.switch().name) {
    case 'account': {
      const a = chain.accounts.get(accountIdToG(key.account().accountId()));
      return a ? { entry: xdr.LedgerEntryData.account(accountEntry(a)), lastModified: a.lastModified } : undefined;
    }
    case 'trustline': {
      const k = key.trustLine();
      const a = chain.accounts.get(accountIdToG(k.accountId()));
      if (!a?.usdc || k.asset().toXDR('base64') !== usdcTrustLineAsset(chain.usdcIssuer).toXDR('base64')) return undefined;
      return { entry: xdr.LedgerEntryData.trustline(trustLineEntry(a, chain.usdcIssuer)), lastModified: a.usdc.lastModified };
    }
    case 'contractData': {
      const k = key.contractData();
      const contractId = scAddressToString(k.contract());
      if (k.key().switch().name === 'scvLedgerKeyContractInstance') {
        const c = chain.contracts.get(contractId);
        if (!c) return undefined;
        const executable =
          c.kind === 'stellar_asset'
            ? xdr.ContractExecutable.contractExecutableStellarAsset()
            : xdr.ContractExecutable.contractExecutableWasm(sha256(`farebox-devnet:wasm:${c.label}`));
        // A contract on instance storage carries its data in the instance's storage map, as Soroban keeps it.
        const stored = c.instanceStorage ? chain.contractData(contractId) : [];
        const storage = c.instanceStorage
          ? stored
              .map((d) => new xdr.ScMapEntry({ key: xdr.ScVal.fromXDR(d.key, 'base64'), val: xdr.ScVal.fromXDR(d.val, 'base64') }))
              .sort((a, b) => compareScVal(a.key(), b.key()))
          : null;
        const instance = xdr.ScVal.scvContractInstance(new xdr.ScContractInstance({ executable, storage }));
        return {
          entry: xdr.LedgerEntryData.contractData(
            new xdr.ContractDataEntry({ ext: new xdr.ExtensionPoint(0), contract: k.contract(), key: k.key(), durability: k.durability(), val: instance }),
          ),
          lastModified: Math.max(chain.genesis.seq, ...stored.map((d) => d.lastModified)),
        };
      }
      if (chain.contracts.get(contractId)?.instanceStorage) return undefined;
      const e = chain.data.get(dataMapKey(contractId, k.key().toXDR('base64')));
      if (!e) return undefined;
      return {
        entry: xdr.LedgerEntryData.contractData(
          new xdr.ContractDataEntry({
            ext: new xdr.ExtensionPoint(0),
            contract: k.contract(),
            key: k.key(),
            durability: k.durability(),
            val: xdr.ScVal.fromXDR(e.val, 'base64'),
          }),
        ),
        lastModified: e.lastModified,
      };
    }
    default:
      return undefined;
  }
}

/** Soroban's order of map keys for the common key shapes: by type, symbols and strings by bytes, vectors element-wise. */
function compareScVal(a: xdr.ScVal, b: xdr.ScVal): number {
  const ta = a.switch().value;
  const tb = b.switch().value;
  if (ta !== tb) return ta - tb;
  switch (a.switch().name) {
    case 'scvSymbol':
      return Buffer.compare(Buffer.from(a.sym()), Buffer.from(b.sym()));
    case 'scvString':
      return Buffer.compare(Buffer.from(a.str()), Buffer.from(b.str()));
    case 'scvVec': {
      const va = a.vec() ?? [];
      const vb = b.vec() ?? [];
      for (let i = 0; i < Math.min(va.length, vb.length); i++) {
        const c = compareScVal(va[i]!, vb[i]!);
        if (c !== 0) return c;
      }
      return va.length - vb.length;
    }
    default:
      return Buffer.compare(a.toXDR(), b.toXDR());
  }
}

/** Base64 LedgerHeader and LedgerCloseMeta of a closed ledger (getLatestLedger). */
export function ledgerHeaderXdr(l: LedgerInfo): { header: string; meta: string } {
  const header = new xdr.LedgerHeader({
    ledgerVersion: PROTOCOL_VERSION,
    previousLedgerHash: Buffer.from(l.prevHash, 'hex'),
    scpValue: new xdr.StellarValue({
      txSetHash: ZERO32,
      closeTime: xdr.Uint64.fromString(String(l.closeTime)),
      upgrades: [],
      ext: xdr.StellarValueExt.stellarValueBasic(),
    }),
    txSetResultHash: ZERO32,
    bucketListHash: ZERO32,
    ledgerSeq: l.seq,
    totalCoins: int64(1_000_000_000_000_000_000n),
    feePool: int64(0n),
    inflationSeq: 0,
    idPool: xdr.Uint64.fromString('0'),
    baseFee: Number(BASE_FEE),
    baseReserve: Number(BASE_RESERVE),
    maxTxSetSize: 1000,
    skipList: [ZERO32, ZERO32, ZERO32, ZERO32],
    ext: new xdr.LedgerHeaderExt(0),
  });
  const meta = new xdr.LedgerCloseMeta(
    0,
    new xdr.LedgerCloseMetaV0({
      ledgerHeader: new xdr.LedgerHeaderHistoryEntry({ hash: Buffer.from(l.hash, 'hex'), header, ext: new xdr.LedgerHeaderHistoryEntryExt(0) }),
      txSet: new xdr.TransactionSet({ previousLedgerHash: Buffer.from(l.prevHash, 'hex'), txes: [] }),
      txProcessing: [],
      upgradesProcessing: [],
      scpInfo: [],
    }),
  );
  return { header: header.toXDR('base64'), meta: meta.toXDR('base64') };
}
