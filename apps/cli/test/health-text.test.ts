import { expect, it } from 'vitest';
import { healthText } from '../src/commands/catalog.js';

const w = (calls: number, success_rate: number | null, p50_ms: number | null) => ({ calls, success_rate, p50_ms, p95_ms: p50_ms });

it("says a service's health in a few words: status, answered share and median over the judged window", () => {
  expect(healthText(undefined)).toBe('new');
  expect(healthText({ status: 'new', windows: { '1h': w(0, null, null), '24h': w(3, 1, 20), '7d': w(3, 1, 20) }, last_failure: null })).toBe('new');
  // The day has enough calls: judged on it.
  expect(healthText({ status: 'ok', windows: { '1h': w(5, 1, 30), '24h': w(400, 0.9975, 41), '7d': w(900, 0.99, 40) }, last_failure: null })).toBe(
    'ok 99.7% p50 41ms',
  );
  // Too few today: the week.
  expect(healthText({ status: 'failing', windows: { '1h': w(0, null, null), '24h': w(2, 0, 900), '7d': w(40, 0.25, 1200) }, last_failure: null })).toBe(
    'failing 25% p50 1200ms',
  );
});
