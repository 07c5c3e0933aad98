export { createProvider } from './provider.js';
export type { Provider, PaidRequest, ProviderResponse, HeadersInput, CallContext, ServiceHandler, BootstrapResult } from './provider.js';
export type { AccountLinkOptions, AccountLinkResult } from './account-link.js';
export type {
  ProviderOptions,
  ProviderNetwork,
  ProviderEnv,
  Price,
  ResolvedProviderConfig,
  ExactOptions,
  ExactSettle,
  DiscoveryOptions,
  ResolvedExact,
} from './config.js';
export { ProviderError } from './errors.js';
export type { ProviderErrorCode } from './errors.js';
export { InMemoryReplayStore } from './replay.js';
export { RedisReplayStore } from './redis-replay.js';
export type { RedisSetClient } from './redis-replay.js';
export type { ReplayStore, InMemoryReplayStoreOptions } from './replay.js';
export type {
  RegistryAgent,
  RegistryReader,
  EscrowVerifier,
  EscrowClaimRequest,
  EscrowClaim,
} from './ports.js';
export type { ListeningProvider, ExpressMiddleware, ExpressLikeRequest } from './http.js';
export { parseBodyLimit, MAX_BODY_LIMIT } from './body-limit.js';
export { publicKeyFromSecret, readKeypairFile, ensureKeypairFile } from './keys.js';
export { prepareLocalEnv } from './local-env.js';
export type { LocalEnvOptions } from './local-env.js';
export { createEscrowVerifier } from './escrow-verifier.js';
export type { EscrowVerifierOptions, FareboxEscrowVerifier, EscrowOperations } from './escrow-verifier.js';
export { FileServedEscrowStore, MemoryServedEscrowStore } from './served-store.js';
/** The `exact` facilitator scheme that settles to Farebox's per-service (muxed) addresses, for a facilitator of one's own. */
export { MuxedExactStellarScheme } from './muxed-scheme.js';
export type { ServedEscrowStore, ServedEscrowRecord, ServedEscrowStatus, ServedEscrowUpdate } from './served-store.js';
// Verifying the gateway's signed webhooks (docs/webhooks.md): @farebox/protocol's code, the same in @farebox/client and @farebox/provider.
export {
  verifyWebhook,
  signWebhookPayload,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_HEADERS,
  WEBHOOK_TOLERANCE_SECONDS,
  WEBHOOK_EVENT_TYPES,
} from '@farebox/protocol';
export type { WebhookEvent, WebhookEventType, WebhookRejection, WebhookVerdict, VerifyWebhookOptions } from '@farebox/protocol';
