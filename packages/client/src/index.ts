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
export { createDiscoveryClient } from './discovery.js';
export type { DiscoveryClient, DiscoveryClientOptions, DiscoveryService, DiscoveryHit, DiscoverySearchResult, DiscoveryPage } from './discovery.js';
export { createGatewayClient } from './gateway.js';
export type {
  GatewayClient,
  GatewayClientOptions,
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
  GatewayOAuthConnection,
  GatewayPublisherOverview,
  GatewaySettlement,
  GatewayAnalyticsPoint,
  GatewayPlatformKey,
  GatewayHealth,
} from './gateway.js';
export { ClientError, EndpointVerificationError, GatewayApiError } from './errors.js';
export type { ClientErrorCode, ClientErrorData } from './errors.js';
