import { expect, it } from 'vitest';
import { budgetFor, currentPeriod, parsePolicy, policyView } from '../src/auth/policy.js';

// The periods of spending policies, in UTC (docs/api.md, "Spending policies").
const at = (iso: string) => Date.parse(iso);

it('names each period and when it resets: the UTC day, the week from Monday, the month, or never', () => {
  // A Sunday evening: the week began on Monday the 23rd and resets on Monday the 30th.
  const sunday = at('2026-11-29T23:59:59.999Z');
  expect(currentPeriod('day', sunday)).toEqual({ name: 'day:2026-11-29', resetsAt: new Date('2026-11-30T00:00:00.000Z') });
  expect(currentPeriod('week', sunday)).toEqual({ name: 'week:2026-11-23', resetsAt: new Date('2026-11-30T00:00:00.000Z') });
  expect(currentPeriod('week', at('2026-11-30T00:00:00.000Z'))).toEqual({ name: 'week:2026-11-30', resetsAt: new Date('2026-12-07T00:00:00.000Z') });
  expect(currentPeriod('month', at('2026-12-31T12:00:00Z'))).toEqual({ name: 'month:2026-12', resetsAt: new Date('2027-01-01T00:00:00.000Z') });
  expect(currentPeriod('total', sunday)).toEqual({ name: 'total', resetsAt: null });
});

it('reports what is left, never below zero, and no budget without a limit', () => {
  const policy = parsePolicy({ limit_usd: '0.5', limit_period: 'month' })!;
  expect(policy).toEqual({ limit: 5_000_000n, period: 'month', allowedServices: null, maxCall: null });
  expect(budgetFor('key_1', policy, at('2026-11-26T10:00:00Z'))).toEqual({ credential: 'key_1', period: 'month:2026-11', limit: 5_000_000n });
  // The period's name is kept for its UTC day (a call's hold asks for it): the month's last millisecond and the next month's first.
  expect(budgetFor('key_1', policy, at('2026-11-30T23:59:59.999Z'))?.period).toBe('month:2026-11');
  expect(budgetFor('key_1', policy, at('2026-12-01T00:00:00.000Z'))?.period).toBe('month:2026-12');
  expect(budgetFor('key_1', policy, at('2026-11-30T23:59:59.999Z'))?.period).toBe('month:2026-11');
  expect(policyView(policy, { spent: 4_000_000n, held: 2_000_000n }, at('2026-11-26T10:00:00Z'))).toMatchObject({
    spent_usd: 0.6,
    remaining_usd: 0,
    resets_at: '2026-12-01T00:00:00.000Z',
  });
  const servicesOnly = parsePolicy({ allowed_services: ['echo', 'echo'] })!;
  expect(servicesOnly).toEqual({ limit: null, period: null, allowedServices: ['echo'], maxCall: null });
  expect(budgetFor('key_2', servicesOnly, Date.now())).toBeUndefined();
  // Clearing every field leaves no policy at all.
  expect(parsePolicy({ allowed_services: null }, servicesOnly)).toBeUndefined();
});
