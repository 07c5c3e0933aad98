import { inputs, type OperationId, type Operations } from '@farebox/contract';
import type { z } from 'zod';
import type { Principal } from '../auth/accounts.js';
import type { GatewayCore } from '../gateway-types.js';
import { intParam } from '../views.js';

const { LIST_LIMITS } = inputs;
/** The first `limit` items (`limit` checked by the contract: 1 to `max`); absent, all of them. */
async function first<T>(items: Promise<T[]>, limit: string | undefined, max: number): Promise<T[]> {
  const n = limit === undefined || limit === '' ? undefined : intParam(limit, 'limit', 1, max, max);
  return (await items).slice(0, n);
}

type Part<I, K extends string> = I extends { [P in K]: infer S extends z.ZodType } ? z.output<S> : Record<string, never>;

/**
 * A request as the host hands it over, checked against the operation's
 * schemas of `@farebox/contract`: path parameters, query and headers parsed;
 * the body as sent (JSON), which the core checks with its rules and messages.
 */
export interface ApiInput<K extends OperationId> {
  params: Part<Operations[K]['input'], 'params'>;
  query: Part<Operations[K]['input'], 'query'>;
  headers: Part<Operations[K]['input'], 'headers'>;
  body: unknown;
}

/** What an operation answers: its contract schema (the compiler checks every handler against it). */
export type ApiOutput<K extends OperationId> = z.input<Operations[K]['output']>;

type Bazaar = 'bazaarResources' | 'bazaarSearch' | 'facilitatorBazaarResources' | 'facilitatorBazaarSearch';
type Facilitator = 'x402Supported' | 'x402Verify' | 'x402Settle' | 'x402Refund';
/** The operations a host mounts from the table (sign-in pages, calls, readiness, the x402 bazaar and facilitator have HTTP-specific routes). */
export type MountedOperationId = Exclude<OperationId, 'signup' | 'login' | 'logout' | 'call' | 'ready' | Bazaar | Facilitator>;
type Open = 'platformKey' | 'health' | 'openDispute' | 'disputeStatus' | 'healthFeed' | 'publisherByOwner';

/** A handler: the caller (none for open operations) and the checked input in, a domain object out. */
export type ApiHandler<K extends MountedOperationId> = (
  principal: K extends Open ? Principal | undefined : Principal,
  input: ApiInput<K>,
) => Promise<K extends 'openDispute' ? { created: boolean; value: ApiOutput<K> } : ApiOutput<K>>;

export type ApiHandlers = { [K in MountedOperationId]: ApiHandler<K> };

/**
 * The REST operations over a {@link GatewayCore}: `(principal, input) ->
 * domain object`, never HTTP. The host (apps/gateway) mounts them from the
 * contract's table, which decides method, path, credential, OAuth scope,
 * input checks and the success status.
 */
