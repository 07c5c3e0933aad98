import { inputs } from '@farebox/contract';
import { isValidServiceName, serviceNameProblem } from '@farebox/protocol';
import type { CatalogAttachment, SearchIndex, SearchMode } from '@farebox/discovery';
import type { Ledger } from '@farebox/ledger';
import type { CatalogMirror, NetworkConfig, RegistryAgent, RegistryClient } from '@farebox/stellar';
import { walletSigner, type LocalKeystore } from '@farebox/wallets';
import type { User } from '../auth/accounts.js';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import { translated } from '../ledger-errors.js';
import type { ManifestView } from '../manifests.js';
import { checkEndpoint, type EndpointPolicy } from '../security/endpoint-guard.js';
import { serviceRails, serviceView, type PaymentRail, type ServiceView } from '../views.js';
import type { WalletProvisioning } from '../wallet-provisioning.js';
import { parse, priceOfBody } from './input.js';
import { requirePublisher } from './publisher-rule.js';

/** A registry change this gateway made, with its transaction. */
import type { SearchBackend } from '../search-backend.js';
import type { HealthPoint, ServiceHealth, ServiceHealthRecorder } from '../health/index.js';
import { directPayments, HEALTH_MIN_CALLS, rankByHealth } from '@farebox/discovery';

/** The answered share the status judged (24 hours, or 7 days while the day has too few calls). */
const judgedRate = (h: ServiceHealth) => (h.windows['24h'].calls >= HEALTH_MIN_CALLS ? h.windows['24h'] : h.windows['7d']).success_rate;

export type RegisteredService = ServiceView & { txHash: string; explorerUrl: string };

/** The catalog: what is callable, and a publisher's own services on the registry. */
export interface CatalogService {
  /** Every service (newest first), or the search hits for `q` with their score; at most `limit` (default: all, or 50 hits). */
  list(q?: string, limit?: number): Promise<Array<ServiceView & { score?: number; search_mode?: SearchMode }>>;
  /** One service, with its health (404 when the catalog does not list it). */
  get(name: string): Promise<ServiceView>;
  /** A service's health over 24 hours (per hour) or 7 days (per 6 hours), for a chart. */
  healthSeries(name: string, window: string | undefined): Promise<{ service: string; window: '24h' | '7d'; health: ServiceHealth; points: HealthPoint[] }>;
  /** Every service's health (the feed the discovery backend reads). */
  healthFeed(): { generated_at: string; services: Record<string, ServiceHealth> };
  /** What the service says about its price (its pricing note), checked against the registry. */
  manifest(name: string): Promise<ManifestView>;
  /** The services the user registered through this gateway and still owns. */
  mine(user: User): Promise<ServiceView[]>;
  /** The catalog's services registered under an owner key (a linked key's, or any owner's for the by-owner view). */
  ownedBy(owner: string): Promise<ServiceView[]>;
  register(user: User, body: unknown): Promise<RegisteredService>;
  update(user: User, service: string, body: unknown): Promise<RegisteredService>;
  remove(user: User, service: string): Promise<{ service: string; removed: true; txHash: string; explorerUrl: string }>;
}

// The request bodies are the contract's (@farebox/contract): one definition, with the spec's messages.
const RegisterSchema = inputs.RegisterServiceBody;
const UpdateSchema = inputs.UpdateServiceBody;

export interface CatalogServiceDeps {
  db: Db;
  ledger: Ledger;
  network: NetworkConfig;
  registry: RegistryClient;
  mirror: CatalogMirror;
  searchIndex: SearchIndex;
  searchBackend: SearchBackend;
  /** The search index's link to the mirror, once started. */
  attachment: () => CatalogAttachment<RegistryAgent> | undefined;
  manifests: {
    get(agent: { service: string; owner: string; endpoint: string }): Promise<ManifestView>;
    /** The cached manifest (nothing fetched): its `payments` say which x402 schemes the service takes itself. */
    peek(agent: { service: string; owner: string; endpoint: string }): { view: ManifestView } | undefined;
  };
  /** The platform treasury (an `x402-exact` rail needs one, as the bazaar's `exact` offer does). */
  treasuryAddress: string;
  /** Whether this gateway takes MPP channel sessions (`mpp-channel` on every service). */
  mppChannels: boolean;
  wallets: LocalKeystore;
  provisioning: WalletProvisioning;
  policy: EndpointPolicy;
  /** The services' health as every gateway counted their paid calls (health/index.ts). */
  health: Pick<ServiceHealthRecorder, 'of' | 'all' | 'series'>;
  now: () => number;
}

