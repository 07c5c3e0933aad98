import { AsyncLocalStorage } from 'node:async_hooks';
import { x402Facilitator } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { rpc } from '@stellar/stellar-sdk';
import { createEd25519Signer, type FacilitatorStellarSigner } from '@x402/stellar';
import type { Ledger } from '@farebox/ledger';
import { serviceMuxedId, servicePayTo, type NetworkConfig, type TxSigner } from '@farebox/stellar';
import { GatewayError } from '../errors.js';
import { enforceRateLimit, type RateLimitStore } from '../security/rate-limit.js';
import { throughOutage } from '../runtime/outage-retry.js';
import { ChannelsBusy, ChannelsUnavailable, type ChannelPool } from './channels.js';
import type { X402Settings } from './config.js';
import { parseFacilitatorRequest, type FacilitatorRequest } from './request.js';
import { MuxedExactStellarScheme } from '@farebox/provider';
import { acceptedMismatch, fareboxKindExtra, RULE_STATUS } from './rules.js';
import { createSponsorship } from './sponsorship.js';
import { EXACT_RECONCILE_GRACE_MS, EXACT_RECONCILE_INTERVAL_MS } from './reconcile.js';
import { EXACT_REFUND_WINDOW_MS } from './refund.js';
import { authorizationOf, payerOf, readSettledTransfer } from './transfer.js';
import { systemClock } from '../clock.js';

/** A ledger's close time assumed when an authorization's expiry is turned into a time (testnet and pubnet close every 5 to 6 s). */
const LEDGER_SECONDS = 6;
/** Library answers after which nothing can have been submitted (anything else after a submission may still land). */
const NOT_SUBMITTED =
  /^(invalid_|unsupported_scheme|network_mismatch|unexpected_verify_error|settle_exact_stellar_(signer_selection|transaction_signing|fee_bump_signing|transaction_submission)_failed|farebox_(facilitator_busy|channels_unavailable)$)/;

/** Networks the stock `exact` Stellar scheme serves (its passphrases are hard-coded). */
const EXACT_NETWORKS = ['stellar:testnet', 'stellar:pubnet'] as const;

/** An answer of the facilitator's HTTP surface: status, JSON body (bigints none), extra headers. */
export interface FacilitatorAnswer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  /** A 429's rule (`x402-ip`, `x402-payer`, `x402-payer-fees`, `x402-daily-fees`): the access log's and metrics' `rule`. */
  rule?: string;
}

export interface CreateFacilitatorOptions {
  ledger: Ledger;
  network: NetworkConfig;
  /** The platform treasury: every Farebox `exact` offer pays it; it is never a settlement's source (the channel accounts are). */
  treasury: TxSigner;
  /** The channel accounts settlements are sent from (one gateway's pool, shared by its facilitators). */
  channels: ChannelPool;
  settings: X402Settings;
  /** A service of the catalog by name (its owner and registry price), or null. */
  service(name: string): Promise<{ owner: string; pricePerCall: bigint } | null>;
  rateLimits: RateLimitStore;
  /** Problems after money moved (a payment the ledger could not record yet: its intent stays pending for the reconciler). */
  log(message: string, err?: unknown): void;
  /** Test hook of the crash tests: `x402:intent` (the intent written, nothing sent) and `x402:settled` (the transfer on chain, not yet recorded). */
  crashPoint?: (name: string) => void;
  /** How long a settle waits for the database to record a settled payment (default 15 s), then goes on in the background (default 10 min). */
  outage?: { waitMs: number; keepTryingMs: number };
  /** One line per settled payment (the gateway logs it at info, `event: "x402"`). */
  note?(fields: Record<string, unknown>, message: string): void;
  /** Epoch ms (default `Date.now`): the UTC day sponsored fees count in. */
  now?: () => number;
}

export type Facilitator = ReturnType<typeof createFacilitator>;

