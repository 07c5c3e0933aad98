import type { TraceStep } from './call-types.js';
import type { Clock } from './clock.js';
import { isoTime } from './observability/iso-time.js';

/** The trace steps of a credit call, in order (`void_hold` when a dynamic price re-holds; docs/api.md lists them). */
export const CALL_STEPS = ['resolve_service', 'hold_credits', 'call_service', 'void_hold', 'post_payment', 'refund'] as const;
export type CallStep = (typeof CALL_STEPS)[number];

/** A call's payment timeline: each step's name, outcome, start (by the gateway's clock) and duration, as the trace shows them. */
export class Timeline {
  readonly steps: TraceStep[] = [];
  constructor(private readonly now: Clock) {}
  async step<T>(name: CallStep, fn: () => Promise<T>, detail?: (value: T) => Record<string, unknown>): Promise<T> {
    const started = this.now();
    const t0 = performance.now();
    try {
      const value = await fn();
      const step: TraceStep = { name, status: 'ok', startedAt: isoTime(started), durationMs: round(performance.now() - t0) };
      if (detail) step.detail = detail(value);
      this.steps.push(step);
      return value;
    } catch (err) {
      this.steps.push({
        name,
        status: 'failed',
        startedAt: isoTime(started),
        durationMs: round(performance.now() - t0),
        detail: { error: (err as Error).message },
      });
      throw err;
    }
  }
}

/** Milliseconds to two decimals. */
export const round = (ms: number) => Math.round(ms * 100) / 100;
