import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { Address, Asset, Keypair, StrKey, xdr } from '@stellar/stellar-sdk';

export const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest();

export const int64 = (v: bigint | number): xdr.Int64 => xdr.Int64.fromString(BigInt(v).toString());
export const toBig = (v: { toString(): string }): bigint => BigInt(v.toString());

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const keyCache = new Map<string, KeyObject>();

/** ed25519 verification through node:crypto (much faster than a JS implementation). */
export function verifyEd25519(publicKeyG: string, message: Uint8Array, signature: Uint8Array): boolean {
  let key = keyCache.get(publicKeyG);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, StrKey.decodeEd25519PublicKey(publicKeyG)]), format: 'der', type: 'spki' });
    if (keyCache.size > 10_000) keyCache.clear();
    keyCache.set(publicKeyG, key);
  }
  if (signature.length !== 64) return false;
  try {
    return verify(null, message, key, signature);
  } catch {
    return false;
  }
}

export const hintOf = (publicKeyG: string): Buffer => StrKey.decodeEd25519PublicKey(publicKeyG).subarray(28, 32);

export function muxedToG(m: xdr.MuxedAccount): string {
  return m.switch().name === 'keyTypeMuxedEd25519' ? StrKey.encodeEd25519PublicKey(m.med25519().ed25519()) : StrKey.encodeEd25519PublicKey(m.ed25519());
}

export const accountIdToG = (a: xdr.AccountId): string => StrKey.encodeEd25519PublicKey(a.ed25519());
export const gToAccountId = (g: string): xdr.AccountId => Keypair.fromPublicKey(g).xdrAccountId();

export const scAddressToString = (a: xdr.ScAddress): string => Address.fromScAddress(a).toString();
export const addressVal = (s: string): xdr.ScVal => new Address(s).toScVal();
export const symbolVal = (s: string): xdr.ScVal => xdr.ScVal.scvSymbol(s);
export const stringVal = (s: string): xdr.ScVal => xdr.ScVal.scvString(s);

export function i128Val(v: bigint): xdr.ScVal {
  const mask = (1n << 64n) - 1n;
  const u = BigInt.asUintN(128, v);
  return xdr.ScVal.scvI128(
    new xdr.Int128Parts({ hi: xdr.Int64.fromString(BigInt.asIntN(64, u >> 64n).toString()), lo: xdr.Uint64.fromString((u & mask).toString()) }),
  );
}
export const u64Val = (v: bigint | number): xdr.ScVal => xdr.ScVal.scvU64(xdr.Uint64.fromString(BigInt(v).toString()));

export function usdcAsset(issuer: string): Asset {
  return new Asset('USDC', issuer);
}

export function usdcTrustLineAsset(issuer: string): xdr.TrustLineAsset {
  return new Asset('USDC', issuer).toTrustLineXDRObject();
}

export function formatStroops(units: bigint): string {
  const neg = units < 0n;
  const abs = neg ? -units : units;
  return `${neg ? '-' : ''}${abs / 10_000_000n}.${(abs % 10_000_000n).toString().padStart(7, '0')}`;
}

export const MAX_INT64 = (1n << 63n) - 1n;
