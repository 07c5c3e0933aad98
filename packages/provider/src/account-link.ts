import { signPublisherLink } from '@farebox/protocol';
import { ProviderError } from './errors.js';

/** `bootstrap({ account })`: the publisher account the owner key is linked to, so its earnings show there. */
export interface AccountLinkOptions {
  /** An API key of the publisher account (a manage key: `sk_live_...`, `farebox keys create`). */
  apiKey: string;
  /** The gateway; default `platform.url` (`FAREBOX_URL`). */
  url?: string;
}

/** The gateway `npm start` runs, on the local network when no `platform.url` (`FAREBOX_URL`) names one. */
export const localGateway = (network: string): string | undefined => (network === 'local' ? 'http://127.0.0.1:8787' : undefined);

/** What {@link linkOwnerToAccount} did: the key and the services the account now sees. */
export interface AccountLinkResult {
  owner: string;
  linkedAt: string;
  services: string[];
}

async function post(url: string, apiKey: string, body: unknown): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch (e) {
    throw new ProviderError(
      'ACCOUNT',
      `cannot reach the gateway at ${url} (${(e as Error).message}): set FAREBOX_URL (or account.url) to your gateway's address`,
      { url },
    );
  }
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const why = typeof json.error === 'string' ? json.error : `HTTP ${res.status}`;
    const hint = res.status === 401 ? ': account.apiKey must be an API key of your publisher account (farebox keys create)' : '';
    throw new ProviderError('ACCOUNT', `linking the owner key to your account failed: ${why}${hint}`, { status: res.status });
  }
  return json;
}

/**
 * Links the owner key (its secret seed signs) to the publisher account of `apiKey`: the gateway's challenge,
 * signed, posted back (docs/api.md, "Publisher links"). The account's overview, settlements, analytics and
 * settle-now then cover the key's services; payouts still go to the key's wallet.
 */
export async function linkOwnerToAccount(secretSeed: string, account: AccountLinkOptions, defaultUrl: string | undefined): Promise<AccountLinkResult> {
  const base = (account.url ?? defaultUrl ?? '').replace(/\/+$/, '');
  if (!base) throw new ProviderError('ACCOUNT', 'bootstrap({ account }) needs the gateway: set platform.url (FAREBOX_URL) or account.url');
  if (typeof account.apiKey !== 'string' || !account.apiKey)
    throw new ProviderError('ACCOUNT', 'bootstrap({ account }) needs account.apiKey: an API key of your publisher account (farebox keys create)');
  const { owner } = await signPublisherLink(secretSeed, '');
  const ch = await post(`${base}/v1/publisher/links/challenge`, account.apiKey, { owner });
  const signed = await signPublisherLink(secretSeed, String(ch.challenge));
  const r = await post(`${base}/v1/publisher/links`, account.apiKey, { challenge: ch.challenge, ...signed });
  const services = Array.isArray(r.services) ? r.services.map((s) => String((s as { service?: unknown }).service)) : [];
  return { owner, linkedAt: String(r.linked_at), services };
}
