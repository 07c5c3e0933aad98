import { useEffect, useRef, useState } from 'react';
import type { ServiceHealth, ServiceHealthSeries } from './gateway.js';

const H = 200;
const PAD = { top: 16, right: 44, bottom: 28, left: 44 };

/** `ok · 99.7 % answered`, or what a new service shows (docs/api.md, "Service health"). */
export function healthLabel(h: ServiceHealth): string {
  if (h.status === 'new') return 'new · too few calls to judge';
  const w = h.windows['24h'].calls >= 10 ? h.windows['24h'] : h.windows['7d'];
  return `${h.status} · ${w.success_rate === null ? '—' : `${Math.floor(w.success_rate * 1000) / 10} %`} answered`;
}

/** The status as a badge (its text says it; the colour only repeats it). */
export function HealthBadge({ health }: { health: ServiceHealth }) {
  return (
    <span className={`health health-${health.status}`} data-testid="health-status" title="How it answered the paid calls the gateway relayed">
      {healthLabel(health)}
    </span>
  );
}

/** Calls per slot as bars (the answered part solid, the failed part hatched) and the median answer time as a line, with a table for screen readers. */
export function HealthChart({ series }: { series: ServiceHealthSeries }) {
  const ref = useRef<HTMLElement>(null);
  const [W, setW] = useState(640);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(([entry]) => entry && setW(Math.max(260, Math.round(entry.contentRect.width))));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const points = series.points;
  const maxCalls = Math.max(1, ...points.map((p) => p.calls));
  const maxMs = Math.max(1, ...points.map((p) => p.p50_ms ?? 0));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const slot = innerW / points.length;
  const bar = Math.max(1, Math.min(22, slot * 0.7));
  const yCalls = (v: number) => PAD.top + innerH - (v / maxCalls) * innerH;
  const yMs = (v: number) => PAD.top + innerH - (v / maxMs) * innerH;
  const label = (at: string) =>
    series.window === '24h'
      ? new Date(at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', timeZone: 'UTC' })
      : new Date(at).toLocaleDateString(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  const labelEvery = Math.ceil(points.length / Math.max(2, Math.floor(innerW / 70)));
  const line = points
    .map((p, i) => (p.p50_ms === null ? null : `${PAD.left + i * slot + slot / 2},${yMs(p.p50_ms)}`))
    .filter((x): x is string => x !== null)
    .join(' ');
  const title = series.window === '24h' ? 'Calls per hour, last 24 hours (UTC)' : 'Calls per 6 hours, last 7 days (UTC)';
  return (
    <figure className="chart" ref={ref}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="health-title health-desc" data-testid="health-chart">
        <title id="health-title">{title}</title>
        <desc id="health-desc">{`${points.reduce((n, p) => n + p.calls, 0)} calls; bars: calls (answered solid), line: median answer time`}</desc>
        <line x1={PAD.left} x2={W - PAD.right} y1={yCalls(0)} y2={yCalls(0)} className="grid-line" />
        <text x={PAD.left - 8} y={yCalls(maxCalls) + 4} textAnchor="end" className="axis">
          {maxCalls}
        </text>
        <text x={W - PAD.right + 6} y={yMs(maxMs) + 4} className="axis">{`${maxMs} ms`}</text>
        {points.map((p, i) => {
          const x = PAD.left + i * slot + (slot - bar) / 2;
          const answered = Math.round(p.calls * (p.success_rate ?? 0));
          const hAll = innerH - (yCalls(p.calls) - PAD.top);
          const hOk = innerH - (yCalls(answered) - PAD.top);
          return (
            <g key={p.at}>
              <rect x={x} y={PAD.top + innerH - hAll} width={bar} height={hAll} className="bar bar-failed">
                <title>{`${label(p.at)}: ${p.calls} calls, ${p.calls - answered} failed`}</title>
              </rect>
              <rect x={x} y={PAD.top + innerH - hOk} width={bar} height={hOk} className="bar" />
              {(points.length - 1 - i) % labelEvery === 0 ? (
                <text x={PAD.left + i * slot + slot / 2} y={H - 8} textAnchor="middle" className="axis">
                  {label(p.at)}
                </text>
              ) : null}
            </g>
          );
        })}
        {line ? <polyline points={line} className="latency-line" fill="none" /> : null}
      </svg>
      {/* The hidden box is a div: a table sizes to its content whatever its width says, and would widen the page. */}
      <div className="visually-hidden">
        <table>
          <caption>{title}</caption>
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">Calls</th>
              <th scope="col">Answered</th>
              <th scope="col">Median (ms)</th>
              <th scope="col">95th percentile (ms)</th>
            </tr>
          </thead>
          <tbody>
            {points.map((p) => (
              <tr key={p.at}>
                <td>{p.at}</td>
                <td>{p.calls}</td>
                <td>{p.success_rate === null ? '—' : `${Math.round(p.success_rate * 1000) / 10} %`}</td>
                <td>{p.p50_ms ?? '—'}</td>
                <td>{p.p95_ms ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
