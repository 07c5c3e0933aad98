import { createHmac, randomBytes as nodeRandomBytes, timingSafeEqual } from 'node:crypto';
import { base64UrlEncode, formatAmount, isValidStrKey, type PaymentResponse, type X402Network } from '@farebox/protocol';
import type { Escrow, EscrowClient } from '@farebox/escrow';
import type { TxSigner } from '@farebox/stellar';
import { ProviderError } from './errors.js';
import type { EscrowClaim, EscrowClaimRequest, EscrowVerifier } from './ports.js';
import type { ServedEscrowRecord, ServedEscrowStore } from './served-store.js';

/** The escrow operations the verifier uses (an `EscrowClient` from `@farebox/escrow`). */
export type EscrowOperations = Pick<EscrowClient, 'getEscrows' | 'run'>;

export interface EscrowVerifierOptions {
  /** The escrow provider's client (`createEscrowClient` from `@farebox/escrow`). */
  escrow: EscrowOperations;
  /** The service owner's key: the escrow's receiver, approver, service provider and release signer. */
  signer: TxSigner;
  /** Where claimed escrows are recorded before serving; use a durable store ({@link FileServedEscrowStore}). */
  servedStore: ServedEscrowStore;
  network: X402Network;
  /** The platform treasury; when set, an escrow must name it as platform address (where the fee goes) and dispute resolver. */
  platformAddress?: string;
  /** The platform fee an escrow must carry, percent (default 5). */
  platformFee?: number;
  /** The settlement asset: an escrow's trustline must name its contract id or its issuer. Unchecked when omitted. */
  asset?: { contractId?: string; issuer?: string };
  /**
   * Key of the quote ids (HMAC). Keep it stable across restarts so that a quote
   * issued before a restart is still honoured; the provider derives it from the
   * owner's secret. Default: random per verifier.
   */
  quoteKey?: Uint8Array | string;
  /** Milestone status set before approval; default `completed`. */
  completedStatus?: string;
  now?: () => number;
}

/** The Farebox escrow verifier: an {@link EscrowVerifier} with quote ids and release retries. */
export interface FareboxEscrowVerifier extends EscrowVerifier {
  quoteId(quote: { service: string; payTo: string; amount: bigint; network: X402Network }): string;
  /** Whether `quoteId` is a quote this verifier issued for `service` (paid to `payTo` on `network`). */
  isOwnQuote(quoteId: string, quote: { service: string; payTo: string; network: X402Network }): boolean;
  /**
   * Releases every escrow that was served but whose release failed (status
   * `served`): run it at start-up or periodically. Never touches an escrow that
   * was not served.
   */
  releasePending(): Promise<Array<{ escrowId: string; ok: boolean; transaction?: string; error?: string }>>;
}

const QUOTE_PREFIX = 'q_';
const QUOTE_NONCE_BYTES = 12;
const QUOTE_MAC_BYTES = 16;
const QUOTE_PATTERN = /q_[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}/g;

function keyBytes(key: Uint8Array | string | undefined): Buffer {
  if (key === undefined) return nodeRandomBytes(32);
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : Buffer.from(key);
  if (bytes.length < 16) throw new ProviderError('ESCROW', 'quoteKey must be at least 16 bytes');
  return bytes;
}

function usd(units: bigint): string {
  return `${formatAmount(units, { trim: true })} USDC`;
}

function message(e: unknown): string {
  return e instanceof Error && e.message ? e.message : String(e);
}

/**
 * Verifies, serves once and releases direct (x402 escrow) payments through
 * the escrow provider (Trustless Work, or the devnet's). `claim` reads the
 * escrow, checks that it is funded for this payload's price, pending, pays
 * this service's owner, lets the owner release it and answers a quote this
 * provider issued; then records it in the durable store before the handler
 * runs. `release` moves the milestone to done, approves it and releases the
 * funds (the fee goes to the platform at release); `abandon` only records
 * why, so the caller can get a refund through a dispute.
 *
 * @example
 * const verifier = createEscrowVerifier({
 *   escrow: createEscrowClient({ baseUrl, apiKey, passphrase }),
 *   signer: keypairSigner(secret),
 *   servedStore: new FileServedEscrowStore('.farebox/served-escrows.json'),
 *   network: 'stellar:testnet',
 *   platformAddress: treasury,
 * });
 * createProvider({ ..., escrowVerifier: verifier });
 */
