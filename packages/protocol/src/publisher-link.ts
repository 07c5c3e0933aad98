import { createEd25519Signer } from './crypto.js';
import { base64Encode } from './encoding.js';

// Linking a service owner's key (the `G...` a provider-SDK service is registered under, `.farebox/keypair`)
// to a publisher account: the gateway hands out a challenge naming the key, the account and an expiry; the key
// signs it (ed25519 over its UTF-8 bytes, base64) and the account posts it back (docs/api.md, "Publisher links").

/** How long a link challenge stays valid (ms). */
export const PUBLISHER_LINK_TTL_MS = 10 * 60_000;

/** What a link challenge names: the owner key, the account it is linked to, when the challenge expires (epoch ms). */
export interface PublisherLinkTerms {
  owner: string;
  account: string;
  expiresAt: number;
}

const HEAD = 'farebox-publisher-link:v1';

/** The text the owner key signs: one line per field, in this order. */
export function publisherLinkChallenge(t: PublisherLinkTerms): string {
  return [HEAD, `owner: ${t.owner}`, `account: ${t.account}`, `expires: ${new Date(t.expiresAt).toISOString()}`].join('\n');
}

/** The terms of a challenge written by {@link publisherLinkChallenge}, or `null` for any other text. */
export function parsePublisherLinkChallenge(text: string): PublisherLinkTerms | null {
  const m = /^farebox-publisher-link:v1\nowner: (\S+)\naccount: (\S+)\nexpires: (\S+)$/.exec(text);
  if (!m) return null;
  const expiresAt = Date.parse(m[3]!);
  if (!Number.isFinite(expiresAt)) return null;
  const t = { owner: m[1]!, account: m[2]!, expiresAt };
  return publisherLinkChallenge(t) === text ? t : null;
}

/**
 * Signs a link challenge with the owner key's secret seed (`S...`): the owner (`G...`) and the base64 signature
 * `POST /v1/publisher/links` takes with it.
 */
export async function signPublisherLink(secretSeed: string, challenge: string): Promise<{ owner: string; signature: string }> {
  const signer = await createEd25519Signer(secretSeed.trim());
  return { owner: signer.publicKey, signature: base64Encode(await signer.sign(new TextEncoder().encode(challenge))) };
}
