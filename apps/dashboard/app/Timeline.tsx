import type { TraceStep } from './gateway.js';
import { describeDetail } from './format.js';
import { Badge } from './ui.js';

const LABELS: Record<string, string> = {
  resolve_service: 'Resolve service',
  hold_credits: 'Hold credits',
  call_service: 'Call service',
  void_hold: 'Void hold (repricing)',
  post_payment: 'Post payment',
  refund: 'Refund',
  deploy_escrow: 'Deploy escrow',
  fund_escrow: 'Fund escrow',
  release: 'Release escrow',
};

function ms(n: number): string {
  return n < 1 ? '<1 ms' : n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(2)} s`;
}

/** The payment trace as a timeline: one row per step, with a bar placed at its start and sized by its duration. */
export function Timeline({ steps }: { steps: TraceStep[] }) {
  if (steps.length === 0) return null;
  const starts = steps.map((s) => new Date(s.startedAt).getTime());
  const t0 = Math.min(...starts.filter(Number.isFinite));
  const end = Math.max(...steps.map((s, i) => (starts[i] ?? t0) - t0 + Math.max(0, s.durationMs)), 1);
  return (
    <ol className="timeline" aria-label="Payment trace" data-testid="trace">
      {steps.map((s, i) => {
        const offset = Number.isFinite(starts[i]) ? (starts[i]! - t0) / end : 0;
        const width = Math.max(0.01, s.durationMs / end);
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: a trace is drawn whole and never reordered, and a step's name can repeat
          <li key={`${s.name}-${i}`} className={`step step-${s.status}`}>
            <span className="step-dot" aria-hidden="true" />
            <div className="step-main">
              <div className="step-head">
                <span className="step-name">{LABELS[s.name] ?? s.name}</span>
                <Badge status={s.status} />
                <span className="step-time">{ms(s.durationMs)}</span>
              </div>
              <div className="step-track" aria-hidden="true">
                <div
                  className="step-bar"
                  style={{ marginLeft: `${(offset * 100).toFixed(2)}%`, width: `${Math.min(100 - offset * 100, width * 100).toFixed(2)}%` }}
                />
              </div>
              {s.detail !== undefined && s.detail !== null ? <div className="step-detail small-text muted">{describeDetail(s.detail)}</div> : null}
            </div>
          </li>
        );
      })}
    </ol>
  );
}