/** A refusal of Farebox's own rules: verify's and settle's x402 shapes, and `error` for everyone else. */
class Refusal extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly status = 200,
    readonly headers?: Record<string, string>,
    readonly rule?: string,
  ) {
    super(message);
  }
}

/** The treasury in the library's signer list: a payload naming it as source, payer or signer is refused as the facilitator's own; it is never selected. */
function treasuryGuard(address: string): FacilitatorStellarSigner {
  const refused = { code: -1, message: 'the treasury signs no x402 settlement: channel accounts do' };
  return {
    address,
    signAuthEntry: async () => ({ signedAuthEntry: '', error: refused }),
    signTransaction: async () => ({ signedTxXdr: '', error: refused }),
  };
}

function toSigner(signer: TxSigner, passphrase: string): FacilitatorStellarSigner {
  return {
    address: signer.publicKey,
    signAuthEntry: async () => ({ signedAuthEntry: '', error: { code: -1, message: 'the facilitator signs no authorization entries' } }),
    signTransaction: async (xdr, opts) => {
      try {
        return { signedTxXdr: await signer.signTransaction(xdr, opts?.networkPassphrase ?? passphrase), signerAddress: signer.publicKey };
      } catch (err) {
        return { signedTxXdr: '', error: { code: -1, message: err instanceof Error ? err.message : String(err) } };
      }
    },
  };
}

/**
 * The platform's x402 facilitator (`POST /x402/verify`, `POST /x402/settle`,
 * `GET /x402/supported`): `@x402/core`'s `x402Facilitator` with
 * `@x402/stellar`'s `exact` scheme on the gateway's network. Each settlement
 * is sent from a channel account of its own (its source, sequence number and,
 * without a fee account, fee payer), never from the treasury, so settlements
 * run in parallel and never take the treasury's sequence number; channels are
 * handed out fairly (x402/channels.ts: at most a few per payer, payers served
 * in turn). A fee account, when configured, pays the fees in a fee bump.
 * Before the library sees a request, Farebox's rules: the payee is the
 * treasury, the asset the network's USDC, `extra.service` a service of the
 * catalog and the amount at least its price; rate limits per IP and payer; and
 * a settle reserves its fee under the payer's and the facilitator's daily
 * bounds (ledger, one statement each). A successful settle is recorded as the
 * service's earning, once per transaction, with the amount the transaction
 * moved into the treasury (read back from the network).
 */
