import {
  base64Decode,
  base64UrlEncode,
  canonicalJson,
  createPaymentChallenge,
  encodeStrKey,
  isOwnChallenge,
  MppError,
  parseStellarVoucher,
  verifyEd25519,
  type PaymentChallenge,
  type PaymentCredential,
  type PaymentReceipt,
} from '@farebox/protocol';
import type { Ledger } from '@farebox/ledger';
import { commitmentBytes, StellarError, type ChannelState, type NetworkConfig } from '@farebox/stellar';
import { systemClock } from '../clock.js';

// MPP channel sessions (the `stellar` method's `channel` intent): an agent's
// one-way payment channel whose recipient is the treasury pays any catalog
// service, one voucher per call. A voucher is the channel's new cumulative
// amount signed by its commitment key; it is checked here off chain (the
// commitment bytes the contract's prepare_commitment returns, built locally)
// and stored by the ledger before the service is called (ledger.channels:
// one call in flight per channel, the voucher exactly the channel's paid
// amount plus the price, never counted twice). The call's answer posts it
// (the service's earning) or voids it (the next voucher repeats the amount).

/** What the gateway accepts a channel on (docs/protocol.md, "MPP channel sessions"). */
export interface ChannelSessionsOptions {
  ledger: Ledger;
  network: NetworkConfig;
  /** The recipient every accepted channel pays: the treasury. */
  treasury: string;
  /** The challenges' HMAC secret (at least 32 bytes; the same on every gateway of a deployment). */
  secret: string;
  /** The challenges' realm (the gateway's host). */
  realm: string;
  /** Reads a channel from the chain. */
  readChannel: (channel: string) => Promise<ChannelState>;
  /** The Wasm hashes (hex) a channel contract may run (the reference one-way channel's; the devnet's on the local network). */
  channelWasmHashes: readonly string[];
  /** The fewest ledgers between a funder's close_start and its refund the gateway accepts (time for the watcher to settle first). */
  minRefundWaitingPeriod: number;
  /** How long a voucher holds its channel while its call runs (a crashed gateway's voucher is voided after it). */
  leaseMs: number;
  /** How long a challenge may be answered. */
  challengeTtlMs?: number;
  now?: () => number;
}

/** A voucher stored for a call: post it when the service answered, void it when not. */
export interface AcceptedVoucher {
  channel: string;
  /** The channel's cumulative amount with this call. */
  amount: bigint;
  price: bigint;
  callId: string;
  /** The challenge's reference (the receipt's). */
  reference: string;
  challengeId: string;
}

const SERVICE_BINDING = 'service';

function opaqueFor(service: string): string {
  return base64UrlEncode(new TextEncoder().encode(canonicalJson({ [SERVICE_BINDING]: service })));
}

function serviceOf(opaque: string | undefined): string | undefined {
  const bytes = opaque ? base64Decode(opaque) : null;
  try {
    const v = bytes ? (JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>) : undefined;
    return typeof v?.[SERVICE_BINDING] === 'string' ? (v[SERVICE_BINDING] as string) : undefined;
  } catch {
    return undefined;
  }
}

const CONTRACT = /^C[A-Z2-7]{55}$/;