export function createApiHandlers(core: GatewayCore): ApiHandlers {
  return {
    me: async (p) => ({
      ...(await core.account.me(p.user)),
      credential: { via: p.via, id: p.via === 'session' ? null : p.credentialId, policy: await core.spendingPolicy(p) },
    }),
    balance: async (p) => core.account.balance(p.user),
    wallet: async (p) => core.account.wallet(p.user),
    topup: async (p, i) => core.account.topup(p.user, i.body, i.headers['idempotency-key']),
    transactions: async (p, i) => core.account.transactions(p.user, i.query.limit),

    listAgents: async (_p, i) => {
      const limit = i.query.limit === undefined || i.query.limit === '' ? undefined : intParam(i.query.limit, 'limit', 1, LIST_LIMITS.agents, 50);
      return core.catalog.list(i.query.q, limit);
    },
    agentManifest: async (_p, i) => core.catalog.manifest(i.params.service),
    getAgent: async (_p, i) => core.catalog.get(i.params.service),
    agentHealth: async (_p, i) => core.catalog.healthSeries(i.params.service, i.query.window),
    healthFeed: async () => core.catalog.healthFeed(),
    myAgents: async (p, i) => first(core.catalog.mine(p.user), i.query.limit, LIST_LIMITS.account),
    registerAgent: async (p, i) => core.catalog.register(p.user, i.body),
    updateAgent: async (p, i) => core.catalog.update(p.user, i.params.service, i.body),
    removeAgent: async (p, i) => core.catalog.remove(p.user, i.params.service),

    listApiKeys: async (p, i) => first(core.accounts.listApiKeys(p.user.id), i.query.limit, LIST_LIMITS.account),
    createApiKey: async (p, i) => core.accounts.createApiKey(p.user.id, i.body),
    revokeApiKey: async (p, i) => core.accounts.revokeApiKey(p.user.id, i.params.id),
    updateApiKey: async (p, i) => core.accounts.updateApiKey(p.user.id, i.params.id, i.body),
    listOAuthConnections: async (p, i) => first(core.oauthConnections.list(p.user.id), i.query.limit, LIST_LIMITS.account),
    revokeOAuthConnection: async (p, i) => core.oauthConnections.revoke(p.user.id, i.params.id),
    updateOAuthConnection: async (p, i) => core.oauthConnections.update(p.user.id, i.params.id, i.body),

    activatePublisher: async (p, i) => core.publisher.activate(p.user, i.body),
    publisherOverview: async (p) => core.publisher.overview(p.user),
    publisherSettlements: async (p, i) => core.publisher.settlements(p.user, i.query.limit),
    publisherAnalytics: async (p, i) => core.publisher.analytics(p.user, i.query.days),
    publisherSettle: async (p) => core.publisher.settle(p.user),
    publisherLinkChallenge: async (p, i) => core.publisher.linkChallenge(p.user, i.body),
    linkPublisherOwner: async (p, i) => core.publisher.link(p.user, i.body),
    publisherByOwner: async (_p, i) => core.publisher.byOwner(i.params.owner),

    listWebhooks: async (p, i) => first(core.webhooks.list(p.user.id), i.query.limit, LIST_LIMITS.account),
    createWebhook: async (p, i) => core.webhooks.create(p.user.id, i.body),
    deleteWebhook: async (p, i) => core.webhooks.remove(p.user.id, i.params.id),
    rotateWebhookSecret: async (p, i) => core.webhooks.rotate(p.user.id, i.params.id, i.body),
    pingWebhook: async (p, i) => core.webhooks.ping(p.user.id, i.params.id),
    listWebhookDeliveries: async (p, i) => core.webhooks.deliveries(p.user.id, i.params.id, i.query.limit),
    redeliverWebhook: async (p, i) => core.webhooks.redeliver(p.user.id, i.params.id, i.params.delivery),

    platformStats: async () => core.platform.stats(),
    platformKey: async () => core.platform.key(),
    health: async () => core.platform.health(),

    openDispute: async (_p, i) => {
      const r = await core.operator.openDispute(i.body);
      return { created: r.created, value: r.dispute };
    },
    disputeStatus: async (_p, i) => core.operator.disputeStatus(i.params.escrowId),

    operatorWhoami: async (p) => core.operator.whoami(p.user),
    operatorDisputes: async (p, i) => core.operator.listDisputes(p.user, i.query.state, i.query.limit),
    operatorResolveDispute: async (p, i) => core.operator.resolveDispute(p.user, i.params.escrowId, i.body),
    operatorTreasury: async (p) => core.operator.treasury(p.user),
    operatorSettlements: async (p, i) => core.operator.settlements(p.user, i.query.state, i.query.limit),
    operatorRetrySettlement: async (p, i) => core.operator.retrySettlement(p.user, i.params.id),
    operatorRevenue: async (p, i) => core.operator.revenue(p.user, i.query.days),
    operatorAudit: async (p, i) => core.operator.audit(p.user, i.query.limit),
    operatorReconciliation: async (p) => core.operator.reconciliation(p.user),
  };
}
