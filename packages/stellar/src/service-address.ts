import { createHash } from 'node:crypto';
import { Account, MuxedAccount, StrKey } from '@stellar/stellar-sdk';

// The address an `exact` payment to a Farebox service pays: the platform
// treasury's muxed account (M..., CAP-67) whose id names the service. The
// payer signs the transfer's `to`, so what it signs names the service paid:
// a payment made for one service cannot be credited to another.

/** The muxed id of a service: the first 8 bytes (big-endian) of SHA-256(`farebox:service:<name>`), as a decimal string. */
export function serviceMuxedId(service: string): string {
  const digest = createHash('sha256').update(`farebox:service:${service}`, 'utf8').digest();
  return digest.readBigUInt64BE(0).toString();
}

/** The `payTo` of an `exact` offer for `service`: the treasury (`G...`) muxed with the service's id (`M...`). */
export function servicePayTo(treasury: string, service: string): string {
  if (!StrKey.isValidEd25519PublicKey(treasury)) throw new Error(`the treasury must be a G... public key, got "${treasury}"`);
  return new MuxedAccount(new Account(treasury, '0'), serviceMuxedId(service)).accountId();
}

/** A muxed `M...` address's account and id, or undefined for anything else. */
export function readMuxedAddress(address: string): { account: string; id: string } | undefined {
  if (!StrKey.isValidMed25519PublicKey(address)) return undefined;
  const muxed = MuxedAccount.fromAddress(address, '0');
  return { account: muxed.baseAccount().accountId(), id: muxed.id() };
}