export function createChannelSessions(options: ChannelSessionsOptions) {
  const now = options.now ?? systemClock;
  const ttl = options.challengeTtlMs ?? 5 * 60_000;
  const { ledger, network } = options;
  const caip = network.x402Network;

  /** The channel as the ledger knows it; read from the chain and vetted on first sight, or again when `refresh`. */
  async function channelRow(channel: string, refresh = false) {
    const known = await ledger.channels.get(channel);
    if (known && !refresh) return known;
    let state: ChannelState;
    try {
      state = await options.readChannel(channel);
    } catch (err) {
      if (err instanceof StellarError && err.code === 'NOT_FOUND') throw new MppError('verification-failed', `no payment channel at ${channel}`);
      throw err;
    }
    if (state.recipient !== options.treasury)
      throw new MppError('verification-failed', `the channel pays ${state.recipient}, not this gateway's treasury ${options.treasury}`);
    if (state.token !== network.usdc.contractId)
      throw new MppError('verification-failed', `the channel holds ${state.token}, not USDC (${network.usdc.contractId})`);
    if (state.wasmHash === null || !options.channelWasmHashes.includes(state.wasmHash))
      throw new MppError('verification-failed', 'the channel contract is not the one-way channel this gateway accepts (its code hash is not allowed)');
    if (state.refundWaitingPeriod < options.minRefundWaitingPeriod)
      throw new MppError(
        'verification-failed',
        `the channel's refund waiting period is ${state.refundWaitingPeriod} ledgers; this gateway needs at least ${options.minRefundWaitingPeriod}`,
      );
    const closing = state.closeEffectiveAtLedger !== null;
    const { channel: stored } = await ledger.channels.upsert({
      channel,
      network: caip,
      token: state.token,
      funder: state.funder,
      recipient: state.recipient,
      commitmentKey: state.commitmentKey,
      refundWaitingPeriod: state.refundWaitingPeriod,
      deposited: state.deposited,
      closeEffectiveLedger: state.closeEffectiveAtLedger,
      state: closing ? (state.closeEffectiveAtLedger! <= state.latestLedger ? 'closed' : 'closing') : 'open',
    });
    return stored;
  }

  /** A `stellar`/`channel` challenge for one call of `service` at `price`, on the channel's cumulative amount. */
  async function challenge(
    channel: string,
    service: string,
    price: bigint,
    description?: string,
    opts: { knownOnly?: boolean } = {},
  ): Promise<PaymentChallenge> {
    if (!CONTRACT.test(channel)) throw new MppError('verification-failed', 'a channel is a contract address (C...)');
    // After a refused credential only a channel the ledger knows gets a fresh challenge: a credential naming any
    // channel must not make the gateway read the chain (a request for a challenge, limited per address, does).
    const row = opts.knownOnly ? await ledger.channels.get(channel) : await channelRow(channel);
    if (!row) throw new MppError('verification-failed', `the channel ${channel} is not known here: ask for a challenge with Farebox-Channel`);
    return createPaymentChallenge(options.secret, {
      realm: options.realm,
      method: 'stellar',
      intent: 'channel',
      request: {
        amount: price.toString(),
        channel,
        ...(description ? { description } : {}),
        methodDetails: { reference: crypto.randomUUID(), network: caip, cumulativeAmount: row.paid.toString() },
      },
      expires: new Date(now() + ttl).toISOString(),
      opaque: opaqueFor(service),
    });
  }

  /**
   * Checks a credential for one call of `service` at `price` and stores its voucher for `callId`; throws an
   * {@link MppError} (its problem code) for anything not accepted, and then nothing is stored.
   */
  async function accept(credential: PaymentCredential, svc: { service: string; owner: string }, price: bigint, callId: string): Promise<AcceptedVoucher> {
    const service = svc.service;
    const ch = credential.challenge;
    if (ch.method !== 'stellar' || ch.intent !== 'channel')
      throw new MppError('method-unsupported', `this route takes stellar/channel, not ${ch.method}/${ch.intent}`);
    if (!(await isOwnChallenge(options.secret, ch))) throw new MppError('invalid-challenge', 'the challenge was not issued by this gateway');
    if (!ch.expires || !(Date.parse(ch.expires) > now())) throw new MppError('payment-expired', 'the challenge has expired: ask for a new one');
    const request = ch.request as { amount?: unknown; channel?: unknown; methodDetails?: { reference?: unknown } };
    if (serviceOf(ch.opaque) !== service || request.amount !== price.toString())
      throw new MppError('invalid-challenge', `the challenge was issued for another service or price (this call: ${service} at ${price} base units)`);
    const channel = String(request.channel);
    const voucher = parseStellarVoucher(credential.payload);
    if (voucher.action !== 'voucher')
      throw new MppError(
        'invalid-payload',
        'a call is paid with a voucher; a channel is closed on chain (the funder starts it with close_start; the treasury then closes it)',
      );
    let row = await channelRow(channel);
    const key = encodeStrKey('publicKey', Uint8Array.from(Buffer.from(row.commitmentKey, 'hex')));
    if (!(await verifyEd25519(key, commitmentBytes(channel, voucher.amount, network.passphrase), voucher.signature)))
      throw new MppError('verification-failed', "the voucher's signature does not verify with the channel's commitment key");
    const reserve = () =>
      ledger.channels.reserve(channel, {
        callId,
        amount: voucher.amount,
        price,
        signature: Buffer.from(voucher.signature).toString('hex'),
        service,
        publisherOwner: svc.owner,
        leaseMs: options.leaseMs,
      });
    let r = await reserve();
    if (!r.reserved && r.refused === 'over_deposit') {
      // A top-up the ledger has not seen yet: read the channel again, once.
      row = await channelRow(channel, true);
      r = await reserve();
    }
    if (!r.reserved) throw refusal(r.refused, r.paid, price, row.deposited);
    return { channel, amount: voucher.amount, price, callId, reference: String(request.methodDetails?.reference ?? ch.id), challengeId: ch.id };
  }

  function refusal(reason: string, paid: bigint, price: bigint, deposited: bigint): MppError {
    const next = `the next voucher is for ${paid + price} (cumulative ${paid} + price ${price})`;
    switch (reason) {
      case 'replayed':
        return new MppError('verification-failed', `the voucher was already used: ${next}`);
      case 'lowered':
      case 'wrong_amount':
        return new MppError('verification-failed', `the voucher's amount is not the channel's cumulative plus this call's price: ${next}`);
      case 'over_deposit':
        return new MppError('payment-insufficient', `the channel holds ${deposited}; ${next}: top it up (the channel's top_up)`);
      case 'busy':
        return new MppError('verification-failed', 'another call on this channel is in progress: a channel pays one call at a time');
      case 'closed':
        return new MppError('verification-failed', 'the channel is closing or closed: open a new one');
      default:
        return new MppError('verification-failed', `the channel is not known here (${reason})`);
    }
  }

  return {
    challenge,
    accept,
    /** The call answered: the voucher pays it (the service's earning). */
    async post(v: AcceptedVoucher): Promise<PaymentReceipt> {
      const r = await ledger.channels.post(v.channel, v.callId);
      // Its lease ran out and another call took the channel: this call's voucher is not counted.
      if (!r.applied) throw new MppError('verification-failed', 'the voucher was released before the call was answered');
      return { status: 'success', method: 'stellar', timestamp: new Date(now()).toISOString(), reference: v.reference, challengeId: v.challengeId };
    },
    /** The call failed: the voucher is not counted (the next one repeats its amount). */
    async void(v: AcceptedVoucher): Promise<void> {
      await ledger.channels.void(v.channel, v.callId);
    },
    /** The channel's cumulative amount (what the next voucher builds on), or undefined when it is not known. */
    async paid(channel: string): Promise<bigint | undefined> {
      return (await ledger.channels.get(channel))?.paid;
    },
  };
}

export type ChannelSessions = ReturnType<typeof createChannelSessions>;
