import { ClientError, createGatewayClient, GatewayApiError } from '@farebox/client/gateway';

// The gateway client used by every page: `@farebox/client`'s GatewayClient on
// the page's own origin, with the session cookie and the CSRF header on
// writes. A 401 anywhere means the session is gone: the app goes to sign-in.

function csrfToken(): string | undefined {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === 'farebox_csrf') return decodeURIComponent(v.join('='));
  }
  return undefined;
}

/**
 * Whether this browser holds a session: the gateway sets the readable CSRF
 * cookie with the (httpOnly) session cookie and clears both on sign-out, so
 * a signed-out visit goes to the sign-in page without asking for `/v1/me`
 * (a 401 the browser would log as an error).
 */
export const hasSession = (): boolean => csrfToken() !== undefined;

const watched: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  if (res.status === 401) window.dispatchEvent(new CustomEvent('farebox:unauthenticated'));
  return res;
};

export const gw = createGatewayClient({
  baseUrl: window.location.origin,
  session: { csrfToken },
  fetch: watched,
  // A paid top-up waits for the network to confirm it.
  timeoutMs: 10 * 60_000,
});

export { GatewayApiError };

/** The HTTP status of a gateway refusal (0 when the gateway was not reached). */
export const statusOf = (err: unknown): number => (err instanceof GatewayApiError ? err.status : 0);

export function errorMessage(err: unknown): string {
  if (err instanceof ClientError && err.code === 'NETWORK') return 'the gateway cannot be reached: check your connection and try again';
  return err instanceof Error ? err.message : String(err);
}

export function newIdempotencyKey(): string {
  return typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

export type {
  GatewayAccount as Account,
  GatewayBalance as Balance,
  GatewayWallet as Wallet,
  GatewayWalletStatus as WalletStatus,
  GatewayTopupResult as TopupResult,
  GatewayPlatformKey as PlatformInfo,
  GatewayService as Service,
  GatewayServiceManifest as ServiceManifest,
  GatewayServiceHealth as ServiceHealth,
  GatewayServiceHealthSeries as ServiceHealthSeries,
  GatewayCallResult as CallResult,
  GatewayTransaction as Transaction,
  GatewayApiKey as ApiKey,
  GatewayOAuthConnection as OAuthConnection,
  GatewayPublisherOverview as Overview,
  GatewaySettlement as Settlement,
  GatewayAnalyticsPoint as AnalyticsPoint,
} from '@farebox/client/gateway';
export type Topup = import('@farebox/client/gateway').GatewayTopupResult['topup'];
/** One step of a call's trace (hold, sign, call the service, settle). */
export type TraceStep = import('@farebox/client/gateway').GatewayCallResult['trace']['steps'][number];