export function createFacilitator(o: CreateFacilitatorOptions) {
  const x402Network = o.network.x402Network as string;
  const now = o.now ?? systemClock;
  const passphrase = o.network.passphrase;
  const off = !o.settings.enabled
    ? 'the x402 facilitator is off on this gateway (FAREBOX_X402_FACILITATOR)'
    : !(EXACT_NETWORKS as readonly string[]).includes(x402Network)
      ? `the x402 facilitator serves stellar:testnet and stellar:pubnet; this gateway's network is ${x402Network}`
      : undefined;
  const feeBump = o.settings.feeAccountSecret ? createEd25519Signer(o.settings.feeAccountSecret, x402Network as never) : undefined;
  if (feeBump && feeBump.address === o.treasury.publicKey) throw new GatewayError('INTERNAL', 'the x402 fee account must not be the treasury');
  if (feeBump && o.channels.addresses.includes(feeBump.address)) throw new GatewayError('INTERNAL', 'the x402 fee account must not be a channel account');
  // The channel account leased to the settle running in this async context: the one the library signs and sends with.
  const leased = new AsyncLocalStorage<string>();
  const facilitator = new x402Facilitator();
  if (!off) {
    const signers = [treasuryGuard(o.treasury.publicKey), ...o.channels.addresses.map((a) => toSigner(o.channels.signer(a), passphrase))];
    // The library's scheme, settling to a muxed payTo too (the treasury's address for the service paid).
    const scheme = new MuxedExactStellarScheme(signers, {
      rpcConfig: { url: o.network.rpcUrl },
      // Never round-robin: the leased channel, or none (the library then refuses before anything is sent).
      selectSigner: () => leased.getStore() as string,
      maxTransactionFeeStroops: Number(o.settings.maxFeeStroops),
      ...(feeBump ? { feeBumpSigner: feeBump } : {}),
    });
    facilitator.register(x402Network as `${string}:${string}`, scheme);
  }
  const chain = new rpc.Server(o.network.rpcUrl, { allowHttp: o.network.allowHttp });
  const outage = o.outage ?? { waitMs: 15_000, keepTryingMs: 600_000 };
  // The fees sponsored and their bounds (x402/sponsorship.ts).
  const sponsorship = createSponsorship({
    ledger: o.ledger,
    settings: o.settings,
    passphrase,
    feeBump: feeBump !== undefined,
    now,
    chain,
    refuse: (reason, message, status, headers, rule) => new Refusal(reason, message, status, headers, rule),
  });

  /** Farebox's rules on the requirements, before the library or the network sees anything. */
  async function admit(r: FacilitatorRequest, ip: string): Promise<{ service: string; owner: string; established: boolean }> {
    if (off) throw new Refusal('facilitator_unavailable', off, 503);
    await limit(o.settings.rateLimits.ip, ip);
    const req = r.paymentRequirements;
    if (req.scheme !== 'exact' || r.paymentPayload.accepted.scheme !== 'exact')
      throw new Refusal('unsupported_scheme', 'this facilitator settles the exact scheme only', RULE_STATUS);
    if (req.network !== x402Network) throw new Refusal('invalid_network', `this facilitator settles exact payments on ${x402Network} only`, RULE_STATUS);
    const name = req.extra?.service;
    if (typeof name !== 'string' || name === '')
      throw new Refusal('farebox_service_missing', 'extra.service must name the Farebox service being paid', RULE_STATUS);
    const service = await o.service(name);
    if (!service) throw new Refusal('farebox_unknown_service', `unknown service "${name}": extra.service must name a service in the catalog`, RULE_STATUS);
    // The treasury's address for this service: the transfer the payer signs names the service it pays.
    const payTo = servicePayTo(o.treasury.publicKey, name);
    if (req.payTo !== payTo)
      throw new Refusal(
        'farebox_payee_not_treasury',
        `payTo must be ${payTo}, the platform treasury ${o.treasury.publicKey} muxed with the id of ${name} (${serviceMuxedId(name)}): this facilitator settles payments to Farebox services only, to the address of the service paid`,
        RULE_STATUS,
      );
    if (req.asset !== o.network.usdc.contractId)
      throw new Refusal('farebox_wrong_asset', `asset must be the USDC token contract ${o.network.usdc.contractId}`, RULE_STATUS);
    if (BigInt(req.amount) < service.pricePerCall)
      throw new Refusal('farebox_amount_below_price', `amount ${req.amount} is below the price of ${name} (${service.pricePerCall} base units)`, RULE_STATUS);
    // What the payer accepted must be what is settled (the service credited included), field by field.
    const mismatch = acceptedMismatch(r.paymentPayload.accepted, req);
    if (mismatch) throw new Refusal(mismatch.reason, mismatch.message, RULE_STATUS);
    const payer = payerOf(r.paymentPayload.payload.transaction, passphrase);
    if (!payer) return { service: name, owner: service.owner, established: false };
    await limit(o.settings.rateLimits.payer, payer);
    // A payer whose settle failed on chain today, or a newcomer once the newcomers' part is spent: refused at verify already.
    const { established } = await sponsorship.standing(payer, name);
    return { service: name, owner: service.owner, established };
  }

  async function limit(rule: X402Settings['rateLimits']['ip'], subject: string): Promise<void> {
    try {
      await enforceRateLimit(o.rateLimits, rule, subject);
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'RATE_LIMITED') throw new Refusal('rate_limited', err.message, 429, err.headers, rule.name);
      throw err;
    }
  }

  async function answer<T extends Record<string, unknown>>(
    run: () => Promise<FacilitatorAnswer>,
    refused: (reason: string, message: string) => T,
  ): Promise<FacilitatorAnswer> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof Refusal)
        return {
          status: err.status,
          body: { ...refused(err.reason, err.message), error: err.message },
          ...(err.headers ? { headers: err.headers } : {}),
          ...(err.rule ? { rule: err.rule } : {}),
        };
      throw err;
    }
  }

  const verifyRefusal = (reason: string, message: string, payer?: string) => ({
    isValid: false,
    invalidReason: reason,
    invalidMessage: message,
    ...(payer ? { payer } : {}),
  });
  const settleRefusal = (reason: string, message: string, payer?: string) => ({
    success: false,
    errorReason: reason,
    errorMessage: message,
    transaction: '',
    network: x402Network,
    ...(payer ? { payer } : {}),
  });

  async function settlePayment(r: FacilitatorRequest, ip: string): Promise<FacilitatorAnswer> {
    const { service, owner, established } = await admit(r, ip);
    const payload = r.paymentPayload as unknown as PaymentPayload;
    const requirements = r.paymentRequirements as unknown as PaymentRequirements;
    const transactionXdr = r.paymentPayload.payload.transaction;
    const payer = payerOf(transactionXdr, passphrase);
    const authorization = payer ? authorizationOf(transactionXdr, passphrase, payer) : undefined;
    if (!payer || !authorization)
      return { status: 200, body: settleRefusal('invalid_exact_stellar_payload_malformed', 'the payload is not a signed transfer transaction', payer) };
    const fees = await sponsorship.reserve(payer, service, transactionXdr, established);
    // A settle-first offer (`extra.refundable: true`, what the payer accepted: compared field by field in admit) may be
    // refunded within the refund window: its earning is held back from settlement batches for that long.
    const holdMs = requirements.extra?.refundable === true ? (o.settings.refundWindowMs ?? EXACT_REFUND_WINDOW_MS) : null;
    // The intent, before anything moves: if the record below never happens, the reconciler finds the transfer.
    let intent: Awaited<ReturnType<typeof openIntent>>;
    try {
      intent = await openIntent(payer, authorization, { service, owner, requirements, holdMs });
    } catch (err) {
      await fees.release(null);
      throw err;
    }
    if (!intent.opened && intent.state === 'pending') {
      await fees.release(null);
      throw new Refusal(
        'farebox_settlement_in_progress',
        `this authorization (payer ${payer}, nonce ${authorization.nonce}) is already being settled; its outcome is recorded from the chain`,
      );
    }
    o.crashPoint?.('x402:intent');
    let result: SettleResponse;
    try {
      result = await throughChannel(payer, intent.waitMs, payload, requirements);
    } catch (err) {
      if (err instanceof ChannelsBusy || err instanceof ChannelsUnavailable) {
        // Nothing was sent: the fee comes back and the authorization may be settled again.
        await fees.release(null);
        const reason = err instanceof ChannelsBusy ? 'farebox_facilitator_busy' : 'farebox_channels_unavailable';
        if (intent.opened)
          await closeUnmoved(payer, authorization.nonce, { success: false, errorReason: reason, transaction: '', network: requirements.network });
        throw new Refusal(reason, `${err.message}; nothing was sent, try again`, 503, { 'Retry-After': '1' });
      }
      // Whether it reached the network is unknown: the intent stays pending for the reconciler.
      await fees.release(null);
      return { status: 200, body: settleRefusal('unexpected_settle_error', err instanceof Error ? err.message : String(err), payer) };
    }
    if (!result.success) {
      // Not sent (refused before submission): nothing was charged. Sent and failed: the fee it was charged stays counted, and the payer is not sponsored again today.
      await (result.transaction ? fees.failed(result.transaction) : fees.release(null));
      if (intent.opened) await closeUnmoved(payer, authorization.nonce, result);
      return { status: 200, body: { ...result, network: x402Network } };
    }
    o.crashPoint?.('x402:settled');
    const hash = result.transaction;
    try {
      const moved = await readSettledTransfer(o.network, hash, { asset: requirements.asset, from: payer, to: o.treasury.publicKey });
      // The earning first; the fee bound's reservation may stay a little high if the database is gone (it errs on the safe side).
      const released = () =>
        fees.release(moved.feeCharged).catch((err) => o.log(`x402 settlement ${hash}: the unused fee reservation was not given back`, err));
      if (moved.amount > 0n) {
        const input = {
          txHash: hash,
          network: x402Network,
          asset: requirements.asset,
          payer,
          payTo: o.treasury.publicKey,
          service,
          publisherOwner: owner,
          amount: moved.amount,
          feeCharged: moved.feeCharged,
          intentNonce: authorization.nonce,
          holdMs,
        };
        // A database outage is waited out (and then retried in the background), like a call's post; the reconciler is the last resort.
        await throughOutage(() => o.ledger.recordExactPayment(input), `record of x402 payment ${hash}`, {
          ...outage,
          log: o.log,
          now,
          resolvedBy: 'the x402 reconciler (from the chain)',
        });
        o.note?.(
          { txHash: hash, service, owner, payer, amount: moved.amount.toString(), feeCharged: moved.feeCharged.toString() },
          `x402 payment settled: ${moved.amount} base units to ${service}`,
        );
        await released();
      } else {
        await released();
        o.log(`x402 settlement ${hash} (${service}, payer ${payer}): no transfer into the treasury found; the reconciler decides`);
      }
    } catch (err) {
      o.log(
        `x402 settlement ${hash} (${service} of ${owner}, payer ${payer}, nonce ${authorization.nonce}) moved money but is not recorded yet: its intent stays pending and the reconciler records it from the chain`,
        err,
      );
    }
    return { status: 200, body: { ...result } };
  }

  /**
   * The library's settle from a channel account leased for it: waits its turn at most `waitMs` (ChannelsBusy after that,
   * nothing sent). A submission refused at once (the channel's sequence number or XLM) is sent again from another channel.
   */
  async function throughChannel(payer: string, waitMs: number, payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const deadline = now() + waitMs;
    let out: SettleResponse | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const lease = await o.channels.lease(payer, Math.max(0, deadline - now()));
      let refused = false;
      try {
        out = await leased.run(lease.address, () => facilitator.settle(payload, requirements));
        refused = !out.success && out.errorReason === 'settle_exact_stellar_transaction_submission_failed';
      } finally {
        lease.release({ recheck: refused });
      }
      if (!refused) break;
    }
    return out!;
  }

  /**
   * Writes the settlement's pending intent (or finds the one of an earlier attempt); `state` is the intent's now, `waitMs` how
   * long the settle may wait for a channel: the payment's `maxTimeoutSeconds`, and no longer than its authorization's ledgers left.
   */
  async function openIntent(
    payer: string,
    authorization: { nonce: string; expirationLedger: number },
    what: { service: string; owner: string; requirements: PaymentRequirements; holdMs: number | null },
  ): Promise<{ opened: boolean; state: string; waitMs: number }> {
    let startLedger: number;
    try {
      startLedger = (await chain.getLatestLedger()).sequence;
    } catch (err) {
      throw new Refusal('unexpected_settle_error', `the network's latest ledger could not be read: ${err instanceof Error ? err.message : String(err)}`, 502);
    }
    const ledgersLeft = Math.max(0, authorization.expirationLedger - startLedger + 1);
    const allowance = EXACT_RECONCILE_GRACE_MS + 3 * EXACT_RECONCILE_INTERVAL_MS;
    const { opened, intent } = await o.ledger.exactIntents.open({
      payer,
      nonce: authorization.nonce,
      expirationLedger: authorization.expirationLedger,
      startLedger,
      network: x402Network,
      asset: what.requirements.asset,
      payTo: o.treasury.publicKey,
      service: what.service,
      publisherOwner: what.owner,
      amount: BigInt(what.requirements.amount),
      resolveBy: new Date(now() + ledgersLeft * LEDGER_SECONDS * 1000 + allowance),
      holdMs: what.holdMs,
    });
    const timeoutSeconds = what.requirements.maxTimeoutSeconds > 0 ? what.requirements.maxTimeoutSeconds : 60;
    return { opened, state: intent.state, waitMs: Math.min(timeoutSeconds, ledgersLeft * LEDGER_SECONDS) * 1000 };
  }

  /** After a failed settlement: closed as failed when nothing can have moved; otherwise left pending for the reconciler. */
  async function closeUnmoved(payer: string, nonce: string, result: SettleResponse): Promise<void> {
    let unmoved = !result.transaction && NOT_SUBMITTED.test(result.errorReason ?? '');
    if (result.transaction) {
      const status = await chain.getTransaction(result.transaction).catch(() => undefined);
      unmoved = status?.status === rpc.Api.GetTransactionStatus.FAILED;
    }
    if (!unmoved) return;
    await o.ledger.exactIntents
      .close(payer, nonce, {
        state: 'failed',
        error: `${result.errorReason ?? 'settle failed'}${result.transaction ? ` (transaction ${result.transaction} failed)` : ''}`,
      })
      .catch((err) => o.log(`x402 intent of payer ${payer}, nonce ${nonce} moved nothing but could not be closed; the reconciler closes it`, err));
  }

  return {
    /** Why verify and settle answer 503, or undefined when they serve. */
    off,
    /** `GET /x402/supported`: the standard answer and the treasury that Farebox offers name as `payTo`. */
    supported(): Record<string, unknown> {
      const library = off ? { kinds: [], extensions: [], signers: {} } : facilitator.getSupported();
      // Farebox's rules in each kind's extra, so a resource server learns them before its first customer.
      const rules = fareboxKindExtra({ payTo: o.treasury.publicKey, asset: o.network.usdc.contractId });
      const kinds = library.kinds.map((k) => ({ ...k, extra: { ...k.extra, farebox: rules } }));
      // The bazaar catalog is served beside the facilitator (/x402/discovery/resources and /search).
      const standard = { ...library, kinds, extensions: [...new Set([...library.extensions, 'bazaar'])] };
      return { ...standard, farebox: { payTo: o.treasury.publicKey, network: x402Network, asset: o.network.usdc.contractId } };
    },
    /** `POST /x402/verify`: the library's answer after Farebox's rules; nothing moves. */
    verify(body: unknown, ip: string): Promise<FacilitatorAnswer> {
      return answer(async () => {
        const r = parseFacilitatorRequest(body, (m) => new Refusal('invalid_payload', m, 400));
        await admit(r, ip);
        let result: VerifyResponse;
        try {
          result = await facilitator.verify(r.paymentPayload as unknown as PaymentPayload, r.paymentRequirements as unknown as PaymentRequirements);
        } catch (err) {
          return { status: 200, body: verifyRefusal('unexpected_verify_error', err instanceof Error ? err.message : String(err)) };
        }
        return { status: 200, body: { ...result } };
      }, verifyRefusal);
    },
    /** `POST /x402/settle`: verify, reserve the fee, submit, record the earning. */
    settle(body: unknown, ip: string): Promise<FacilitatorAnswer> {
      return answer(
        async () =>
          settlePayment(
            parseFacilitatorRequest(body, (m) => new Refusal('invalid_payload', m, 400)),
            ip,
          ),
        settleRefusal,
      );
    },
  };
}
