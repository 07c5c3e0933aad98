/**
 * Per-IP token bucket for the unpaid quote path: `perMinute` tokens, refilled
 * continuously. Idle full buckets are dropped so memory follows the number of
 * recently active IPs.
 */
export class QuoteRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number,
  ) {}

  /** Takes one token for `ip`; returns 0 when allowed, else the seconds to wait. */
  take(ip: string): number {
    const now = this.now();
    const ratePerMs = this.perMinute / 60_000;
    this.sweep(now, ratePerMs);
    const bucket = this.buckets.get(ip) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * ratePerMs);
    bucket.at = now;
    this.buckets.set(ip, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerMs / 1000));
  }

  private sweep(now: number, ratePerMs: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [ip, b] of this.buckets) if (b.tokens + (now - b.at) * ratePerMs >= this.perMinute) this.buckets.delete(ip);
  }
}
