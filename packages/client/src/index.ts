export { createClient } from './direct.js';
export type {
  FareboxClient,
  ClientOptions,
  CallOptions,
  ServiceTarget,
  ServiceRegistry,
  DirectCallStep,
  DirectCallResult,
  ProgressEvent,
  TraceStep,
  DisputeResult,
} from './direct.js';
export type { AuthEntrySigner } from './direct/exact.js';
export { createDiscoveryClient } from './discovery.js';
export type { DiscoveryClient, DiscoveryClientOptions, DiscoveryService, DiscoveryHit, DiscoverySearchResult, DiscoveryPage } from './discovery.js';
export { createGatewayClient } from './gateway.js';
export type {
  GatewayClient,
  GatewayClientOptions,
  GatewayCallOptions,
  RegisterServiceInput,
  UpdateServiceInput,
  GatewayAccount,
  GatewayBalance,
  GatewayTopupResult,
  GatewayWalletStatus,
  GatewayWallet,
  GatewayService,
  GatewayRegisteredService,
  GatewayCallResult,
  GatewayTransaction,
  GatewayApiKey,
  GatewayCreatedApiKey,
  GatewaySpendingPolicyInput,
  GatewayApiKeyKind,
  GatewayOAuthConnection,
  GatewayOAuthConnectionUpdate,
  GatewayPublisherOverview,
  GatewaySettlement,
  GatewayAnalyticsPoint,
  GatewayPlatformKey,
  GatewayHealth,
  GatewayRemovedService,
  GatewayServiceManifest,
  GatewayServiceHealth,
  GatewayServiceHealthSeries,
  GatewayRevoked,
  GatewayPublisherActivation,
  GatewaySettleResult,
  GatewayPlatformStats,
  GatewayDispute,
  GatewayTreasury,
  GatewayReconciliation,
  GatewayOperatorSettlement,
  GatewaySettlementRetry,
  GatewayRevenue,
  GatewayAuditEntry,
  GatewayRequest,
  GatewayResponse,
  DisputeDecision,
  GatewayWebhook,
  GatewayCreatedWebhook,
  GatewayWebhookDelivery,
  GatewayWebhookEventType,
} from './gateway.js';
export { ClientError, EndpointVerificationError, GatewayApiError } from './errors.js';
export type { ClientErrorCode, ClientErrorData, SpendingLimitRefusal } from './errors.js';
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
export { createChannelPayer } from './channel.js';
export type { ChannelPayer, ChannelPayerOptions, ChannelCallResult, ChannelCallOptions, ChannelCounter } from './channel.js';