export function createCatalogService(d: CatalogServiceDeps): CatalogService {
  const { db, mirror, registry, network } = d;

  /** A service's rails: the bazaar's rule for the direct ones, from the manifest this gateway has read (docs/api.md, "Payment rails"). */
  const railsOf = (a: RegistryAgent): PaymentRail[] =>
    serviceRails(directPayments({ network, treasury: d.treasuryAddress }, d.manifests.peek(a)?.view), d.mppChannels);
  const view = (a: RegistryAgent, stats?: { calls: number; earned: bigint }) => serviceView(a, d.health.of(a.service), railsOf(a), stats);

  async function serviceStatsByName(): Promise<Map<string, { calls: number; earned: bigint }>> {
    const owners = [...new Set(mirror.list().map((a) => a.owner))];
    const out = new Map<string, { calls: number; earned: bigint }>();
    for (const owner of owners) {
      for (const s of await d.ledger.serviceStats(owner)) out.set(`${owner}\u0000${s.service}`, { calls: s.calls, earned: s.earned });
    }
    return out;
  }

  /** A service of the catalog by name (one whose name breaks the policy is not listed), or 404. */
  async function listed(name: string): Promise<RegistryAgent> {
    const agent = isValidServiceName(name) ? (mirror.get(name) ?? (await registry.getAgent(name).catch(() => null))) : null;
    if (!agent) throw new GatewayError('NOT_FOUND', 'service not found');
    return agent;
  }

  async function ownedAgent(user: User, service: string): Promise<RegistryAgent> {
    const { rows } = await db.query<{ service: string }>('SELECT service FROM gw_services WHERE service = $1 AND user_id = $2 AND removed_at IS NULL', [
      service,
      user.id,
    ]);
    // A name this account never registered is only looked up on chain when it could be a service.
    const agent = rows[0] || isValidServiceName(service) ? await translated(() => registry.getAgent(service)) : null;
    if (!agent) throw new GatewayError('NOT_FOUND', 'service not found');
    // Someone else's service (another account's, or one published with its own key): said so, without naming the owner.
    if (agent.owner !== user.walletAddress) throw new GatewayError('FORBIDDEN', `service ${service} belongs to another publisher`);
    if (!rows[0]) throw new GatewayError('NOT_FOUND', 'service not found');
    return agent;
  }

  /** Confirms a service this gateway just changed on chain and waits until search shows the change. */
  async function confirmed(service: string): Promise<RegistryAgent | undefined> {
    const agent = await translated(() => mirror.confirm(service));
    await d.attachment()?.idle();
    return agent;
  }

  return {
    async list(q, limit) {
      const stats = await serviceStatsByName();
      const viewOf = (a: RegistryAgent) => view(a, stats.get(`${a.owner}\u0000${a.service}`));
      if (q === undefined || q.trim() === '')
        return mirror
          .list()
          .sort((a, b) => b.createdAt - a.createdAt || a.service.localeCompare(b.service))
          .slice(0, limit)
          .map(viewOf);
      if (q.length > 512) throw new GatewayError('BAD_REQUEST', 'query too long (max 512)');
      const { mode, hits } = await d.searchBackend.search(q, limit ?? 50);
      const found = hits.flatMap((h) => {
        // A discovery backend may know a registration this gateway's mirror has not read yet (never one whose name breaks the policy).
        const agent = mirror.get(h.id) ?? h.agent;
        // Each hit says which ranking served the search: `keyword` while no embedding model is loaded.
        return agent && isValidServiceName(agent.service) ? [{ ...viewOf(agent), score: h.score, search_mode: mode }] : [];
      });
      // Relevance weighed by health: a service failing most calls sinks below a working one (docs/search.md, "Health").
      return rankByHealth(found, (s) => ({ status: s.health.status, successRate: judgedRate(s.health) })).map((s) => ({
        ...s,
        score: Math.round(s.score * 1e4) / 1e4,
      }));
    },
    async get(name) {
      const agent = await listed(name);
      const stats = await d.ledger.serviceStats(agent.owner);
      const mine = stats.find((x) => x.service === agent.service);
      return view(agent, mine ? { calls: mine.calls, earned: mine.earned } : undefined);
    },
    async healthSeries(name, window) {
      const w = window === undefined || window === '' ? '24h' : window;
      if (w !== '24h' && w !== '7d') throw new GatewayError('BAD_REQUEST', 'window must be 24h or 7d');
      const agent = await listed(name);
      return { service: agent.service, window: w, health: d.health.of(agent.service), points: await d.health.series(agent.service, w) };
    },
    healthFeed() {
      const listedNames = new Set(mirror.list().map((a) => a.service));
      const services: Record<string, ServiceHealth> = {};
      for (const [name, h] of d.health.all()) if (listedNames.has(name)) services[name] = h;
      return { generated_at: new Date(d.now()).toISOString(), services };
    },
    async manifest(name) {
      // A registry name that breaks the name policy is not shown, even when it is on chain.
      if (!isValidServiceName(name)) throw new GatewayError('NOT_FOUND', 'service not found');
      const agent = mirror.get(name) ?? (await registry.getAgent(name).catch(() => null));
      if (!agent) throw new GatewayError('NOT_FOUND', 'service not found');
      return d.manifests.get({ service: agent.service, owner: agent.owner, endpoint: agent.endpoint });
    },
    async mine(user) {
      const { rows } = await db.query<{ service: string }>(
        'SELECT service FROM gw_services WHERE user_id = $1 AND removed_at IS NULL ORDER BY created_at DESC',
        [user.id],
      );
      const stats = await serviceStatsByName();
      const out: ServiceView[] = [];
      for (const { service } of rows) {
        const agent = mirror.get(service) ?? (await registry.getAgent(service).catch(() => null));
        if (agent && agent.owner === user.walletAddress) out.push(view(agent, stats.get(`${agent.owner}\u0000${agent.service}`)));
      }
      return out;
    },
    async ownedBy(owner) {
      const stats = new Map((await d.ledger.serviceStats(owner)).map((x) => [x.service, x]));
      return mirror
        .list()
        .filter((a) => a.owner === owner && isValidServiceName(a.service))
        .map((a) => view(a, stats.get(a.service)));
    },
    async register(user, body) {
      requirePublisher(user);
      const input = parse(RegisterSchema, body);
      const price = priceOfBody(input)!;
      await checkEndpoint(input.endpoint, d.policy);
      await translated(() => d.provisioning.ensure(user.walletAddress, user.id));
      const { txHash } = await translated(() =>
        registry.register(walletSigner(d.wallets, user.walletAddress), {
          service: input.service,
          pricePerCall: price,
          endpoint: input.endpoint,
          description: input.description,
        }),
      );
      await db.query(
        `INSERT INTO gw_services (service, user_id, owner_wallet, tx_hash) VALUES ($1, $2, $3, $4)
         ON CONFLICT (service) DO UPDATE SET user_id = EXCLUDED.user_id, owner_wallet = EXCLUDED.owner_wallet, tx_hash = EXCLUDED.tx_hash, created_at = now(), removed_at = NULL`,
        [input.service, user.id, user.walletAddress, txHash],
      );
      // Searchable on this gateway as soon as the answer returns; the chain event confirms it again later.
      const agent = await confirmed(input.service);
      if (!agent) throw new GatewayError('UPSTREAM', 'registration not visible on chain yet');
      return { ...view(agent), txHash, explorerUrl: network.explorer.tx(txHash) };
    },
    async update(user, service, body) {
      requirePublisher(user);
      const input = parse(UpdateSchema, body);
      const price = priceOfBody(input);
      if (price === undefined && input.endpoint === undefined && input.description === undefined) {
        throw new GatewayError('BAD_REQUEST', 'nothing to update (price, pricePerCallLamports, endpoint or description)');
      }
      // A name registered before the name policy is never listed or called again: it can be removed, not changed (nothing is written).
      const nameProblem = serviceNameProblem(service);
      if (nameProblem) throw new GatewayError('BAD_REQUEST', `${nameProblem} (this service can only be removed)`);
      await ownedAgent(user, service);
      if (input.endpoint !== undefined) await checkEndpoint(input.endpoint, d.policy);
      const { txHash } = await translated(() =>
        registry.update(walletSigner(d.wallets, user.walletAddress), service, {
          ...(price !== undefined ? { pricePerCall: price } : {}),
          ...(input.endpoint !== undefined ? { endpoint: input.endpoint } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
        }),
      );
      const agent = await confirmed(service);
      if (!agent) throw new GatewayError('NOT_FOUND', 'service not found');
      return { ...view(agent), txHash, explorerUrl: network.explorer.tx(txHash) };
    },
    async remove(user, service) {
      requirePublisher(user);
      await ownedAgent(user, service);
      const { txHash } = await translated(() => registry.deregister(walletSigner(d.wallets, user.walletAddress), service));
      await db.query('UPDATE gw_services SET removed_at = now() WHERE service = $1 AND user_id = $2', [service, user.id]);
      await confirmed(service).catch(() => undefined);
      return { service, removed: true, txHash, explorerUrl: network.explorer.tx(txHash) };
    },
  };
}
