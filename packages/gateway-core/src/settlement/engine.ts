import { PLATFORM_FEE_PCT, splitFee } from '@farebox/protocol';
import type { Ledger, SettlementCycle, CycleState } from '@farebox/ledger';
import type { EscrowClient } from '@farebox/escrow';
import type { NetworkConfig, TxSigner } from '@farebox/stellar';
import type { Database } from '@farebox/ledger';
import { systemClock, type Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { TreasuryQueue } from '../runtime/treasury-queue.js';
import { createCycleLocks } from './lock.js';
import { createStepRunner, type ChainProbe, type PendingTx } from './onchain.js';

export interface SettlementEngineOptions {
  ledger: Ledger;
  db: Database;
  escrow: EscrowClient;
  network: NetworkConfig;
  /** The platform treasury: funds the escrows, takes the fee, and holds every platform role. */
  treasury: TxSigner;
  /** The gateway's one queue of treasury transactions (shared with the operator's tools, refunds, account creation). */
  treasuryQueue: TreasuryQueue;
  probe: ChainProbe;
  /** A cycle older than this is closed and settled by the next tick (`FAREBOX_SETTLEMENT_INTERVAL`). */
  settlementIntervalMs: number;
  /** How often new earnings are claimed and funded (`FAREBOX_FUNDING_INTERVAL`). */
  fundingIntervalMs: number;
  /** Makes sure the treasury holds `amount` USDC before funding (devnet: mints it). */
  ensureTreasuryFunds?(amount: bigint): Promise<void>;
  log?(message: string, err?: unknown): void;
  /** Each state change of a cycle, once it is recorded (the settlement log lines). */
  onStep?(step: { cycleId: string; owner: string; from: CycleState; to: CycleState; txHash?: string }): void;
  /**
   * Test hook, given by the crash tests only: called at each named point,
   * where a test stops the process: `signed:<step>` (intent persisted, not
   * submitted), `submitted:<step>` (applied on chain, not yet recorded),
   * `recorded:<deploy|fund|funded|release>`; `<step>` is deploy, fund:<id>,
   * complete, approve, release, sweep.
   */
  crashPoint?: (name: string) => void;
  /** The gateway's clock (default `Date.now`): a cycle's age against the settlement interval. */
  now?: Clock;
}

/** Steps whose transactions the settlements view lists, in order. */
const TX_STEPS = ['deploy', 'complete', 'approve', 'release', 'sweep'] as const;

/**
 * Batched settlement: one single-release escrow per publisher owner and
 * cycle, deployed when the cycle first needs funding, funded by the treasury
 * in batches (one transaction per batch, never per call), released at the
 * end of the cycle (the escrow applies the 5% fee) and checked to be empty.
 * Every on-chain step follows the exactly-once rule of `onchain.ts`; a cycle
 * is worked by one settler at a time (per-cycle lock).
 */
export function createSettlementEngine(o: SettlementEngineOptions) {
  const { ledger, escrow, network, treasury } = o;
  const log = o.log ?? (() => undefined);
  const now = o.now ?? systemClock;
  const locks = createCycleLocks(o.db, now);
  const crashPoint = o.crashPoint ?? (() => undefined);
  const execute = createStepRunner({ escrow, probe: o.probe, passphrase: network.passphrase, crashPoint, now });
  /** `ledger.advance`, reporting each applied state change. */
  const advance: typeof ledger.advance = async (cycleId, from, to, data) => {
    const r = await ledger.advance(cycleId, from, to, data);
    if (r.applied) o.onStep?.({ cycleId, owner: r.cycle.publisherOwner, from, to, ...(data?.txHash ? { txHash: data.txHash } : {}) });
    return r;
  };
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  let stopped = false;

  const pendingOf = (c: SettlementCycle): PendingTx | undefined => {
    const p = c.data.pending as PendingTx | null | undefined;
    return p && typeof p === 'object' && typeof p.hash === 'string' ? p : undefined;
  };
  const txOf = (c: SettlementCycle, step: string): string | undefined => {
    const v = c.data[`${step}Tx`];
    return typeof v === 'string' ? v : undefined;
  };

  async function onChain(cycle: SettlementCycle, step: string, build: () => Promise<string>) {
    // Every treasury transaction takes the next sequence number: in the treasury's turn, across gateways.
    return o.treasuryQueue.run(`settlement cycle ${cycle.id}: ${step}`, () =>
      execute({
        step,
        pending: pendingOf(cycle),
        build,
        signer: treasury,
        persist: async (pending) => {
          await ledger.recordCycleData(cycle.id, { data: { pending } });
        },
      }),
    );
  }

  async function deploy(c: SettlementCycle): Promise<SettlementCycle> {
    if (c.escrowId) return c;
    const out = await onChain(c, 'deploy', () =>
      escrow.deploySingleRelease({
        signer: treasury.publicKey,
        engagementId: `farebox-cycle-${c.id}`,
        title: `Farebox settlement, cycle ${c.id}`,
        description: `Earnings of ${c.publisherOwner} for gateway calls in settlement cycle ${c.id}`,
        roles: {
          approver: treasury.publicKey,
          serviceProvider: treasury.publicKey,
          releaseSigner: treasury.publicKey,
          disputeResolver: treasury.publicKey,
          platformAddress: treasury.publicKey,
          receiver: c.publisherOwner,
        },
        amount: c.gross > 0n ? c.gross : 1n,
        platformFee: PLATFORM_FEE_PCT,
        milestones: [{ description: `calls of settlement cycle ${c.id}` }],
        trustline: { address: network.usdc.contractId, symbol: 'USDC', decimals: 7 },
      }),
    );
    if (!out.contractId) throw new GatewayError('UPSTREAM', `deploy of cycle ${c.id}: the escrow id could not be read from transaction ${out.hash}`);
    const next = await ledger.recordCycleData(c.id, { escrowId: out.contractId, data: { deployTx: out.hash, pending: null } });
    crashPoint('recorded:deploy');
    return next;
  }

  /** Funds every prepared batch, then batches and funds what is claimed and unfunded. */
  async function fundAll(c: SettlementCycle): Promise<SettlementCycle> {
    let cycle = c;
    for (;;) {
      let batch = cycle.batches.find((b) => b.state === 'prepared');
      if (!batch) {
        if (cycle.unfunded <= 0n) return cycle;
        batch = (await ledger.prepareFunding(cycle.id)) ?? undefined;
        if (!batch) return cycle;
      }
      await o.ensureTreasuryFunds?.(batch.amount);
      const b = batch;
      const out = await onChain(cycle, `fund:${b.id}`, () => escrow.fundEscrow({ contractId: cycle.escrowId!, signer: treasury.publicKey, amount: b.amount }));
      await ledger.confirmFunding(b.id, { txHash: out.hash, explorerUrl: network.explorer.tx(out.hash) });
      crashPoint('recorded:fund');
      cycle = await ledger.recordCycleData(cycle.id, { data: { pending: null } });
    }
  }

  /**
   * Claims the owner's new earnings into the open cycle, as a funding batch
   * of their own (one statement), and funds them (one transaction per batch).
   */
  async function fundOpen(c: SettlementCycle): Promise<SettlementCycle> {
    await ledger.claimEarnings(c.id, { batch: true });
    let cycle = await ledger.getCycle(c.id);
    if (cycle.unfunded <= 0n && !cycle.batches.some((b) => b.state === 'prepared')) return cycle;
    cycle = await deploy(cycle);
    return fundAll(cycle);
  }

  /** Drives a closed cycle to `done` (or leaves it where an error stopped it, to resume). */
  async function drive(start: SettlementCycle): Promise<SettlementCycle> {
    let c = start;
    for (let guard = 0; guard < 20; guard++) {
      switch (c.state) {
        case 'open':
          await fundOpen(c);
          c = (await advance(c.id, 'open', 'closing')).cycle;
          break;
        case 'closing': {
          await ledger.claimEarnings(c.id, { batch: true });
          c = await ledger.getCycle(c.id);
          if (c.calls === 0) {
            c = (await advance(c.id, 'closing', 'done')).cycle;
            break;
          }
          c = await deploy(c);
          const deployTx = txOf(c, 'deploy');
          c = (
            await advance(c.id, 'closing', 'deployed', {
              escrowId: c.escrowId!,
              ...(deployTx ? { txHash: deployTx, explorerUrl: network.explorer.tx(deployTx) } : {}),
            })
          ).cycle;
          break;
        }
        case 'deployed':
          c = await fundAll(c);
          c = (await advance(c.id, 'deployed', 'funded')).cycle;
          crashPoint('recorded:funded');
          break;
        case 'funded': {
          const id = c.escrowId!;
          if (!txOf(c, 'complete')) {
            const out = await onChain(c, 'complete', () =>
              escrow.changeMilestoneStatus({
                contractId: id,
                milestoneIndex: '0',
                newStatus: 'completed',
                newEvidence: `cycle ${c.id}: ${c.calls} calls`,
                serviceProvider: treasury.publicKey,
              }),
            );
            c = await ledger.recordCycleData(c.id, { data: { completeTx: out.hash, pending: null } });
          }
          if (!txOf(c, 'approve')) {
            const out = await onChain(c, 'approve', () => escrow.approveMilestone({ contractId: id, milestoneIndex: '0', approver: treasury.publicKey }));
            c = await ledger.recordCycleData(c.id, { data: { approveTx: out.hash, pending: null } });
          }
          const out = await onChain(c, 'release', () => escrow.releaseFunds({ contractId: id, releaseSigner: treasury.publicKey }));
          const { fee, net } = splitFee(c.funded);
          c = (
            await advance(c.id, 'funded', 'released', {
              txHash: out.hash,
              explorerUrl: network.explorer.tx(out.hash),
              data: {
                releaseTx: out.hash,
                pending: null,
                payout: { gross: c.funded.toString(), fee: fee.toString(), net: net.toString(), receiver: c.publisherOwner },
              },
            })
          ).cycle;
          crashPoint('recorded:release');
          break;
        }
        case 'released': {
          // The payout is confirmed on chain: the escrow is released and empty.
          const [state] = await escrow.getEscrows([c.escrowId!]);
          if (!state) throw new GatewayError('UPSTREAM', `escrow ${c.escrowId} of cycle ${c.id} not found at the escrow provider`);
          if (!state.flags.released) throw new GatewayError('UPSTREAM', `escrow ${c.escrowId} of cycle ${c.id} is not released on chain`);
          let sweepTx: string | undefined;
          if (state.balance > 0n) {
            // Cannot happen through this engine (funding ends before release); recovered to the treasury if it does.
            const out = await onChain(c, 'sweep', () => escrow.withdrawRemainingFunds({ contractId: c.escrowId!, disputeResolver: treasury.publicKey }));
            sweepTx = out.hash;
          }
          const releaseTx = txOf(c, 'release');
          const confirm = sweepTx ?? releaseTx;
          c = (
            await advance(c.id, 'released', 'swept', {
              ...(confirm ? { txHash: confirm, explorerUrl: network.explorer.tx(confirm) } : {}),
              data: {
                ...(sweepTx ? { sweepTx, swept: state.balance.toString() } : {}),
                verified: { escrowBalance: '0', released: true, at: new Date(now()).toISOString() },
                pending: null,
              },
            })
          ).cycle;
          break;
        }
        case 'swept':
          c = (await advance(c.id, 'swept', 'done')).cycle;
          break;
        case 'done':
        case 'failed':
          return c;
      }
    }
    return c;
  }

  async function onCycle<T>(cycleId: string, fn: () => Promise<T>, waitMs = 0): Promise<T | undefined> {
    const r = await locks.withLock(`cycle:${cycleId}`, fn, { waitMs });
    return r.ran ? r.value : undefined;
  }

  /** One pass: fund open cycles, settle those past the interval, resume interrupted ones. */
  async function tick(): Promise<void> {
    for (const owner of await ledger.unsettledOwners()) {
      await ledger.openCycle(owner).catch((err) => log(`opening a cycle for ${owner} failed`, err));
    }
    for (const cycle of await ledger.activeCycles()) {
      if (stopped) return;
      try {
        await onCycle(cycle.id, async () => {
          const c = await ledger.getCycle(cycle.id);
          if (c.state === 'open' && now() - c.openedAt.getTime() < o.settlementIntervalMs) await fundOpen(c);
          else await drive(c);
        });
      } catch (err) {
        log(`settlement of cycle ${cycle.id} (${cycle.publisherOwner}) stopped; it resumes on the next tick`, err);
      }
    }
  }

  function runTick(): Promise<void> {
    ticking ??= tick().finally(() => {
      ticking = undefined;
    });
    return ticking;
  }

  return {
    tick: runTick,

    /** Closes the owner's current cycle now and runs it to `done`; returns it (null when there was nothing to settle). */
    async settleNow(owner: string): Promise<SettlementCycle | null> {
      const hasNew = (await ledger.unsettledOwners(100_000)).includes(owner);
      const active = (await ledger.activeCycles()).filter((c) => c.publisherOwner === owner);
      const open = active.find((c) => c.state === 'open') ?? (hasNew ? await ledger.openCycle(owner) : undefined);
      const todo = [...active.filter((c) => c.state !== 'open'), ...(open ? [open] : [])];
      if (todo.length === 0) return null;
      let last: SettlementCycle | null = null;
      for (const c of todo) {
        const done = await onCycle(c.id, async () => drive(await ledger.getCycle(c.id)), 60_000);
        last = done ?? (await ledger.getCycle(c.id));
      }
      return last;
    },

    start() {
      if (timer) return;
      stopped = false;
      timer = setInterval(() => void runTick().catch((err) => log('settlement tick failed', err)), o.fundingIntervalMs);
      timer.unref();
    },

    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await ticking?.catch(() => undefined);
    },

    txSteps: TX_STEPS,
  };
}

export type SettlementEngine = ReturnType<typeof createSettlementEngine>;
