import { z } from 'zod';
import { account, NONE, type Operation } from './operation.js';
import { Address, amountFields, Timestamp } from './schema-parts.js';
import { Service, Settlement } from './schemas.js';

/**
 * Publisher links (docs/api.md, "Publisher links"): a service registered with its own key (a provider-SDK
 * service's `.farebox/keypair`) is linked to a publisher account by a challenge the key signs; the account's
 * overview, settlements, analytics and settle-now then cover it. `GET /v1/publisher/by-owner/:owner` shows
 * any owner key's services, earnings and payouts without a credential (read-only).
 */

const op = <const O extends Operation>(o: O): O => o;
const AUTH_ERRORS = {
  401: 'missing or invalid credential (`authentication required`, `invalid credential`, `session expired`)',
  403: 'a cookie write without the CSRF token or from another origin, or a spend key (`code` CREDENTIAL_KIND)',
  429: 'rate limit exceeded (`Retry-After`)',
} as const;
const ACTIVATE = 'activate publishing first (POST /v1/publisher/activate)';
const unknownField = (iss: { code: string; keys?: string[] }) =>
  iss.code === 'unrecognized_keys' ? `unknown field: ${(iss.keys ?? []).join(', ')}` : undefined;

export const LINK_INPUT_ERRORS = {
  owner: 'owner required: the service owner key (G..., the public key of .farebox/keypair)',
  challenge: 'challenge required: the text POST /v1/publisher/links/challenge answered',
  signature: 'signature required: base64 of the owner key’s ed25519 signature over the challenge',
} as const;

const Owner = z.string({ error: LINK_INPUT_ERRORS.owner }).min(1, LINK_INPUT_ERRORS.owner).max(64, LINK_INPUT_ERRORS.owner);

export const LinkChallengeBody = z
  .strictObject({ owner: Owner.meta({ description: 'The owner key to link (G...).' }) }, { error: unknownField })
  .meta({ id: 'LinkChallengeBody' });

export const LinkChallenge = z
  .object({
    owner: Address,
    challenge: z.string().meta({ description: 'The text the owner key signs (ed25519 over its UTF-8 bytes), as it is.' }),
    expires_at: Timestamp,
  })
  .meta({ id: 'LinkChallenge', description: 'A challenge for linking an owner key to this account, valid 10 minutes.' });

export const LinkBody = z
  .strictObject(
    {
      owner: Owner,
      challenge: z.string({ error: LINK_INPUT_ERRORS.challenge }).min(1, LINK_INPUT_ERRORS.challenge).max(512, LINK_INPUT_ERRORS.challenge),
      signature: z.string({ error: LINK_INPUT_ERRORS.signature }).min(1, LINK_INPUT_ERRORS.signature).max(256, LINK_INPUT_ERRORS.signature),
    },
    { error: unknownField },
  )
  .meta({ id: 'LinkBody', description: 'The challenge, signed by the owner key.' });

export const PublisherLink = z
  .object({ owner: Address, linked: z.literal(true), linked_at: Timestamp, services: z.array(Service) })
  .meta({ id: 'PublisherLink', description: 'An owner key linked to this account, with its services.' });

export const OwnerParams = z.object({ owner: z.string() });

export const OwnerEarnings = z
  .object({
    owner: Address,
    fee: z.object({ pct: z.number() }),
    calls: z.number().int(),
    ...amountFields('gross'),
    ...amountFields('fee'),
    ...amountFields('net'),
    ...amountFields('pending'),
    ...amountFields('settled'),
    services: z.array(Service),
    payouts: z.array(Settlement),
  })
  .meta({
    id: 'OwnerEarnings',
    description:
      "An owner key's services, calls and earnings: gross (what callers paid), fee (the platform's 5 %), net = gross - fee, of which pending (not paid out yet) and settled (paid to the owner's wallet), and its payouts (settlement batches, newest first, with their transactions).",
  });

// biome-ignore format: a table, one operation per line
export const publisherLinkOperations = {
  publisherLinkChallenge: op({ id: 'publisherLinkChallenge', method: 'POST', path: '/v1/publisher/links/challenge', tag: 'publisher', summary: 'A challenge for the owner key of a service registered with its own key (provider SDK) to sign', auth: account(), input: { body: LinkChallengeBody }, status: 200, output: LinkChallenge, errors: { ...AUTH_ERRORS, 400: 'owner is not a Stellar account key (G...)', 403: ACTIVATE } }),
  linkPublisherOwner: op({ id: 'linkPublisherOwner', method: 'POST', path: '/v1/publisher/links', tag: 'publisher', summary: "Link an owner key to this account with its signed challenge: the key's services, earnings and payouts join the publisher views", auth: account(), input: { body: LinkBody }, status: 201, output: PublisherLink, errors: { ...AUTH_ERRORS, 400: 'not a challenge of this gateway for this owner and account; challenge expired; signature does not verify with the owner key', 403: ACTIVATE } }),
  publisherByOwner: op({ id: 'publisherByOwner', method: 'GET', path: '/v1/publisher/by-owner/:owner', tag: 'publisher', summary: "Any owner key's services, calls, gross, fee, net and payouts (no credential; read-only)", auth: NONE, ipRateLimited: true, input: { params: OwnerParams }, status: 200, output: OwnerEarnings, errors: { 400: 'owner is not a Stellar account key (G...)', 429: 'rate limit exceeded (`Retry-After`)' } }),
} as const;
