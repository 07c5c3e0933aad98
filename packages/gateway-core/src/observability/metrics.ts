import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Where gauges read their values at scrape time (each may fail: the gauge is then left out). */
export interface MetricSources {
  holds(): Promise<{ pending: number; oldestAgeSeconds: number }>;
  settlementCycles(): Promise<Array<{ state: string; count: number }>>;
  treasury(): Promise<{ balance: bigint; owed: bigint } | undefined>;
  mirror(): Promise<{ lagLedgers: number | null; lastSyncAgeSeconds: number | null; failures: number }>;
  /** Registry names the catalog mirror left out (they break the service-name policy). */
  catalogSkipped(): number;
  search(): { mode: string; documents: number; vectors: number };
  pool(): { total: number; idle: number; waiting: number };
  redis(): 'ready' | 'down' | 'none';
}

const SECONDS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The gateway's Prometheus metrics (prom-client), in a registry of its own so
 * that several gateways in one process keep their own series. Counters and
 * histograms are recorded on the request and call paths; gauges are read
 * from the database, the chain and the index when `/metrics` is scraped.
 */
export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry, prefix: 'farebox_process_' });

  const metrics = {
    registry,
    httpRequests: new Counter({
      name: 'farebox_http_requests_total',
      help: 'HTTP requests by route template, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: 'farebox_http_request_duration_seconds',
      help: 'HTTP request duration by route template.',
      labelNames: ['route', 'method'] as const,
      buckets: SECONDS,
      registers,
    }),
    callSteps: new Histogram({
      name: 'farebox_call_step_duration_seconds',
      help: 'Paid call latency per step: hold, service, post, and the whole call (total).',
      labelNames: ['step'] as const,
      buckets: SECONDS,
      registers,
    }),
    calls: new Counter({
      name: 'farebox_calls_total',
      help: 'Paid calls by outcome (ok, refunded, refused) and what paid (credit, wallet, none).',
      labelNames: ['outcome', 'paid_with'] as const,
      registers,
    }),
    reaperVoided: new Counter({
      name: 'farebox_reaper_voided_holds_total',
      help: 'Holds left by a crash or a hung call that the reaper returned to credits.',
      registers,
    }),
    idempotencyReplays: new Counter({
      name: 'farebox_idempotency_replays_total',
      help: 'Requests answered from a stored response (same Idempotency-Key and body).',
      registers,
    }),
    rateLimited: new Counter({
      name: 'farebox_rate_limited_total',
      help: 'Requests refused by a rate limit, by rule.',
      labelNames: ['rule'] as const,
      registers,
    }),
    dependencyUp: new Gauge({
      name: 'farebox_dependency_up',
      help: 'Each dependency this gateway has: 1 usable, 0 down (absent until its first answer or failure).',
      labelNames: ['dependency'] as const,
      registers,
    }),
    dependencyTransitions: new Counter({
      name: 'farebox_dependency_transitions_total',
      help: 'Dependencies going down and coming back, by dependency and new state (down, up).',
      labelNames: ['dependency', 'to'] as const,
      registers,
    }),
    settlementFailures: new Counter({ name: 'farebox_settlement_failures_total', help: 'Settlement steps that failed (retried).', registers }),
    settlementLastFailure: new Gauge({
      name: 'farebox_settlement_last_failure_timestamp_seconds',
      help: 'When a settlement step last failed (0: never since start).',
      registers,
    }),
    walletCreditsAudited: new Counter({
      name: 'farebox_wallet_credits_audited_total',
      help: 'Wallet-backed credits checked against the chain by the wallet-credit audit.',
      registers,
    }),
    walletCreditProblems: new Gauge({
      name: 'farebox_wallet_credit_problems',
      help: 'Wallet-backed credits not backed by exactly one matching on-chain payment to the treasury, as of the last audit pass (each needs an operator).',
      registers,
    }),
    topupsReconciled: new Counter({
      name: 'farebox_topups_reconciled_total',
      help: 'Wallet top-ups settled by reconciliation after a crash or a slow network, by result.',
      labelNames: ['result'] as const,
      registers,
    }),
    x402Reconciled: new Counter({
      name: 'farebox_x402_reconciled_total',
      help: 'x402 exact settlements whose record was interrupted, resolved from the chain by the reconciler, by result (settled, never_settled).',
      labelNames: ['result'] as const,
      registers,
    }),

    /**
     * Registers the gauges read at scrape time. A scrape reads the metrics in
     * registration order, so each reading gauge comes before the gauges it
     * also fills.
     */
    observe(sources: MetricSources): void {
      let oldestHold: Gauge | undefined;
      new Gauge({
        name: 'farebox_holds_pending',
        help: 'Holds placed and not yet posted or voided (calls in flight).',
        registers,
        async collect() {
          const h = await sources.holds().catch(() => undefined);
          if (!h) return;
          this.set(h.pending);
          oldestHold?.set(h.oldestAgeSeconds);
        },
      });
      oldestHold = new Gauge({
        name: 'farebox_holds_oldest_pending_age_seconds',
        help: 'Age of the oldest pending hold (the reaper returns holds past the hold timeout).',
        registers,
      });
      new Gauge({
        name: 'farebox_settlement_cycles',
        help: 'Settlement cycles by state (failed cycles need an operator).',
        labelNames: ['state'] as const,
        registers,
        async collect() {
          this.reset();
          for (const s of await sources.settlementCycles().catch(() => [])) this.set({ state: s.state }, s.count);
        },
      });
      let treasuryOwed: Gauge | undefined;
      new Gauge({
        name: 'farebox_treasury_usdc_base_units',
        help: 'The treasury wallet’s USDC on chain (base units).',
        registers,
        async collect() {
          const t = await sources.treasury().catch(() => undefined);
          if (!t) return;
          this.set(Number(t.balance));
          treasuryOwed?.set(Number(t.owed));
        },
      });
      treasuryOwed = new Gauge({
        name: 'farebox_treasury_owed_base_units',
        help: 'What the treasury owes: outstanding credits plus unpaid earnings (USDC base units).',
        registers,
      });
      let mirrorAge: Gauge | undefined;
      let mirrorFailures: Gauge | undefined;
      new Gauge({
        name: 'farebox_catalog_lag_ledgers',
        help: 'Ledgers the catalog mirror is behind the network.',
        registers,
        async collect() {
          const m = await sources.mirror().catch(() => undefined);
          if (!m) return;
          if (m.lagLedgers !== null) this.set(m.lagLedgers);
          if (m.lastSyncAgeSeconds !== null) mirrorAge?.set(m.lastSyncAgeSeconds);
          mirrorFailures?.set(m.failures);
        },
      });
      mirrorAge = new Gauge({
        name: 'farebox_catalog_last_sync_age_seconds',
        help: 'Seconds since the catalog mirror last read the registry successfully.',
        registers,
      });
      mirrorFailures = new Gauge({ name: 'farebox_catalog_sync_failures', help: 'Catalog syncs failed in a row.', registers });
      new Gauge({
        name: 'farebox_catalog_skipped_services',
        help: 'Registry names the catalog left out since start because they break the service-name policy.',
        registers,
        collect() {
          this.set(sources.catalogSkipped());
        },
      });
      let searchDocs: Gauge | undefined;
      let searchVectors: Gauge | undefined;
      new Gauge({
        name: 'farebox_search_mode',
        help: 'Search mode: 1 on the current one (hybrid, or keyword-only without the model).',
        labelNames: ['mode'] as const,
        registers,
        collect() {
          const s = sources.search();
          this.reset();
          this.set({ mode: s.mode }, 1);
          searchDocs?.set(s.documents);
          searchVectors?.set(s.vectors);
        },
      });
      searchDocs = new Gauge({ name: 'farebox_search_documents', help: 'Services in the search index.', registers });
      searchVectors = new Gauge({ name: 'farebox_search_vectors', help: 'Services with an embedding in the search index.', registers });
      new Gauge({
        name: 'farebox_db_pool_connections',
        help: 'Database pool connections: total, idle, and requests waiting for one.',
        labelNames: ['state'] as const,
        registers,
        collect() {
          const p = sources.pool();
          this.set({ state: 'total' }, p.total);
          this.set({ state: 'idle' }, p.idle);
          this.set({ state: 'waiting' }, p.waiting);
        },
      });
      new Gauge({
        name: 'farebox_redis_up',
        help: 'Redis connection: 1 ready, 0 down (absent when no Redis is configured).',
        registers,
        collect() {
          const r = sources.redis();
          if (r === 'none') return;
          this.set(r === 'ready' ? 1 : 0);
        },
      });
    },
  };
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;

/** The call steps a histogram keeps, from the trace's step names. */
export const CALL_STEP_METRIC: Readonly<Record<string, string>> = { hold_credits: 'hold', call_service: 'service', post_payment: 'post' };
