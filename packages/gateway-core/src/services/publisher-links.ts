import { PUBLISHER_LINK_TTL_MS, parsePublisherLinkChallenge, publisherLinkChallenge } from '@farebox/protocol';
import { Keypair, StrKey } from '@stellar/stellar-sdk';
import type { User } from '../auth/accounts.js';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';

// Owner keys linked to publisher accounts (migration 0016; docs/api.md, "Publisher links"): a service registered
// with its own key earns under that key; the key signs a challenge naming the account, and the account's
// publisher views cover it from then on.

export const NOT_AN_OWNER = 'owner is not a Stellar account key (G...)';

/** `owner` checked as a Stellar account key, or a 400 naming what it must be. */
export function ownerKey(owner: unknown): string {
  if (typeof owner !== 'string' || !StrKey.isValidEd25519PublicKey(owner)) throw new GatewayError('BAD_REQUEST', NOT_AN_OWNER);
  return owner;
}

export interface PublisherLinks {
  /** The owner keys linked to the account, oldest link first. */
  owners(userId: string): Promise<string[]>;
  challenge(user: User, owner: string): { owner: string; challenge: string; expires_at: string };
  /** Checks the signed challenge and links the key to the account (moving it from another account it was linked to). */
  link(user: User, input: { owner: string; challenge: string; signature: string }): Promise<{ owner: string; linked_at: string }>;
}

export function createPublisherLinks({ db, now }: { db: Db; now: () => number }): PublisherLinks {
  return {
    async owners(userId) {
      const { rows } = await db.query<{ owner: string }>('SELECT owner FROM gw_publisher_links WHERE user_id = $1 ORDER BY linked_at, owner', [userId]);
      return rows.map((r) => r.owner);
    },
    challenge(user, owner) {
      const expiresAt = now() + PUBLISHER_LINK_TTL_MS;
      return {
        owner: ownerKey(owner),
        challenge: publisherLinkChallenge({ owner, account: user.id, expiresAt }),
        expires_at: new Date(expiresAt).toISOString(),
      };
    },
    async link(user, input) {
      const owner = ownerKey(input.owner);
      const terms = parsePublisherLinkChallenge(input.challenge);
      if (!terms || terms.owner !== owner || terms.account !== user.id)
        throw new GatewayError('BAD_REQUEST', 'not a challenge of this gateway for this owner and account: ask POST /v1/publisher/links/challenge for one');
      if (terms.expiresAt <= now() || terms.expiresAt > now() + PUBLISHER_LINK_TTL_MS)
        throw new GatewayError('BAD_REQUEST', 'challenge expired: ask POST /v1/publisher/links/challenge for a new one and sign it within 10 minutes');
      let valid = false;
      try {
        valid = Keypair.fromPublicKey(owner).verify(Buffer.from(input.challenge, 'utf8'), Buffer.from(input.signature, 'base64'));
      } catch {
        valid = false;
      }
      if (!valid)
        throw new GatewayError(
          'BAD_REQUEST',
          `signature does not verify with the owner key ${owner}: sign the challenge with its secret (farebox publisher link --keypair .farebox/keypair)`,
        );
      const { rows } = await db.query<{ linked_at: Date | string }>(
        `INSERT INTO gw_publisher_links (owner, user_id) VALUES ($1, $2)
         ON CONFLICT (owner) DO UPDATE SET user_id = EXCLUDED.user_id, linked_at = CASE WHEN gw_publisher_links.user_id = EXCLUDED.user_id THEN gw_publisher_links.linked_at ELSE now() END
         RETURNING linked_at`,
        [owner, user.id],
      );
      return { owner, linked_at: new Date(rows[0]!.linked_at).toISOString() };
    },
  };
}
