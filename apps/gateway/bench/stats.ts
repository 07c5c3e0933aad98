// Figures shared by the gateway benches (calls.ts, channel-mode.ts): medians, paired ratios with their
// interval, CPU per call.

/** The middle value, or the mean of the middle two for an even count. */
export function medianOf(xs: number[]): number {
  const o = [...xs].sort((x, y) => x - y);
  const m = Math.floor(o.length / 2);
  return o.length % 2 === 1 ? o[m]! : (o[m - 1]! + o[m]!) / 2;
}

/**
 * The median of paired ratios and how far it could move by chance: a 90 % bootstrap interval (2000
 * resamples of the pairs, a fixed seed so a run prints one interval for its turns).
 */
export function pairedSummary(pairs: number[]): { ratio: number; low: number; high: number; text: string } {
  let seed = 0x2f6b_1a3d;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const resampled = Array.from({ length: 2000 }, () => medianOf(pairs.map(() => pairs[Math.floor(random() * pairs.length)]!))).sort((x, y) => x - y);
  const ratio = medianOf(pairs);
  const [low, high] = [resampled[100]!, resampled[1899]!];
  return {
    ratio,
    low,
    high,
    text: `${ratio.toFixed(3)} median of ${pairs.length} paired turns (90 % interval ${low.toFixed(3)}-${high.toFixed(3)}; pairs ${Math.min(...pairs).toFixed(2)}-${Math.max(...pairs).toFixed(2)})`,
  };
}

/** The lowest and highest of a set of calls/s. */
export const spreadOf = (xs: number[]) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;

/** CPU seconds per kind of process between two readings. */
export function cpuDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));
}

export function addInto(total: Map<string, number>, more: Map<string, number>) {
  for (const [k, v] of more) total.set(k, (total.get(k) ?? 0) + v);
}

export function cpuPerCall(used: Map<string, number>, calls: number): string {
  if (used.size === 0 || calls === 0) return 'n/a (no /proc)';
  return [...used]
    .map(([k, v]) => ({ k, ms: (v * 1000) / calls }))
    .filter(({ ms }) => ms >= 0.005)
    .sort((a, b) => b.ms - a.ms)
    .map(({ k, ms }) => `${k} ${ms.toFixed(3)}`)
    .join(', ');
}
