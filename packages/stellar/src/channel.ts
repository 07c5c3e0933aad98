// The one-way payment channel of stellar-experimental/one-way-channel, client side:
// the channel address a factory deploys for a salt and the exact commitment bytes
// the funder's commitment key signs. Pure functions: no RPC, no devnet.
import { Address, hash, StrKey, xdr } from '@stellar/stellar-sdk';

/** The domain separator of a commitment: `Symbol("chancmmt")`. */
export const CHANNEL_COMMITMENT_DOMAIN = 'chancmmt';

/** The channel contract's errors, `Error(Contract, #n)`. */
export const CHANNEL_ERRORS = {
  1: 'NegativeAmount',
  2: 'NotClosed',
  3: 'RefundWaitingPeriodNotElapsed',
  4: 'AlreadyClosed',
} as const;
export type ChannelErrorNumber = keyof typeof CHANNEL_ERRORS;

const I128_MIN = -(1n << 127n);
const I128_MAX = (1n << 127n) - 1n;

function i128(v: bigint): xdr.ScVal {
  const u = BigInt.asUintN(128, v);
  return xdr.ScVal.scvI128(
    new xdr.Int128Parts({
      hi: xdr.Int64.fromString(BigInt.asIntN(64, u >> 64n).toString()),
      lo: xdr.Uint64.fromString((u & ((1n << 64n) - 1n)).toString()),
    }),
  );
}

/**
 * The address Soroban gives a contract that `factory` deploys with `salt`
 * (`deployer().with_current_contract(salt)`): sha256 of the XDR
 * `HashIdPreimage::ContractId { networkId: sha256(passphrase), preimage: FromAddress { factory, salt } }`.
 * A funder computes its channel's address before opening it.
 */
export function channelAddress(factory: string, salt: Uint8Array, passphrase: string): string {
  if (salt.length !== 32) throw new RangeError('salt must be 32 bytes');
  const preimage = xdr.HashIdPreimage.envelopeTypeContractId(
    new xdr.HashIdPreimageContractId({
      networkId: hash(Buffer.from(passphrase, 'utf8')),
      contractIdPreimage: xdr.ContractIdPreimage.contractIdPreimageFromAddress(
        new xdr.ContractIdPreimageFromAddress({ address: new Address(factory).toScAddress(), salt: Buffer.from(salt) }),
      ),
    }),
  );
  return StrKey.encodeContract(hash(preimage.toXDR()));
}

/** The commitment as the contract builds it: `ScVal::Map` with its keys sorted (amount, channel, domain, network). */
export function commitmentScVal(channel: string, amount: bigint, passphrase: string): xdr.ScVal {
  if (amount < 0n) throw new RangeError('a commitment amount cannot be negative (NegativeAmount)');
  if (amount > I128_MAX || amount < I128_MIN) throw new RangeError('a commitment amount must fit an i128');
  const e = (k: string, val: xdr.ScVal) => new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol(k), val });
  return xdr.ScVal.scvMap([
    e('amount', i128(amount)),
    e('channel', new Address(channel).toScVal()),
    e('domain', xdr.ScVal.scvSymbol(CHANNEL_COMMITMENT_DOMAIN)),
    e('network', xdr.ScVal.scvBytes(hash(Buffer.from(passphrase, 'utf8')))),
  ]);
}

/**
 * The bytes the funder's commitment key signs (plain ed25519, no prefix or hash) for a
 * cumulative `amount` (base units) on `channel`: exactly what the contract's
 * `prepare_commitment(amount)` returns and what `settle` / `close` verify.
 *
 * @example
 * const bytes = commitmentBytes(channel, 1_500_000n, Networks.TESTNET);
 * const ok = Keypair.fromRawEd25519Seed(seed).verify(bytes, signature);
 */
export function commitmentBytes(channel: string, amount: bigint, passphrase: string): Buffer {
  return commitmentScVal(channel, amount, passphrase).toXDR();
}