export function createEscrowVerifier(options: EscrowVerifierOptions): FareboxEscrowVerifier {
  const { escrow, signer, servedStore, network } = options;
  const problems: string[] = [];
  if (!escrow || typeof escrow.getEscrows !== 'function' || typeof escrow.run !== 'function')
    problems.push('escrow must be an escrow client (getEscrows, run)');
  if (!signer || !isValidStrKey('publicKey', signer.publicKey) || typeof signer.signTransaction !== 'function')
    problems.push('signer must be a TxSigner of the service owner');
  if (!servedStore || typeof servedStore.claim !== 'function') problems.push('servedStore must be a ServedEscrowStore');
  if (options.platformAddress !== undefined && !isValidStrKey('publicKey', options.platformAddress)) problems.push('platformAddress must be a G... public key');
  if (problems.length > 0) throw new ProviderError('ESCROW', `createEscrowVerifier: ${problems.join('; ')}`);
  const owner = signer.publicKey;
  const platformFee = options.platformFee ?? 5;
  const completedStatus = options.completedStatus ?? 'completed';
  const key = keyBytes(options.quoteKey);
  const now = options.now ?? Date.now;

  function mac(nonce: string, quote: { service: string; payTo: string; network: X402Network }): string {
    const h = createHmac('sha256', key).update(`farebox-quote-v1\n${quote.service}\n${quote.payTo}\n${quote.network}\n${nonce}`).digest();
    return base64UrlEncode(new Uint8Array(h.subarray(0, QUOTE_MAC_BYTES)));
  }

  function isOwnQuote(quoteId: string, quote: { service: string; payTo: string; network: X402Network }): boolean {
    if (typeof quoteId !== 'string' || !quoteId.startsWith(QUOTE_PREFIX)) return false;
    const [nonce, tag, extra] = quoteId.slice(QUOTE_PREFIX.length).split('.');
    if (!nonce || !tag || extra !== undefined) return false;
    const expected = Buffer.from(mac(nonce, quote));
    const given = Buffer.from(tag);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** The quote an escrow is bound to: its engagementId, else a quote id in its description. */
  function boundQuote(record: Escrow, quote: { service: string; payTo: string; network: X402Network }): string | undefined {
    if (isOwnQuote(record.engagementId, quote)) return record.engagementId;
    for (const m of record.description.matchAll(QUOTE_PATTERN)) if (isOwnQuote(m[0], quote)) return m[0];
    return undefined;
  }

  function payerOf(record: Escrow): string {
    const m = /payer (G[A-Z2-7]{55})/.exec(record.description);
    return m && isValidStrKey('publicKey', m[1]) ? m[1]! : 'unknown';
  }

  const refuse = (status: 402 | 409, text: string): EscrowClaim => ({ ok: false, status, message: text });

  async function fetchEscrow(escrowId: string): Promise<Escrow | undefined> {
    const found = await escrow.getEscrows([escrowId]);
    return found.find((e) => e.contractId === escrowId);
  }

  async function releaseServed(record: ServedEscrowRecord, fresh: boolean): Promise<string> {
    const contractId = record.escrowId;
    // A retry starts from what the chain says: a step that went through is not sent again.
    const state = fresh ? undefined : await fetchEscrow(contractId);
    if (state?.flags.released) {
      const done = await servedStore.update(contractId, { status: 'released', reason: 'released before this retry' });
      return done.releaseTx ?? contractId;
    }
    const milestone = state?.milestones[0];
    if (!milestone || milestone.status !== completedStatus) {
      await escrow.run(
        'changeMilestoneStatus',
        { contractId, milestoneIndex: '0', newStatus: completedStatus, newEvidence: `served by ${record.service}`, serviceProvider: owner },
        signer,
      );
    }
    if (!milestone?.approved) await escrow.run('approveMilestone', { contractId, milestoneIndex: '0', approver: owner }, signer);
    const { txHash } = await escrow.run('releaseFunds', { contractId, releaseSigner: owner }, signer);
    await servedStore.update(contractId, { status: 'released', releaseTx: txHash });
    return txHash;
  }

  return {
    quoteId(quote) {
      const nonce = base64UrlEncode(new Uint8Array(nodeRandomBytes(QUOTE_NONCE_BYTES)));
      return `${QUOTE_PREFIX}${nonce}.${mac(nonce, quote)}`;
    },

    isOwnQuote,

    async claim(request: EscrowClaimRequest): Promise<EscrowClaim> {
      const { payment, service, payTo, amount } = request;
      if (payTo !== owner) {
        throw new ProviderError('ESCROW', `the escrow verifier signs as ${owner}, but this service is paid to ${payTo}: give it the owner's key`);
      }
      if (request.network !== network) return refuse(402, `payment is for ${request.network}, this verifier runs on ${network}`);
      const escrowId = payment.escrowId;
      const record = await fetchEscrow(escrowId);
      if (!record) return refuse(402, `escrow ${escrowId} not found`);
      if (record.roles.receiver !== owner) return refuse(402, 'escrow receiver does not match');

      const quote = { service, payTo: owner, network };
      const quoteId = boundQuote(record, quote);
      if (!quoteId) {
        return refuse(402, `escrow ${escrowId} does not answer a quote issued by this service: deploy it with engagementId set to the quote's quoteId`);
      }
      if (payment.quoteId !== undefined && payment.quoteId !== quoteId) {
        return refuse(402, `escrow ${escrowId} was opened for quote ${quoteId}, not for ${payment.quoteId}`);
      }

      if (record.flags.released) return refuse(409, `escrow ${escrowId} was already released`);
      if (record.flags.resolved) return refuse(409, `escrow ${escrowId} was resolved by a dispute`);
      if (record.flags.disputed) return refuse(409, `escrow ${escrowId} is disputed`);

      const roles = record.roles;
      const unreleasable = (['approver', 'serviceProvider', 'releaseSigner'] as const).filter((r) => roles[r] !== owner);
      if (unreleasable.length > 0) {
        return refuse(402, `escrow ${escrowId} must name this service's owner ${owner} as ${unreleasable.join(', ')} (it releases the funds after serving)`);
      }
      if (options.platformAddress !== undefined) {
        if (roles.platformAddress !== options.platformAddress)
          return refuse(402, `escrow ${escrowId} must name the platform ${options.platformAddress} as platformAddress`);
        if (roles.disputeResolver !== options.platformAddress)
          return refuse(402, `escrow ${escrowId} must name the platform ${options.platformAddress} as disputeResolver`);
      }
      if (record.platformFee !== platformFee)
        return refuse(402, `escrow ${escrowId} must carry a platform fee of ${platformFee}% (it has ${record.platformFee}%)`);
      const asset = options.asset;
      if (asset && record.trustline.address !== asset.contractId && record.trustline.address !== asset.issuer) {
        return refuse(402, `escrow ${escrowId} holds ${record.trustline.address}, not this network's USDC`);
      }
      if (record.milestones.length !== 1) return refuse(402, `escrow ${escrowId} must have exactly one milestone (it has ${record.milestones.length})`);
      if (record.balance < amount) {
        return refuse(402, `escrow ${escrowId} holds ${usd(record.balance)}, this payload costs ${usd(amount)}: fund it with at least the quoted amount`);
      }

      const payer = payerOf(record);
      const t = now();
      const claimed = await servedStore.claim({
        escrowId,
        service,
        quoteId,
        amount: amount.toString(),
        payer,
        status: 'serving',
        claimedAt: t,
        updatedAt: t,
      });
      if (!claimed) {
        const previous = await servedStore.get(escrowId);
        const why = previous?.status === 'abandoned' ? ` (the call failed: ${previous.reason ?? 'unknown'}; open a dispute to be refunded)` : '';
        return refuse(409, `escrow ${escrowId} was already presented to this service${why}`);
      }
      return { ok: true, escrowId, amount: record.balance, payer };
    },

    async release({ escrowId }): Promise<PaymentResponse> {
      const record = await servedStore.get(escrowId);
      if (!record) throw new ProviderError('ESCROW', `escrow ${escrowId} was not claimed by this provider: not releasing it`);
      if (record.status === 'released') return { success: true, transaction: record.releaseTx ?? escrowId, network, payer: record.payer };
      if (record.status === 'abandoned') throw new ProviderError('ESCROW', `escrow ${escrowId} was not served: not releasing it`);
      const fresh = record.status === 'serving';
      if (fresh) await servedStore.update(escrowId, { status: 'served' });
      try {
        const transaction = await releaseServed(record, fresh);
        return { success: true, transaction, network, payer: record.payer };
      } catch (e) {
        await servedStore.update(escrowId, { status: 'served', reason: `release failed: ${message(e)}` }).catch(() => undefined);
        throw new ProviderError('ESCROW', `release of escrow ${escrowId} failed: ${message(e)}`, { escrowId });
      }
    },

    async abandon({ escrowId, reason }): Promise<void> {
      const record = await servedStore.get(escrowId);
      if (record?.status !== 'serving') return;
      await servedStore.update(escrowId, { status: 'abandoned', reason: reason.slice(0, 500) });
    },

    async releasePending() {
      const out: Array<{ escrowId: string; ok: boolean; transaction?: string; error?: string }> = [];
      for (const record of await servedStore.list()) {
        if (record.status !== 'served') continue;
        try {
          out.push({ escrowId: record.escrowId, ok: true, transaction: await releaseServed(record, false) });
        } catch (e) {
          await servedStore.update(record.escrowId, { status: 'served', reason: `release failed: ${message(e)}` }).catch(() => undefined);
          out.push({ escrowId: record.escrowId, ok: false, error: message(e) });
        }
      }
      return out;
    },
  };
}
