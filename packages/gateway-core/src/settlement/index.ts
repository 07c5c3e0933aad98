import { createEscrowClient, type EscrowClient } from '@farebox/escrow';
import { trackCalls, type DependencyTracker } from '../observability/dependencies.js';
import type { Database, Ledger } from '@farebox/ledger';
import { createAccounts as createStellarAccounts, type NetworkConfig, type TxSigner } from '@farebox/stellar';
import { GatewayError } from '../errors.js';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import { resolveSettlementConfig, type SettlementConfigOptions, type SettlementSettings } from './config.js';
import { createSettlementEngine, type SettlementEngine, type SettlementEngineOptions } from './engine.js';
import { createChainProbe, type ChainProbe } from './onchain.js';
import { settlementView } from './view.js';

export interface CreateSettlementOptions {
  ledger: Ledger;
  db: Database;
  network: NetworkConfig;
  treasury: TxSigner;
  /** The gateway's one queue of treasury transactions. */
  treasuryQueue: TreasuryQueue;
  /** Validated once with the rest of the gateway's configuration (`resolveGatewayConfig`). */
  settings: SettlementSettings;
  log(message: string, err?: unknown): void;
  /** Each recorded state change of a cycle (the settlement log lines). */
  onStep?: SettlementEngineOptions['onStep'];
  /** Test hook (crash tests only); see the settlement engine. */
  crashPoint?: (name: string) => void;
  /** The gateway's clock (a cycle's age). */
  now?: SettlementEngineOptions['now'];
  /** Told whether the escrow provider answers (`escrow`: observability/dependencies.ts). */
  dependencies?: DependencyTracker;
}

/** Devnet USDC minted into the treasury when it runs short (local network only). */
const AUTOFUND_CHUNK = 100_000n * 10_000_000n;

/**
 * The gateway's settlement: config, the escrow client, the chain probe and
 * the engine, plus the publisher views. Settlement is off (the settle
 * endpoint answers 503) when no escrow API key is configured off the local
 * network.
 */
export function createSettlement(o: CreateSettlementOptions) {
  const settings = o.settings;
  const probe: ChainProbe = createChainProbe(o.network);
  const client: EscrowClient | undefined = settings.escrowApiKey
    ? createEscrowClient({ baseUrl: settings.escrowUrl, apiKey: settings.escrowApiKey, passphrase: o.network.passphrase, budget: settings.escrowBudget })
    : undefined;
  const escrow = client && o.dependencies ? trackCalls(client, 'escrow', o.dependencies) : client;
  const chain = createStellarAccounts(o.network);

  async function ensureTreasuryFunds(amount: bigint): Promise<void> {
    if (!settings.treasuryAutofund || !o.network.friendbotUrl) return;
    const b = await chain.balances(o.treasury.publicKey);
    if (b.usdc !== null && b.usdc >= amount) return;
    if (!b.exists) await chain.fund(o.treasury.publicKey);
    // In the treasury's turn: the gateway sets the same trustline up as it starts (the second finds it there).
    if (b.usdc === null) await o.treasuryQueue.run('the treasury’s USDC trustline', () => chain.ensureUsdcTrustline(o.treasury));
    const want = amount > AUTOFUND_CHUNK ? amount : AUTOFUND_CHUNK;
    const usdc = `${want / 10_000_000n}.${(want % 10_000_000n).toString().padStart(7, '0')}`;
    const res = await fetch(`${o.network.friendbotUrl}?addr=${encodeURIComponent(o.treasury.publicKey)}&usdc=${usdc}`);
    if (!res.ok) throw new GatewayError('UPSTREAM', `devnet friendbot refused to fund the treasury: ${(await res.text()).slice(0, 200)}`);
  }

  const engine: SettlementEngine | undefined = escrow
    ? createSettlementEngine({
        ledger: o.ledger,
        db: o.db,
        escrow,
        network: o.network,
        treasury: o.treasury,
        treasuryQueue: o.treasuryQueue,
        probe,
        settlementIntervalMs: settings.settlementIntervalMs,
        fundingIntervalMs: settings.fundingIntervalMs,
        ensureTreasuryFunds,
        log: o.log,
        ...(o.onStep ? { onStep: o.onStep } : {}),
        ...(o.crashPoint ? { crashPoint: o.crashPoint } : {}),
        ...(o.now ? { now: o.now } : {}),
      })
    : undefined;

  return {
    settings,
    escrow,
    probe,
    engine,
    ensureTreasuryFunds,
    /** `GET /v1/publisher/settlements`. */
    async list(owner: string, limit: number) {
      return (await o.ledger.listCycles(owner, limit)).map((c) => settlementView(c, o.network));
    },
    /** `POST /v1/publisher/settle`: closes the owner's current cycle and runs it to done. */
    async settle(owner: string) {
      if (!engine) throw new GatewayError('UNAVAILABLE', 'on-chain settlement is not enabled on this gateway (set TRUSTLESS_WORK_API_KEY)');
      const cycle = await engine.settleNow(owner);
      if (!cycle) return { settled: false, message: 'nothing to settle: no earnings since the last settlement', settlement: null };
      if (cycle.state !== 'done') {
        throw new GatewayError(
          'UPSTREAM',
          `settlement of cycle ${cycle.id} stopped in state ${cycle.state}; it resumes automatically${cycle.error ? `: ${cycle.error}` : ''}`,
        );
      }
      return { settled: cycle.calls > 0, settlement: settlementView(cycle, o.network) };
    },
    start() {
      engine?.start();
    },
    stop() {
      return engine?.stop();
    },
  };
}

export type Settlement = ReturnType<typeof createSettlement>;
export { createSettlementEngine, resolveSettlementConfig, settlementView, createChainProbe };
export type { SettlementEngine, SettlementSettings, SettlementConfigOptions };
