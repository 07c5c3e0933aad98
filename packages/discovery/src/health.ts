/**
 * Ranking that prefers what works (docs/search.md, "Health"): a service's
 * health, as the gateway measures its paid calls, weighs its relevance. The
 * factor is 1 for a service that answers at least `HEALTH_OK_RATE` of its
 * calls and for a `new` one (too few calls to judge: neither punished nor
 * boosted), so relevance alone still orders healthy services; below that it
 * is the share of calls answered (never under `HEALTH_FLOOR`), so a service
 * that fails most calls sinks below a working one of similar relevance. The
 * fused score is monotonic in both relevance and the answered share.
 */

/** `ok`, `degraded` (answers most calls, not all), `failing` (fails most), `new` (too few calls to judge). */
export type HealthStatus = 'ok' | 'degraded' | 'failing' | 'new';

/** The fewest calls in a window for its figures to judge a service. */
export const HEALTH_MIN_CALLS = 10;
/** A service answering at least this share of its calls is `ok` (and ranked on relevance alone). */
export const HEALTH_OK_RATE = 0.95;
/** Below this share, `failing`. */
export const HEALTH_FAILING_RATE = 0.5;
/** The smallest factor health gives relevance (a service failing every call keeps a tenth of its relevance). */
export const HEALTH_FLOOR = 0.1;

/** The status of `calls` calls of which the share `successRate` was answered. */
export function healthStatus(calls: number, successRate: number | null): HealthStatus {
  if (calls < HEALTH_MIN_CALLS || successRate === null) return 'new';
  if (successRate >= HEALTH_OK_RATE) return 'ok';
  return successRate >= HEALTH_FAILING_RATE ? 'degraded' : 'failing';
}

/** What health multiplies relevance by: 1 when healthy or new, else the answered share (at least HEALTH_FLOOR). */
export function healthFactor(health: { status: HealthStatus; successRate: number | null } | undefined): number {
  if (!health || health.status === 'new' || health.status === 'ok' || health.successRate === null) return 1;
  return Math.max(HEALTH_FLOOR, Math.min(1, health.successRate));
}

/**
 * Search hits ordered by relevance weighed by health (`healthOf` a hit's
 * health, undefined: new). Each hit's `score` becomes the fused score; ties
 * keep the relevance order. Stable and monotonic.
 */
export function rankByHealth<H extends { score: number }>(
  hits: readonly H[],
  healthOf: (hit: H) => { status: HealthStatus; successRate: number | null } | undefined,
): H[] {
  return hits
    .map((h, i) => ({ h: { ...h, score: h.score * healthFactor(healthOf(h)) }, i }))
    .sort((a, b) => b.h.score - a.h.score || a.i - b.i)
    .map((x) => x.h);
}
