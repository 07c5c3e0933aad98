import { schemas } from '@farebox/contract';
import type { HealthStatus } from '@farebox/discovery';
import type { z } from 'zod';

type ServiceHealth = z.output<typeof schemas.ServiceHealth>;

/** A service with no figures in the feed: too few calls to judge. */
const NEW: ServiceHealth = {
  status: 'new',
  windows: {
    '1h': { calls: 0, success_rate: null, p50_ms: null, p95_ms: null },
    '24h': { calls: 0, success_rate: null, p50_ms: null, p95_ms: null },
    '7d': { calls: 0, success_rate: null, p50_ms: null, p95_ms: null },
  },
  last_failure: null,
};

export interface HealthFeedOptions {
  /** The gateway's feed, `<gateway>/discovery/health` (`FAREBOX_HEALTH_FEED_URL`). */
  url: string;
  /** How often it is read, ms (`FAREBOX_HEALTH_FEED_MS`, default 30 000). */
  intervalMs?: number;
  log?: (message: string, err?: unknown) => void;
}

/**
 * The services' health as the gateway publishes it (docs/api.md, "Service
 * health"): read every `intervalMs`, checked against the contract's schema;
 * a read that fails keeps the last good one (and says so in the log). The
 * backend shows it on every service and weighs search by it, as the gateway does.
 */
export function createHealthFeed(o: HealthFeedOptions) {
  let services: Record<string, ServiceHealth> = {};
  let generatedAt: string | null = null;
  let timer: ReturnType<typeof setInterval> | undefined;

  async function refresh(): Promise<void> {
    const res = await fetch(o.url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`the health feed ${o.url} answered ${res.status}`);
    const feed = schemas.HealthFeed.parse(await res.json());
    services = feed.services;
    generatedAt = feed.generated_at;
  }

  return {
    refresh,
    /** The health of `service` (new when the feed does not name it). */
    of: (service: string): ServiceHealth => services[service] ?? NEW,
    /** What search weighs relevance by. */
    ranking: (service: string): { status: HealthStatus; successRate: number | null } => {
      const h = services[service] ?? NEW;
      const judged = h.windows['24h'].calls >= 10 ? h.windows['24h'] : h.windows['7d'];
      return { status: h.status, successRate: judged.success_rate };
    },
    /** When the gateway made the figures last read (null before the first read). */
    generatedAt: () => generatedAt,
    start(): void {
      const read = () => refresh().catch((err) => o.log?.('health feed not read (the last figures stay)', err));
      void read();
      timer = setInterval(read, o.intervalMs ?? 30_000);
      timer.unref();
    },
    stop(): void {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}

export type HealthFeed = ReturnType<typeof createHealthFeed>;
