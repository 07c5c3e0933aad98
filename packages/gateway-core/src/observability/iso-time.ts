let cachedSecond = Number.NaN;
let cachedPrefix = '';

/**
 * `new Date(ms).toISOString()` for integer milliseconds (`Date.now()`), with
 * the date and time to the second formatted once per second: about 0.1 µs
 * against 1-2 µs for `toISOString`, which a call paid six times (its trace's
 * steps and its two log lines).
 */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    // Everything but the milliseconds and the `Z`: `2026-11-23T18:52:02.`
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    cachedSecond = second;
  }
  const milli = ms - second * 1000;
  return `${cachedPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}
