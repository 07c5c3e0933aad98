// The public surface of @farebox/gateway-core: what a host needs to build,
// serve and operate a gateway (pinned by test/exports.test.ts).
export { createGateway, GATEWAY_MIGRATIONS_DIR } from './gateway.js';
export type { CallOptions, CallService, CreateGatewayOptions, GatewayCore } from './gateway.js';
export type { Clock } from './clock.js';
export { DEFAULT_NETWORK, resolveGatewayConfig } from './config.js';
export type { GatewayConfig, GatewayOptions, NetworkName } from './config.js';
export { errorAnswer, GatewayError, HTTP_STATUS } from './errors.js';
export type { GatewayErrorCode } from './errors.js';
export type { Principal, User } from './auth/accounts.js';
export { safeEqual } from './auth/tokens.js';
export { createApiHandlers } from './api/index.js';
export type { ApiHandler, ApiHandlers, ApiInput, ApiOutput, MountedOperationId } from './api/index.js';
export type { AccountService, MeView, TopupResult, WalletView } from './services/account.js';
export type { CatalogService, RegisteredService } from './services/catalog.js';
export type { BazaarService } from './services/bazaar.js';
export type { AnalyticsDay, PublisherOverview, PublisherService, SettleResult } from './services/publisher.js';
export type { DependencyReport, Health, PlatformKey, PlatformService, PlatformStats, Readiness } from './services/platform.js';
export type { BalanceView, ServiceView, TransactionView, WalletStatus } from './views.js';
export type { CostView, SettlementView } from './settlement/view.js';
export type { ManifestView } from './manifests.js';
export type { TopupView } from './topups.js';
export type { CallAnswer, CallResultBody, CallFailureBody } from './calls.js';
export { callIdOf } from './calls.js';
export { createFacilitator, gatewayFacilitator, MuxedExactStellarScheme, resolveX402Config } from './x402/index.js';
export type { CreateFacilitatorOptions, Facilitator, FacilitatorAnswer, X402ConfigOptions, X402Settings } from './x402/index.js';
export { CHANNEL_HEADER } from './mpp/index.js';
export type {
  AcceptedVoucher,
  ChannelCallAnswer,
  ChannelCalls,
  ChannelSessions,
  ChannelSessionsOptions,
  MppConfigOptions,
  MppRuntime,
  MppSettings,
} from './mpp/index.js';
export { MemoryRateLimitStore, enforceRateLimit } from './security/rate-limit.js';
export type { RateLimitStore, RateLimitRule } from './security/rate-limit.js';
export { RedisRateLimitStore } from './security/redis-rate-limit.js';
export { oauthErrorBody } from './oauth/server.js';
export type { AuthorizationCheck, AuthorizationRequest, ConnectionView, OAuthClient, OAuthOptions, OAuthServer, TokenResponse } from './oauth/server.js';
export type { OAuthScope } from './oauth/scopes.js';
export { MCP_INSTRUCTIONS, registerGatewayMcpTools } from './mcp/tools.js';
export type { McpToolDeps } from './mcp/tools.js';
export { createLogger, flushLogger, legacySink, LOG_LEVELS } from './observability/log.js';
export type { Logger, LoggerOptions, LogLevel } from './observability/log.js';
export { formatLogLine, prettyLines } from './observability/pretty.js';
export type { PrettyLinesOptions } from './observability/pretty.js';
export type { Metrics } from './observability/metrics.js';
export type { DependencyName, DependencyState, DependencyStatus, DependencyTracker } from './observability/dependencies.js';
export { asDatabaseUnavailable } from './db-errors.js';
export type { Settlement, SettlementConfigOptions } from './settlement/index.js';
export { grantOperator, listOperators, revokeOperator, verifyDisputeProof } from './operator/index.js';
export type { Operator, Dispute, OperatorConfigOptions } from './operator/index.js';
